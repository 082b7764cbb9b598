#include "ops/common/persistence_ops.h"

#include <filesystem>

#include "executor/runtime/float16.h"
#include "ops/common/paddle_tensor_file.h"
#include "program_ir/atomic_file.h"

namespace ctp {
namespace {

namespace fs = std::filesystem;

std::string file_path(const KernelContext& ctx) {
  std::string path = ctx.string_attr("file_path");
  if (path.empty()) ctx.fail("attribute file_path is empty");
  return path;
}

// FP32 values stored as FP16 (save_as_fp16, load_as_fp16); other dtypes as they are.
Tensor as_fp16_if(bool convert, const Tensor& t) {
  if (!convert || t.dtype() != DataType::FP32) return t;
  Tensor h(DataType::FP16, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i)
    h.data<uint16_t>()[i] = float16::from_float(t.data<float>()[i]);
  return h;
}

// Writes `contents` as `path`; on failure nothing is left, the directories
// it made included.
void write_whole(const KernelContext& ctx, const std::string& path, const std::string& contents) {
  const fs::path target = fs::path(path).lexically_normal();
  if (!ctx.bool_attr("overwrite") && fs::exists(target))
    ctx.fail("'" + path + "' exists and attribute overwrite is false");
  OutputSet out(existing_ancestor(target.parent_path().string()));
  if (!target.parent_path().empty()) out.make_directories(target.parent_path().string());
  out.stage(target.string(), contents);
  out.commit();
}

}  // namespace

void save_tensors(KernelContext& ctx, const std::vector<Tensor>& host_inputs) {
  if (ctx.bool_attr("save_to_memory"))
    ctx.fail("attribute save_to_memory is true: ctp saves to files only");
  const bool fp16 = ctx.bool_attr("save_as_fp16");
  std::string contents;
  for (const Tensor& x : host_inputs) paddle_file::append_tensor(contents, as_fp16_if(fp16, x));
  write_whole(ctx, file_path(ctx), contents);
}

std::vector<Tensor> load_tensors(KernelContext& ctx) {
  if (ctx.find_attr("model_from_memory") && ctx.bool_attr("model_from_memory"))
    ctx.fail("attribute model_from_memory is true: ctp loads from files only");
  if (ctx.find_attr("seek") && ctx.int_attr("seek") != -1)
    ctx.fail("attribute seek is " + std::to_string(ctx.int_attr("seek")) +
             ": ctp loads whole tensors only (seek -1)");
  const std::string path = file_path(ctx);
  const std::string bytes = read_file(path);
  const bool fp16 = ctx.bool_attr("load_as_fp16");
  const std::vector<std::string>& names = ctx.output_names("Out");
  std::vector<Tensor> tensors;
  std::size_t pos = 0;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string where = "'" + path + "', tensor " + std::to_string(i + 1) + " of " +
                              std::to_string(names.size()) + " (var '" + names[i] + "')";
    if (pos == bytes.size())
      ctx.fail(where + ": the file ends after " + std::to_string(i) + " tensor(s)");
    tensors.push_back(as_fp16_if(fp16, paddle_file::read_tensor(bytes, pos, where)));
  }
  if (pos != bytes.size())
    ctx.fail("'" + path + "' holds " + std::to_string(bytes.size() - pos) +
             " more byte(s) after the " + std::to_string(names.size()) +
             " tensor(s) the op loads: the file and the op's var list disagree");
  return tensors;
}

}  // namespace ctp
