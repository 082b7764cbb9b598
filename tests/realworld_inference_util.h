// What the tests that run ../shared/realworld's inference models share:
// which models are inference programs, which ops lack a kernel on a device,
// and the input sizes of the models whose inputs have unknown dims beside
// the batch. (Their parameters get values from random_persistables_program.)
#pragma once
#include <map>
#include <set>
#include <string>
#include <vector>

#include "executor/runtime/kernel.h"
#include "program_ir/program.h"

namespace ctp::test {

// The op types of `program` without a kernel on `device`; empty when it can run.
inline std::set<std::string> ops_without_kernel(const Program& program, DeviceKind device) {
  std::set<std::string> missing;
  for (const Block& block : program.blocks)
    for (const Op& op : block.ops())
      if (!KernelRegistry::global().find(op.type, device)) missing.insert(op.type);
  return missing;
}

inline bool is_inference(const Program& program) {
  bool feeds = false;
  for (const Op& op : program.global_block().ops()) {
    if (op.type.size() > 5 && op.type.ends_with("_grad")) return false;
    if (op.type == "feed") feeds = true;
  }
  return feeds;
}

// The sizes, beside the batch, of inputs declared with more unknown dims
// than the batch (model file -> input -> dims after the batch): what the
// model's own preprocessing gives it. The OCR recognisers read text lines
// 48 high and (PaddleOCR's default) 320 wide.
inline const std::map<std::string, std::map<std::string, std::vector<int64_t>>>&
input_sizes() {
  static const std::map<std::string, std::map<std::string, std::vector<int64_t>>> sizes = {
      {"dongkeun_customocr_inference.pdmodel", {{"x", {3, 48, 320}}}},
      {"projectaida_finnishocr_inference.pdmodel", {{"x", {3, 48, 320}}}},
  };
  return sizes;
}

// The fed inputs of `main` with an unknown dim beside the first (the batch).
inline std::set<std::string> inputs_with_unknown_sizes(const Program& main) {
  std::set<std::string> out;
  const Block& block = main.global_block();
  for (const Op& op : block.ops()) {
    const auto* fed = op.output("Out");
    if (op.type != "feed" || !fed || fed->empty()) continue;
    const Var* var = block.find_var((*fed)[0]);
    if (!var) continue;
    for (std::size_t i = 1; i < var->shape.size(); ++i)
      if (var->shape[i] < 0) out.insert(var->name);
  }
  return out;
}

// `ctp run` options giving model `file_name`'s inputs of input_sizes() with
// batch `batch` (" --input-shape x=2,3,48,320"; empty when it has none).
inline std::string input_shape_options(const std::string& file_name, int64_t batch) {
  std::string options;
  const auto model = input_sizes().find(file_name);
  if (model == input_sizes().end()) return options;
  for (const auto& [input, dims] : model->second) {
    options += " --input-shape " + input + "=" + std::to_string(batch);
    for (int64_t d : dims) options += "," + std::to_string(d);
  }
  return options;
}

}  // namespace ctp::test
