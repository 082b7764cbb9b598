// ctp_sample_models: writes a real model (ResNet or BERT with a
// token-classification head) as Paddle startup and main programs, forward
// only, in Paddle's op vocabulary and naming (samples/real_models.h):
//
//   ctp_sample_models resnet --depth 50 -o resnet50/      # resnet50/startup.pb, main.pb
//   ctp_sample_models bert --layers 2 --hidden 128 --heads 2 --seq-len 64 -o bert/ --emit json
//   ctp run --startup resnet50/startup.pb --main resnet50/main.pb --batch 8   # forward, the loss
//
// Both files are written together or not at all. Bad options exit 2, a
// failure 1.
#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>

#include "program_ir/atomic_file.h"
#include "program_ir/error.h"
#include "program_ir/program_io.h"
#include "samples/real_models.h"

namespace {

struct Output {
  std::string dir;
  std::string emit = "proto";
};

void write(const ctp::samples::ModelPrograms& model, const Output& out) {
  const bool json = out.emit == "json";
  const ctp::ProgramFormat format = json ? ctp::ProgramFormat::Json : ctp::ProgramFormat::Proto;
  const std::string extension = json ? ".json" : ".pb";
  const std::filesystem::path dir(out.dir);
  ctp::OutputSet output(out.dir);
  output.make_directories(out.dir);
  output.stage((dir / ("startup" + extension)).string(),
               ctp::serialize_program(model.startup, format));
  output.stage((dir / ("main" + extension)).string(), ctp::serialize_program(model.main, format));
  output.commit();
  std::string inputs;
  for (const std::string& name : model.inputs) inputs += " " + name;
  std::cout << "wrote " << (dir / ("startup" + extension)).string() << " ("
            << model.startup.global_block().op_count() << " ops) and "
            << (dir / ("main" + extension)).string() << " ("
            << model.main.global_block().op_count() << " ops, " << model.parameters.size()
            << " parameters); inputs:" << inputs << ", label " << model.label << ", loss "
            << model.loss << "\n";
}

void add_output_options(CLI::App* cmd, Output& out) {
  cmd->add_option("-o,--out", out.dir, "Directory for startup and main")->required();
  cmd->add_option("--emit", out.emit, "proto (Paddle's framework.proto) or json")
      ->check(CLI::IsMember({"proto", "json"}));
}

}  // namespace

int main(int argc, char** argv) {
  ctp::remove_staged_outputs_on_signals();
  CLI::App app{"Writes ResNet or BERT as Paddle static programs (forward, with a loss)"};
  app.require_subcommand(1);
  Output out;
  ctp::samples::ResNetConfig resnet;
  CLI::App* r = app.add_subcommand("resnet", "ResNet classifier on NCHW images");
  r->add_option("--depth", resnet.depth, "18, 34, 50, 101 or 152")->capture_default_str();
  r->add_option("--width", resnet.width, "Channels of the stem")->capture_default_str();
  r->add_option("--image-size", resnet.image_size, "Height and width")->capture_default_str();
  r->add_option("--classes", resnet.classes, "Classes")->capture_default_str();
  r->add_option("--init-seed", resnet.init_seed, "Initializers' seed (0: the run's)");
  add_output_options(r, out);
  ctp::samples::BertConfig bert;
  CLI::App* b = app.add_subcommand("bert", "BERT encoder with a token-classification head");
  b->add_option("--layers", bert.layers, "Encoder layers")->capture_default_str();
  b->add_option("--hidden", bert.hidden, "Hidden size")->capture_default_str();
  b->add_option("--heads", bert.heads, "Attention heads")->capture_default_str();
  b->add_option("--seq-len", bert.seq_len, "Tokens per sequence")->capture_default_str();
  b->add_option("--vocab", bert.vocab, "Vocabulary size")->capture_default_str();
  b->add_option("--max-position", bert.max_position, "Position embeddings")
      ->capture_default_str();
  b->add_option("--classes", bert.classes, "Token classes")->capture_default_str();
  b->add_option("--dropout", bert.dropout, "Hidden and attention dropout")->capture_default_str();
  b->add_option_function<std::string>(
       "--attention",
       [&bert](const std::string& name) {
         bert.attention = ctp::samples::bert_attention_from_string(name);
       },
       "Self-attention op by op (ops) or as one flash_attn op (flash; dropout 0 only)")
      ->check(CLI::IsMember({"ops", "flash"}))
      ->default_str("ops");
  b->add_option("--init-seed", bert.init_seed, "Initializers' seed (0: the run's)");
  add_output_options(b, out);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    write(r->parsed() ? ctp::samples::build_resnet(resnet) : ctp::samples::build_bert(bert), out);
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
