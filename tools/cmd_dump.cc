// `ctp dump FILE [--emit json|text|proto|dot] [-o OUT]`: converts a program
// between its serializations, or shows it as text or Graphviz.
#include <iostream>

#include "program_ir/atomic_file.h"
#include "program_ir/dot_io.h"
#include "program_ir/program_io.h"
#include "program_ir/text_io.h"
#include "tools/command.h"
#include "tools/keep_until_exit.h"

namespace ctp::cli {
namespace {

struct DumpArgs {
  std::string input;
  std::string emit = "json";
  std::string output;
};

std::string render(const Program& program, const std::string& emit) {
  if (emit == "json") return serialize_program(program, ProgramFormat::Json);
  if (emit == "proto") return serialize_program(program, ProgramFormat::Proto);
  if (emit == "text") return program_to_text(program);
  return program_to_dot(program);
}

const CommandRegistrar kDump([](CLI::App& app) {
  auto args = std::make_shared<DumpArgs>();
  CLI::App* cmd = app.add_subcommand(
      "dump", "Read a program (JSON or protobuf, detected from content) and write it as "
              "JSON, text, protobuf or Graphviz");
  cmd->add_option("file", args->input, "program file (framework.proto bytes or JSON)")
      ->required();
  cmd->add_option("--emit", args->emit, "output form")
      ->check(CLI::IsMember({"json", "text", "proto", "dot"}))
      ->default_str("json");
  cmd->add_option("-o,--output", args->output, "output file (default: standard output)");
  cmd->callback([args] {
    Program program = load_program_file(args->input);
    std::string out = render(program, args->emit);
    if (args->output.empty()) {
      std::cout << out;
      check_written(std::cout, "standard output");
    } else {
      write_file_atomically(args->output, out);
    }
    keep_until_exit(std::move(program));
  });
});

}  // namespace
}  // namespace ctp::cli
