// A downstream program built against an installed ctp: it builds a program
// and runs it on the CPU, then checks that, as a CPU-only embedding, it has
// loaded neither CUDA, cuBLAS, NCCL nor ctp's CUDA backend (the runtime loads
// that library only when a run asks for a GPU).
#include <fstream>
#include <iostream>
#include <regex>
#include <string>

#include "executor/executor.h"
#include "program_ir/builder.h"

int main() {
  ctp::ProgramBuilder pb;
  pb.param("w", {4, 4});
  pb.op("scale").in("X", "w").out("Out", "w").attr("scale", 0.5f);
  ctp::Program p = pb.build();
  std::cout << "consumer built a program with " << p.op_count() << " op(s)\n";
  if (p.op_count() != 1) return 1;

  ctp::Scope scope;
  ctp::Tensor w(ctp::DataType::FP32, {4, 4});
  for (int i = 0; i < 16; ++i) w.data<float>()[i] = 2.0f;
  scope.var("w") = w;
  ctp::Executor(p, ctp::RunServices{}).run(scope);
  const float result = scope.get("w").data<float>()[15];
  std::cout << "consumer ran it on the CPU: w[3][3] = " << result << "\n";
  if (result != 1.0f) return 1;

  std::ifstream maps("/proc/self/maps");
  const std::regex cuda("cuda|cublas|nccl");
  int mapped = 0;
  for (std::string line; std::getline(maps, line);)
    if (std::regex_search(line, cuda)) {
      std::cout << "a CPU-only embedding mapped: " << line << "\n";
      ++mapped;
    }
  return mapped ? 1 : 0;
}
