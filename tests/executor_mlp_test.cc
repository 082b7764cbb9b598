// An MLP classifier (mul, elementwise_add, relu, softmax_with_cross_entropy,
// mean, their grads and an optimizer) trained in one process: the loss must
// fall clearly within 50 steps with each optimizer, and in mixed precision
// (16-bit layers and gradients on FP32 parameters) as well.
#include "program_ir/op_role.h"
#include "samples/cluster_data.h"
#include "samples/mlp_model.h"
#include "tests/kernels_test_util.h"
#include "transpilers/transpile.h"

namespace ctp {
namespace {

using test::cpu_scalar;
using test::element;

struct TrainResult {
  std::vector<double> losses;
  double accuracy = 0;
};

TrainResult train(samples::OptimizerKind optimizer, float learning_rate, DataType dtype,
                  std::optional<DataType> amp = std::nullopt, float loss_scale = 1.0f) {
  samples::MlpConfig config;
  config.amp = amp;
  config.loss_scale = loss_scale;
  config.input_dim = 4;
  config.hidden = {16};
  config.classes = 3;
  config.dtype = dtype;
  config.optimizer = optimizer;
  config.learning_rate = learning_rate;
  config.init_seed = 5;
  const samples::MlpPrograms programs = samples::build_mlp(config);
  const samples::ClusterData data = samples::make_clusters(600, 4, 3, 11, 2.0, 1.0);

  Scope scope;
  Executor(programs.startup, RunServices{}).run(scope);
  Executor executor(programs.main, RunServices{});
  TrainResult result;
  for (int step = 0; step < 50; ++step) {
    samples::Batch batch = samples::shard_batch(data, step, 32, 0, 1, dtype);
    scope.var(programs.input) = batch.features;
    scope.var(programs.label) = batch.labels;
    executor.run(scope);
    result.losses.push_back(cpu_scalar(scope.get(programs.loss)));
  }
  Executor eval(programs.eval, RunServices{});
  samples::Batch all = samples::rows(data, 0, data.size(), dtype);
  scope.var(programs.input) = all.features;
  scope.var(programs.label) = all.labels;
  eval.run(scope);
  const Tensor& p = scope.get(programs.probabilities);
  int64_t correct = 0;
  for (int64_t i = 0; i < data.size(); ++i) {
    int64_t best = 0;
    for (int64_t c = 1; c < 3; ++c)
      if (element(p, i * 3 + c) > element(p, i * 3 + best)) best = c;
    correct += best == data.labels[static_cast<std::size_t>(i)];
  }
  result.accuracy = static_cast<double>(correct) / static_cast<double>(data.size());
  return result;
}

double average(const std::vector<double>& v, std::size_t begin, std::size_t end) {
  double s = 0;
  for (std::size_t i = begin; i < end; ++i) s += v[i];
  return s / static_cast<double>(end - begin);
}

void expect_learns(const TrainResult& r) {
  ASSERT_EQ(r.losses.size(), 50u);
  const double first = average(r.losses, 0, 5), last = average(r.losses, 45, 50);
  EXPECT_LT(last, 0.5 * first) << "loss went from " << first << " to " << last;
  EXPECT_GT(r.accuracy, 0.8);  // chance is 1/3
}

TEST(ExecutorMlp, SgdLossFalls) { expect_learns(train(samples::OptimizerKind::SGD, 0.1f, DataType::FP32)); }
TEST(ExecutorMlp, MomentumLossFalls) {
  expect_learns(train(samples::OptimizerKind::Momentum, 0.05f, DataType::FP32));
}
TEST(ExecutorMlp, AdamLossFalls) {
  expect_learns(train(samples::OptimizerKind::Adam, 0.01f, DataType::FP32));
}
TEST(ExecutorMlp, Fp64TrainsToo) { expect_learns(train(samples::OptimizerKind::SGD, 0.1f, DataType::FP64)); }

TEST(ExecutorMlp, ProgramsCarryRolesAndRoleVars) {
  const samples::MlpPrograms p = samples::build_mlp({});
  int loss_ops = 0, loss_grad_ops = 0, optimizer_ops = 0;
  std::vector<std::string> grads_with_role_var;
  for (const Op& op : p.main.global_block().ops()) {
    const int64_t role = get_op_role(op).value_or(-1);
    loss_ops += role == (op_role::kForward | op_role::kLoss);
    loss_grad_ops += role == (op_role::kBackward | op_role::kLoss);
    if (is_optimizer_op(op)) {
      ++optimizer_ops;
      EXPECT_EQ(param_grad_pairs(op).size(), 1u);
    }
    if (is_backward_op(op))
      for (const ParamGrad& pg : param_grad_pairs(op)) grads_with_role_var.push_back(pg.grad);
  }
  EXPECT_EQ(loss_ops, 1);
  EXPECT_EQ(loss_grad_ops, 1);
  EXPECT_EQ(optimizer_ops, 4);
  EXPECT_EQ(grads_with_role_var, (std::vector<std::string>{"fc_1.b_0@GRAD", "fc_1.w_0@GRAD",
                                                          "fc_0.b_0@GRAD", "fc_0.w_0@GRAD"}));
  EXPECT_EQ(p.parameters, (std::vector<std::string>{"fc_0.w_0", "fc_0.b_0", "fc_1.w_0", "fc_1.b_0"}));
  for (const std::string& param : p.parameters) {
    EXPECT_TRUE(p.startup.global_block().var(param).persistable);
    EXPECT_TRUE(p.main.global_block().var(param).is_parameter);
  }
}

TEST(ExecutorMlp, MixedPrecisionLearnsAndTracksFp32) {
  for (auto optimizer : {samples::OptimizerKind::SGD, samples::OptimizerKind::Adam}) {
    const float lr = optimizer == samples::OptimizerKind::SGD ? 0.1f : 0.01f;
    const TrainResult fp32 = train(optimizer, lr, DataType::FP32);
    for (auto [amp, loss_scale] : {std::pair{DataType::BF16, 1.0f}, {DataType::FP16, 1024.0f}}) {
      SCOPED_TRACE(std::string(to_string(amp)) + " " + samples::to_string(optimizer));
      const TrainResult mixed = train(optimizer, lr, DataType::FP32, amp, loss_scale);
      expect_learns(mixed);
      // 16-bit rounding moves every step a little; the path stays FP32's.
      const double want = average(fp32.losses, 40, 50), got = average(mixed.losses, 40, 50);
      EXPECT_NEAR(got, want, 0.1 * want + 0.01);
      EXPECT_NEAR(mixed.accuracy, fp32.accuracy, 0.03);
    }
  }
}

std::vector<const Op*> ops_of_type(const Program& program, const std::string& type) {
  std::vector<const Op*> found;
  for (const Op& op : program.global_block().ops())
    if (op.type == type) found.push_back(&op);
  return found;
}

TEST(ExecutorMlp, MixedPrecisionKeepsFp32ParametersAndAllReduces16BitGradients) {
  samples::MlpConfig config;
  config.amp = DataType::BF16;
  config.loss_scale = 8;
  samples::MlpPrograms p = samples::build_mlp(config);
  const Block& main = p.main.global_block();
  for (const std::string& param : p.parameters) {
    EXPECT_EQ(main.var(param).dtype, DataType::FP32) << param;
    EXPECT_EQ(main.var(param + "@GRAD").dtype, DataType::FP32) << param;
    EXPECT_EQ(main.var(param + ".cast_bf16").dtype, DataType::BF16) << param;
  }
  EXPECT_EQ(main.var(p.loss).dtype, DataType::FP32);
  EXPECT_EQ(main.var(p.probabilities).dtype, DataType::FP32);
  for (const Op& op : main.ops())
    if (is_backward_op(op))
      for (const ParamGrad& pg : param_grad_pairs(op)) {
        EXPECT_EQ(pg.grad, pg.param + ".cast_bf16@GRAD");
        EXPECT_EQ(main.var(pg.grad).dtype, DataType::BF16) << pg.grad;
      }
  // The loss gradient starts at the scale; each FP32 gradient is cast from
  // the 16-bit one and divided by the scale before its optimizer op.
  const std::vector<const Op*> fills = ops_of_type(p.main, "fill_constant");
  ASSERT_EQ(fills.size(), 1u);
  EXPECT_EQ(fills[0]->attr("value")->get<float>(), 8.0f);
  const std::vector<const Op*> scales = ops_of_type(p.main, "scale");
  ASSERT_EQ(scales.size(), p.parameters.size());
  for (const Op* s : scales) {
    EXPECT_EQ(s->attr("scale")->get<float>(), 0.125f);
    EXPECT_TRUE(is_optimizer_op(*s));
  }

  TranspileOptions options;
  options.collective.endpoints = {"127.0.0.1:6170", "127.0.0.1:6171"};
  options.collective.rank = 1;
  options.collective.current_endpoint = options.collective.endpoints[1];
  transpile(TranspileMode::kGradAllReduce, options, p.startup, p.main);
  const Block& rewritten = p.main.global_block();
  const std::vector<const Op*> allreduces = ops_of_type(p.main, "c_allreduce_sum");
  ASSERT_EQ(allreduces.size(), p.parameters.size());
  for (const Op* op : allreduces)
    EXPECT_EQ(rewritten.var(op->input("X")->at(0)).dtype, DataType::BF16);
  // Casting back reads all-reduced values: every cast to FP32 of a gradient
  // comes after the wait for the communication stream.
  bool synced = false;
  int casts_back = 0;
  for (const Op& op : rewritten.ops()) {
    synced = synced || op.type == "c_sync_comm_stream";
    if (op.type == "cast" && op.output("Out")->at(0).find("@GRAD") != std::string::npos &&
        rewritten.var(op.output("Out")->at(0)).dtype == DataType::FP32 &&
        rewritten.var(op.input("X")->at(0)).dtype == DataType::BF16) {
      EXPECT_TRUE(synced) << "cast of " << op.input("X")->at(0) << " before the sync";
      ++casts_back;
    }
  }
  EXPECT_EQ(casts_back, static_cast<int>(p.parameters.size()));
}

void expect_error(const samples::MlpConfig& config, const std::string& fragment) {
  try {
    samples::build_mlp(config);
    ADD_FAILURE() << "no error; expected one containing: " << fragment;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(ExecutorMlp, MixedPrecisionOptionsAreChecked) {
  samples::MlpConfig config;
  config.amp = DataType::FP16;
  config.dtype = DataType::FP64;
  expect_error(config, "FP16 or BF16 on FP32 parameters");
  config.dtype = DataType::FP32;
  config.amp = DataType::INT32;
  expect_error(config, "not in INT32");
  config.amp = DataType::FP16;
  config.loss_scale = 0;
  expect_error(config, "loss scale must be a positive");
}

}  // namespace
}  // namespace ctp
