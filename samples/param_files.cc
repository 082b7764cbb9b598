#include "samples/param_files.h"

#include <filesystem>

#include "executor/runtime/npy.h"
#include "program_ir/atomic_file.h"
#include "program_ir/error.h"

namespace ctp::samples {
namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

}  // namespace

void save_parameters(const std::string& dir, const std::vector<std::string>& names,
                     DeviceRuntime& runtime, Scope& scope, CommunicatorManager* comms) {
  const std::filesystem::path root(dir);
  OutputSet output(dir);
  output.make_directories(dir);
  for (const std::string& name : names)
    output.stage((root / (name + ".npy")).string(),
                 tensor_to_npy(runtime.to_host(scope.get(name), comms)));
  output.commit();
}

void load_parameters(const std::string& dir, const std::vector<std::string>& names,
                     DeviceRuntime& runtime, Scope& scope) {
  std::vector<Tensor> values;
  for (const std::string& name : names) {
    const std::string path = (std::filesystem::path(dir) / (name + ".npy")).string();
    if (!std::filesystem::is_regular_file(path))
      throw Error("--init-params: " + path + " is missing (every trainable parameter needs a "
                  "file; " + std::to_string(names.size()) + " in this model)");
    Tensor value;
    try {
      value = read_npy_file(path);
    } catch (const Error& e) {
      throw Error("--init-params: " + path + ": " + e.what());
    }
    const Tensor& var = scope.get(name);
    if (value.dtype() != var.dtype() || value.shape() != var.shape())
      throw Error("--init-params: " + path + " holds " + std::string(to_string(value.dtype())) +
                  " " + shape_text(value.shape()) + ", but parameter '" + name + "' is " +
                  std::string(to_string(var.dtype())) + " " + shape_text(var.shape()));
    values.push_back(std::move(value));
  }
  for (std::size_t i = 0; i < names.size(); ++i) runtime.bind(scope, names[i], values[i]);
}

}  // namespace ctp::samples
