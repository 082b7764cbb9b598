#include <iostream>

#include "program_ir/builder.h"

int main() {
  ctp::ProgramBuilder pb;
  pb.param("w", {4, 4});
  pb.op("scale").in("X", "w").out("Out", "w").attr("scale", 0.5f);
  ctp::Program p = pb.build();
  std::cout << "consumer built a program with " << p.op_count() << " op(s)\n";
  return p.op_count() == 1 ? 0 : 1;
}
