// A program's global block as one line per op, "type in,in -> out,out": the
// golden form of the tests that check what a pass wrote op by op.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "program_ir/program.h"

namespace ctp::test {

inline std::vector<std::string> op_lines(const Program& program) {
  std::vector<std::string> lines;
  for (const Op& op : program.global_block().ops()) {
    std::string line = op.type;
    const char* sep = " ";
    for (const std::string& arg : op.input_arg_names()) line += std::exchange(sep, ",") + arg;
    line += " ->";
    sep = " ";
    for (const std::string& arg : op.output_arg_names()) line += std::exchange(sep, ",") + arg;
    lines.push_back(line);
  }
  return lines;
}

}  // namespace ctp::test
