// Device backends built as shared libraries of their own, loaded the first
// time something asks for such a device. CUDA's is one: libctp_cuda holds the
// CUDA kernels, the CUDA allocator, the CUDA device backend and the NCCL
// communicator backend, and registers them all when it is loaded. A process
// that never asks for a GPU (`ctp dump`, `verify`, `transpile`, a CPU-only
// embedding) therefore maps neither it nor CUDA, cuBLAS or NCCL, and ctp
// works on a machine without the CUDA runtime.
//
// The library is looked for in the folder of the ctp library that asks
// (libctp_runtime, found with dladdr), where both the build and
// `cmake --install` put it. Which device kinds have such a library, and which
// communicator backends it provides, is fixed when ctp is configured
// (CTP_BACKEND_LIBRARIES in CMakeLists.txt).
#pragma once
#include <string>
#include <vector>

#include "executor/runtime/tensor.h"

namespace ctp {

struct BackendLibrary {
  DeviceKind kind = DeviceKind::CPU;
  std::string file;      // "libctp_cuda.so.0"
  std::string provides;  // its communicator backends, for `ctp --version`: "nccl"
  std::string path;      // where it is looked for
  bool present = false;  // whether that file exists
  bool loaded = false;   // whether this process has loaded it (or linked it)
};

// Every device backend of this build that lives in a library of its own.
std::vector<BackendLibrary> backend_libraries();

// Makes sure the backend of `kind` is loaded: nothing for the CPU (built in)
// or a backend already registered; otherwise loads its library, once per
// process (thread-safe). Throws ctp::Error naming the library's path and
// dlerror()'s reason when it cannot be loaded (missing, or its own
// dependencies such as the CUDA runtime are not installed), or saying that
// this build has no backend for `kind`.
void load_device_backend(DeviceKind kind);

// The communicator backends this process can use, by device kind, for
// `ctp --version`: "cpu: threads, gloo; cuda: nccl (loaded on demand)".
std::string backend_summary();

}  // namespace ctp
