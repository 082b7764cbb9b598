// `ctp verify FILE`: checks a program and reports every problem found, each
// naming its place; exits 1 when there is any error (warnings alone pass).
#include <iostream>

#include "program_ir/program_io.h"
#include "program_ir/verify.h"
#include "tools/command.h"

namespace ctp::cli {
namespace {

const CommandRegistrar kVerify([](CLI::App& app) {
  auto input = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "verify", "Check a program: declared vars, op_role_var pairs, block structure and "
                "attribute types; reports all problems");
  cmd->add_option("file", *input, "program file (framework.proto bytes or JSON)")->required();
  cmd->callback([input] {
    Program program = load_program_file(*input);
    std::size_t errors = 0, warnings = 0;
    for (const Diagnostic& d : verify_program(program)) {
      (d.severity == Diagnostic::Error ? errors : warnings)++;
      std::cerr << *input << ": " << (d.severity == Diagnostic::Error ? "error: " : "")
                << d.to_string() << "\n";
    }
    check_written(std::cerr, "standard error");
    if (errors)
      throw Error(*input + ": " + std::to_string(errors) + " error(s), " +
                  std::to_string(warnings) + " warning(s)");
    std::cout << *input << ": ok (" << program.blocks.size() << " block(s), "
              << program.op_count() << " ops, " << warnings << " warning(s))\n";
    check_written(std::cout, "standard output");
  });
});

}  // namespace
}  // namespace ctp::cli
