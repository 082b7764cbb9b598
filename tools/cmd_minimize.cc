// `ctp minimize` (alias `ctp backward`): turns a forward program into a
// training program, as Paddle's Optimizer.minimize(loss) does: the backward
// (transpilers/append_backward.h), then one update op per parameter with its
// state initialised in startup (transpilers/append_optimizer.h). Named after
// minimize because it does both halves; `backward` is kept as an alias for
// those who look for Paddle's append_backward. With --amp, the forward is
// first rewritten for mixed precision (transpilers/amp_rewrite.h); with
// --amp fp16 the loss is also scaled, dynamically by default, as Paddle's
// static AMP decorator does (transpilers/loss_scaling.h).
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "program_ir/atomic_file.h"
#include "program_ir/error.h"
#include "program_ir/program_io.h"
#include "program_ir/text_io.h"
#include "tools/command.h"
#include "tools/loss_scaling_flags.h"
#include "transpilers/minimize.h"

namespace ctp::cli {
namespace {

struct MinimizeArgs {
  std::string loss;
  std::string optimizer = "sgd";
  float learning_rate = 0.001f;
  std::optional<float> momentum, epsilon, weight_decay;
  bool nesterov = false;
  float beta1 = 0.9f, beta2 = 0.999f, rho = 0.95f;
  bool centered = false;
  std::vector<std::string> no_grad;
  std::string startup, main, out_dir;
  std::string emit = "proto";
  std::string amp;  // "", "bf16" or "fp16"
  std::vector<std::string> amp_white, amp_black;
  LossScalingFlags scaling;
};

std::optional<AmpOptions> amp_options(const MinimizeArgs& a) {
  std::optional<LossScalingOptions> scaling;
  try {
    scaling = resolve_loss_scaling(a.scaling, a.amp);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  if (a.amp.empty()) {
    if (!a.amp_white.empty() || !a.amp_black.empty())
      throw UsageError("--amp-white-list and --amp-black-list need --amp");
    return std::nullopt;
  }
  AmpOptions o;
  if (a.amp == "bf16") {
    o.dtype = DataType::BF16;
  } else if (a.amp == "fp16") {
    o.dtype = DataType::FP16;
  } else {
    throw UsageError("--amp must be bf16 or fp16, not '" + a.amp + "'");
  }
  o.custom_white_list = a.amp_white;
  o.custom_black_list = a.amp_black;
  o.loss_scaling = scaling;
  return o;
}

OptimizerOptions optimizer_options(const MinimizeArgs& a) {
  const std::optional<OptimizerType> type = optimizer_type_from_string(a.optimizer);
  if (!type)
    throw UsageError("unknown --optimizer '" + a.optimizer + "' (expected " +
                     optimizer_type_names() + ")");
  OptimizerOptions o;
  o.type = *type;
  o.learning_rate = a.learning_rate;
  o.momentum = a.momentum;
  o.use_nesterov = a.nesterov;
  o.beta1 = a.beta1;
  o.beta2 = a.beta2;
  o.epsilon = a.epsilon;
  o.weight_decay = a.weight_decay;
  o.rho = a.rho;
  o.centered = a.centered;
  return o;
}

std::string render(const Program& program, const std::string& emit) {
  if (emit == "json") return serialize_program(program, ProgramFormat::Json);
  if (emit == "text") return program_to_text(program);
  return serialize_program(program, ProgramFormat::Proto);
}

void run_minimize(const MinimizeArgs& a) {
  const OptimizerOptions options = optimizer_options(a);
  const std::optional<AmpOptions> amp = amp_options(a);
  if (a.emit != "proto" && a.emit != "json" && a.emit != "text")
    throw UsageError("--emit must be proto, json or text, not '" + a.emit + "'");
  Program startup = load_program_file(a.startup);
  Program main = load_program_file(a.main);
  MinimizeResult result;
  try {
    result = minimize(startup, main,
                      MinimizeOptions{.loss = a.loss, .no_grad_vars = a.no_grad,
                                      .optimizer = options, .amp = amp});
  } catch (Error& e) {
    e.locate(SourceLocation{.source = a.main});
    throw;
  }
  // Paddle leaves such a parameter out of params_grads without a word; it
  // is kept (and not updated), but said, since it is most often a wrong --loss.
  const BackwardResult& backward = result.backward;
  for (const std::string& param : backward.unreached_parameters)
    std::cerr << "ctp minimize: warning: parameter '" << param << "' has no path to the loss '"
              << a.loss << "': it gets no gradient and is not updated\n";
  if (amp)
    std::cerr << "ctp minimize: --amp " << a.amp << ": " << result.amp.low_precision_ops
              << " op(s) compute in " << a.amp << ", " << result.amp.casts << " cast(s) inserted\n";
  if (amp && amp->loss_scaling)
    std::cerr << "ctp minimize: "
              << (amp->loss_scaling->use_dynamic_loss_scaling ? "dynamic" : "static")
              << " loss scaling from " << amp->loss_scaling->init_loss_scaling << " ("
              << result.loss_scaling->loss_scaling << "); backward of "
              << result.loss_scaling->scaled_loss << "\n";
  std::cerr << "ctp minimize: " << backward.params_grads.size() << " parameter(s) updated by "
            << to_string(options.type) << "\n";
  const std::string ext = a.emit == "proto" ? "pb" : a.emit == "json" ? "json" : "txt";
  OutputSet output(a.out_dir);
  output.make_directories(a.out_dir);
  output.stage(a.out_dir + "/startup." + ext, render(startup, a.emit));
  output.stage(a.out_dir + "/main." + ext, render(main, a.emit));
  output.commit();
}

const CommandRegistrar kRegistrar([](CLI::App& app) {
  auto args = std::make_shared<MinimizeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "minimize",
      "Turn a forward program into a training program, as Paddle's Optimizer.minimize(loss): "
      "append the backward of --loss (grad ops, @GRAD vars, op_role_var) and one --optimizer "
      "update per trainable parameter, with its state initialised in the startup program. "
      "Writes OUTDIR/startup.<ext> and OUTDIR/main.<ext>, both or neither.");
  cmd->alias("backward");
  cmd->add_option("--loss", args->loss, "the loss var (a float scalar: shape [1] or [])")
      ->required();
  cmd->add_option("--optimizer", args->optimizer,
                  "the update: " + optimizer_type_names() + " (default sgd)");
  cmd->add_option("--learning-rate", args->learning_rate, "default 0.001");
  cmd->add_option("--momentum", args->momentum, "momentum's mu (0.9), rmsprop's momentum (0)");
  cmd->add_flag("--nesterov", args->nesterov, "momentum: Nesterov's update");
  cmd->add_option("--beta1", args->beta1, "adam, adamw, lamb (0.9)");
  cmd->add_option("--beta2", args->beta2, "adam, adamw, lamb (0.999)");
  cmd->add_option("--epsilon", args->epsilon, "adam/adamw 1e-8, lamb and rmsprop 1e-6");
  cmd->add_option("--weight-decay", args->weight_decay, "adamw's coeff, lamb's (0.01)");
  cmd->add_option("--rho", args->rho, "rmsprop's decay (0.95)");
  cmd->add_flag("--centered", args->centered, "rmsprop: centered");
  cmd->add_option("--no-grad", args->no_grad,
                  "vars that get no gradient beside stop_gradient ones, comma-separated")
      ->delimiter(',');
  cmd->add_option("--amp", args->amp,
                  "mixed precision, bf16 or fp16: Paddle's static AMP O1 rewrite of the forward "
                  "before the backward (white-list ops such as conv2d and matmul_v2 compute in "
                  "16 bits, black-list ops such as softmax, losses and norms in FP32; "
                  "parameters and their gradients stay FP32; fp16 scales the loss, see "
                  "--loss-scaling)");
  cmd->add_option("--amp-white-list", args->amp_white,
                  "--amp: op types that always compute in 16 bits, comma-separated")
      ->delimiter(',');
  cmd->add_option("--amp-black-list", args->amp_black,
                  "--amp: op types that always compute in FP32, comma-separated")
      ->delimiter(',');
  add_loss_scaling_flags(*cmd, args->scaling);
  cmd->add_option("--startup", args->startup, "startup program (protobuf or JSON)")->required();
  cmd->add_option("--main", args->main, "forward main program (protobuf or JSON)")->required();
  cmd->add_option("-o,--out", args->out_dir, "output directory (created if missing)")
      ->required();
  cmd->add_option("--emit", args->emit, "output format: proto (default), json or text");
  cmd->callback([args] { run_minimize(*args); });
});

}  // namespace
}  // namespace ctp::cli
