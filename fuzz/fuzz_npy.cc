// libFuzzer target: bytes into the .npy reader (`ctp run --feed NAME=FILE`).
// Whatever loads must write back to the bytes numpy would write, and read
// back to the same tensor.
#include <cstring>

#include "executor/runtime/npy.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace ctp;
  Tensor tensor;
  try {
    tensor = tensor_from_npy(std::string(fuzz::as_view(data, size)), "fuzz.npy");
  } catch (const Error&) {
    return 0;
  }
  std::string written;
  try {
    written = tensor_to_npy(tensor);
  } catch (const Error&) {
    return 0;  // a dtype the reader takes but the writer does not
  }
  const Tensor again = tensor_from_npy(written, "fuzz-again.npy");
  fuzz::require(again.dtype() == tensor.dtype() && again.shape() == tensor.shape(),
                ".npy write/read changes the dtype or shape");
  fuzz::require(again.bytes() == tensor.bytes() &&
                    (tensor.bytes() == 0 ||
                     std::memcmp(again.raw_data(), tensor.raw_data(), tensor.bytes()) == 0),
                ".npy write/read changes the data");
  fuzz::require(tensor_to_npy(again) == written, ".npy write/read/write differs");
  return 0;
}
