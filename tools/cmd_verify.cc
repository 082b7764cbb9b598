// `ctp verify FILE`: checks a program and reports every problem found, each
// naming its place, then what it checked and the ops it has no schema for
// (by type and count); exits 1 when there is any error (warnings alone pass).
#include <iostream>
#include <map>
#include <utility>
#include <vector>

#include "program_ir/program_io.h"
#include "program_ir/verify.h"
#include "tools/command.h"

namespace ctp::cli {
namespace {

// Errors one by one; a warning that many ops of one type share (e.g. an
// attribute ctp's schema lacks) once, with how many ops have it. In order of
// first appearance.
std::vector<std::pair<const Diagnostic*, std::size_t>> group_warnings(
    const std::vector<Diagnostic>& diagnostics) {
  std::vector<std::pair<const Diagnostic*, std::size_t>> out;
  std::map<std::string, std::size_t> seen;
  for (const Diagnostic& d : diagnostics) {
    if (d.severity == Diagnostic::Error || d.place.op < 0) {
      out.emplace_back(&d, 1);
      continue;
    }
    // Alike: the same place but for the op's position, and the same message.
    SourceLocation alike = d.place;
    alike.block = -1;
    alike.op = -1;
    auto [it, fresh] = seen.try_emplace(alike.to_string() + ": " + d.message, out.size());
    if (fresh)
      out.emplace_back(&d, 1);
    else
      ++out[it->second].second;
  }
  return out;
}

const CommandRegistrar kVerify([](CLI::App& app) {
  auto input = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "verify", "Check a program: block structure, declared vars, op_role_var pairs, and slots "
                "and attribute types against the op schemas; reports all problems, says what "
                "it checked, and counts the ops without a schema by type");
  cmd->add_option("file", *input, "program file (framework.proto bytes or JSON)")->required();
  cmd->callback([input] {
    Program program = load_program_file(*input);
    const VerifyResult result = verify(program);
    std::size_t errors = 0, warnings = 0;
    for (const Diagnostic& d : result.diagnostics)
      (d.severity == Diagnostic::Error ? errors : warnings)++;
    for (const auto& [d, alike] : group_warnings(result.diagnostics)) {
      std::cerr << *input << ": " << (d->severity == Diagnostic::Error ? "error: " : "")
                << d->to_string();
      if (alike > 1) std::cerr << " (and " << alike - 1 << " more " << d->place.op_type << " op(s) alike)";
      std::cerr << "\n";
    }
    if (!result.ops_without_schema.empty()) {
      // One line per type rather than one warning per op.
      std::cerr << *input << ": " << (result.ops - result.ops_with_schema) << " op(s) of "
                << result.ops_without_schema.size()
                << " type(s) have no schema in ctp, so their slots and attributes were not "
                   "checked (op type, count):\n";
      for (const OpTypeCount& t : result.ops_without_schema)
        std::cerr << "  " << t.type << " " << t.count << "\n";
    }
    check_written(std::cerr, "standard error");
    std::cout << *input << ": checked " << result.checked() << "\n";
    if (errors) {
      check_written(std::cout, "standard output");
      throw Error(*input + ": " + std::to_string(errors) + " error(s), " +
                  std::to_string(warnings) + " warning(s)");
    }
    std::cout << *input << ": ok (" << program.blocks.size() << " block(s), "
              << program.op_count() << " ops, " << warnings << " warning(s))\n";
    check_written(std::cout, "standard output");
  });
});

}  // namespace
}  // namespace ctp::cli
