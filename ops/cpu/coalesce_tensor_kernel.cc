// coalesce_tensor: lays its Output tensors out as aligned views into one
// contiguous FusedOutput buffer, so that one collective can work on all of
// them (the fused all-reduce modes).
//
// Alignment: `align_size` when positive; otherwise 256 bytes on GPUs (as
// Paddle) and 64 bytes on CPUs. On a CPU a chunk only needs to start on a
// cache line (no false sharing between chunks, aligned vector loads); Paddle's
// 4 KiB CPU chunk size would only waste memory between small gradients.
//
// The layout is built once. On later steps, when every Output already is its
// view into the current FusedOutput, nothing is reallocated and nothing is
// copied for outputs that are their own inputs: the ops that produce those
// tensors have written straight into the fused buffer. RunServices::counters
// record every (re)layout and every byte copied.
#include <cstring>

#include "ops/cpu/cpu_kernel_util.h"

namespace ctp::cpu {
namespace {

constexpr std::size_t kCpuAlignment = 64;
constexpr std::size_t kGpuAlignment = 256;

struct Chunk {
  std::vector<int64_t> shape;
  std::size_t offset_bytes = 0;  // from the start of FusedOutput
};

// An input's shape: the tensor's when it exists, else the declared shape
// (set_constant needs no input data, so inputs may not exist yet).
std::vector<int64_t> input_shape(KernelContext& ctx, std::size_t i, bool need_data) {
  const std::string& name = ctx.input_names("Input")[i];
  const Tensor* t = ctx.scope().find(name);
  if (t && t->initialized()) return t->shape();
  if (need_data) ctx.input("Input", i);  // throws the "used before initialized" error
  const Var* v = ctx.block().find_var(name);
  if (!v || v->numel() < 0)
    throw Error(ctx.where() + "Input '" + name +
                "' has no tensor yet and no fully known declared shape");
  return v->shape;
}

void coalesce_tensor(KernelContext& ctx) {
  const auto& in_names = ctx.input_names("Input");
  const auto& out_names = ctx.output_names("Output");
  if (in_names.empty()) throw Error(ctx.where() + "Input is empty");
  if (in_names.size() != out_names.size())
    throw Error(ctx.where() + std::to_string(in_names.size()) + " Input but " +
                std::to_string(out_names.size()) + " Output vars");
  const bool copy_data = ctx.attr_bool("copy_data", false);
  const bool set_constant = ctx.attr_bool("set_constant", false);
  const double constant = ctx.attr_float("constant", 0.0);
  const bool use_align = ctx.attr_bool("use_align", true);
  const Tensor* first = ctx.scope().find(in_names[0]);
  const DataType dtype = dtype_attr(ctx, "dtype", first && first->initialized()
                                                      ? first->dtype() : DataType::FP32);
  const std::size_t elem = element_size(dtype);
  const int64_t user_elem = ctx.attr_int("user_defined_size_of_dtype", -1);
  if (user_elem > 0 && static_cast<std::size_t>(user_elem) != elem)
    throw Error(ctx.where() + "user_defined_size_of_dtype " + std::to_string(user_elem) +
                " differs from the " + std::to_string(elem) + "-byte dtype " +
                std::string(to_string(dtype)) + "; mixed-size fusion is not supported");
  const int64_t align_attr = ctx.attr_int("align_size", -1);
  const std::size_t alignment =
      align_attr > 0 ? static_cast<std::size_t>(align_attr)
                     : (ctx.services().device.kind == DeviceKind::CPU ? kCpuAlignment
                                                                      : kGpuAlignment);
  if (use_align && alignment % elem != 0)
    throw Error(ctx.where() + "align_size " + std::to_string(alignment) +
                " is not a multiple of the element size " + std::to_string(elem));

  std::vector<Chunk> chunks(in_names.size());
  std::size_t total = 0;
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    chunks[i].shape = input_shape(ctx, i, copy_data);
    const Tensor* in = ctx.scope().find(in_names[i]);
    if (in && in->initialized() && in->dtype() != dtype)
      throw Error(ctx.where() + "Input '" + in_names[i] + "' is " +
                  std::string(to_string(in->dtype())) + " but dtype is " +
                  std::string(to_string(dtype)));
    chunks[i].offset_bytes = total;
    std::size_t bytes = static_cast<std::size_t>(product(chunks[i].shape)) * elem;
    if (use_align) bytes = (bytes + alignment - 1) / alignment * alignment;
    total += bytes;
  }
  const std::vector<int64_t> fused_shape{static_cast<int64_t>(total / elem)};

  Tensor& fused = ctx.output("FusedOutput");
  bool in_place = fused.initialized() && fused.dtype() == dtype && fused.shape() == fused_shape;
  for (std::size_t i = 0; in_place && i < chunks.size(); ++i) {
    const Tensor* out = ctx.scope().find(out_names[i]);
    in_place = out && out->shares_buffer_with(fused) &&
               out->offset() == fused.offset() + chunks[i].offset_bytes &&
               out->dtype() == dtype && out->shape() == chunks[i].shape;
  }

  RunCounters& counters = ctx.services().counters;
  if (!in_place) {
    ++counters.coalesce_layouts;
    // A fresh buffer: the inputs may be views into the old one.
    Tensor fresh(dtype, fused_shape);
    for (std::size_t i = 0; i < chunks.size(); ++i) {
      Tensor view = Tensor::view(fresh.buffer(), fresh.offset() + chunks[i].offset_bytes, dtype,
                                 chunks[i].shape);
      if (copy_data) {
        const Tensor& in = ctx.input("Input", i);
        std::memcpy(view.raw_data(), in.raw_data(), in.bytes());
        counters.coalesce_bytes_copied += in.bytes();
      }
      ctx.output("Output", i) = std::move(view);
    }
    fused = std::move(fresh);
  } else if (copy_data) {
    for (std::size_t i = 0; i < chunks.size(); ++i) {
      const Tensor& in = ctx.input("Input", i);
      Tensor& out = ctx.output("Output", i);
      if (in.raw_data() == out.raw_data()) continue;  // produced in place already
      std::memcpy(out.raw_data(), in.raw_data(), in.bytes());
      counters.coalesce_bytes_copied += in.bytes();
    }
  }
  if (set_constant) fill(fused, constant);
}

}  // namespace

CTP_REGISTER_KERNEL(coalesce_tensor, CPU, coalesce_tensor);

}  // namespace ctp::cpu
