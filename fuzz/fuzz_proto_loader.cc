// libFuzzer target: framework.proto bytes into the protobuf loader. Whatever
// loads must round-trip (fuzz_support.h), read the same with the bytes kept
// (as load_program_file reads), pack op by op as a rewrite's new ops are,
// and render as text and Graphviz.
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace ctp;
  Program program;
  try {
    program = parse_program_proto(fuzz::as_view(data, size), "fuzz.pb");
  } catch (const Error&) {
    return 0;
  }
  fuzz::check_round_trips(program);
  fuzz::check_owned_read(fuzz::as_view(data, size), program);
  fuzz::check_packed_ops(program);
  fuzz::render_everything(program);
  return 0;
}
