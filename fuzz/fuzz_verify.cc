// libFuzzer target: any bytes (protobuf or JSON, told apart as `ctp verify`
// does) loaded and verified; every diagnostic must name a place that exists.
#include "fuzz/fuzz_support.h"
#include "program_ir/program_io.h"
#include "program_ir/verify.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace ctp;
  Program program;
  try {
    program = parse_program(fuzz::as_view(data, size), "fuzz.program");
  } catch (const Error&) {
    return 0;
  }
  for (const Diagnostic& d : verify_program(program)) {
    const int64_t block = d.place.block;
    fuzz::require(block >= 0 && static_cast<std::size_t>(block) <= program.blocks.size(),
                  "diagnostic names a block that does not exist");
    fuzz::require(!d.to_string().empty(), "empty diagnostic");
  }
  return 0;
}
