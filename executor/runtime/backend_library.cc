#include "executor/runtime/backend_library.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <mutex>
#include <optional>

#include "executor/runtime/comm_backend.h"
#include "executor/runtime/device_backend.h"
#include "program_ir/error.h"

// "kind:file:provides" entries separated by ',' (CMakeLists.txt sets it from
// the backends it builds), e.g. "cuda:libctp_cuda.so.0:nccl".
#ifndef CTP_BACKEND_LIBRARIES
#define CTP_BACKEND_LIBRARIES ""
#endif

namespace ctp {
namespace {

struct Configured {
  DeviceKind kind;
  std::string file, provides;
};

std::optional<DeviceKind> kind_named(std::string_view name) {
  for (int k = 0; k < kDeviceKindCount; ++k)
    if (to_string(static_cast<DeviceKind>(k)) == name) return static_cast<DeviceKind>(k);
  return std::nullopt;
}

std::vector<std::string> split(std::string_view text, char separator) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(separator, start);
    if (end == std::string_view::npos) end = text.size();
    out.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

const std::vector<Configured>& configured() {
  static const std::vector<Configured> table = [] {
    std::vector<Configured> out;
    const std::string_view text = CTP_BACKEND_LIBRARIES;
    if (text.empty()) return out;
    for (const std::string& entry : split(text, ',')) {
      const std::vector<std::string> fields = split(entry, ':');
      const std::optional<DeviceKind> kind = fields.empty() ? std::nullopt : kind_named(fields[0]);
      if (fields.size() != 3 || !kind)
        throw Error("CTP_BACKEND_LIBRARIES entry '" + entry + "' is not kind:file:provides");
      out.push_back({*kind, fields[1], fields[2]});
    }
    return out;
  }();
  return table;
}

// The folder of the library this function is in (libctp_runtime).
std::string own_folder() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&load_device_backend), &info) == 0 || !info.dli_fname)
    return ".";
  const std::string path = info.dli_fname;
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

std::mutex& load_mutex() {
  static std::mutex mu;
  return mu;
}

bool& loaded_by_us(DeviceKind kind) {
  static bool loaded[kDeviceKindCount] = {};
  return loaded[static_cast<int>(kind)];
}

std::string upper(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::vector<BackendLibrary> backend_libraries() {
  std::vector<BackendLibrary> out;
  const std::string folder = own_folder();
  for (const Configured& c : configured()) {
    BackendLibrary lib;
    lib.kind = c.kind;
    lib.file = c.file;
    lib.provides = c.provides;
    lib.path = folder + "/" + c.file;
    struct stat st {};
    lib.present = ::stat(lib.path.c_str(), &st) == 0;
    {
      std::lock_guard<std::mutex> lock(load_mutex());
      lib.loaded = loaded_by_us(c.kind);
    }
    lib.loaded = lib.loaded || DeviceBackendRegistry::global().find(c.kind) != nullptr;
    out.push_back(std::move(lib));
  }
  return out;
}

void load_device_backend(DeviceKind kind) {
  // Built in (the CPU), or linked into this process directly (GPU tests).
  if (DeviceBackendRegistry::global().find(kind)) return;
  for (const BackendLibrary& lib : backend_libraries()) {
    if (lib.kind != kind) continue;
    std::lock_guard<std::mutex> lock(load_mutex());
    if (loaded_by_us(kind)) return;
    // The library's static initializers register its kernels, allocator and
    // backends. It stays loaded for the life of the process.
    if (!::dlopen(lib.path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      const char* why = ::dlerror();
      throw Error("cannot load the " + std::string(to_string(kind)) + " backend " + lib.path +
                  ": " + (why ? why : "unknown dlopen error") +
                  (lib.present ? "" : " (ctp's build and install put it beside libctp_runtime)"));
    }
    loaded_by_us(kind) = true;
    return;
  }
  throw Error("this build of ctp has no " + std::string(to_string(kind)) +
              " backend (configure ctp with -DCTP_WITH_" + upper(to_string(kind)) +
              "=ON where its toolkit is installed)");
}

std::string backend_summary() {
  CommBackendRegistry& comms = CommBackendRegistry::global();
  const std::vector<BackendLibrary> libraries = backend_libraries();
  std::string out;
  for (int k = 0; k < kDeviceKindCount; ++k) {
    const DeviceKind kind = static_cast<DeviceKind>(k);
    std::vector<std::string> names;
    for (int s = 0; s < kRingSpanCount; ++s) {
      std::string name = comms.name_of(kind, static_cast<RingSpan>(s));
      if (!name.empty() && std::find(names.begin(), names.end(), name) == names.end())
        names.push_back(std::move(name));
    }
    for (const BackendLibrary& lib : libraries)
      if (lib.kind == kind && names.empty())
        names.push_back(lib.provides + (lib.present ? " (loaded on demand)"
                                                    : " (missing: " + lib.path + ")"));
    if (names.empty()) continue;
    out += (out.empty() ? "" : "; ") + std::string(to_string(kind)) + ":";
    for (std::size_t i = 0; i < names.size(); ++i) out += (i ? ", " : " ") + names[i];
  }
  return out;
}

}  // namespace ctp
