// libFuzzer target: text into the JSON loader. Whatever loads must round-trip
// (fuzz_support.h) and render as text and Graphviz.
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace ctp;
  Program program;
  try {
    program = parse_program_json(fuzz::as_view(data, size), "fuzz.json");
  } catch (const Error&) {
    return 0;
  }
  fuzz::check_round_trips(program);
  fuzz::render_everything(program);
  return 0;
}
