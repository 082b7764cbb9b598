// CUDA kernels that move bytes: split, concat (strided device copies) and
// coalesce_tensor, which lays gradients out as 256-byte aligned views into
// one device buffer so that a fused all-reduce needs no copy per step.
#include "executor/cuda/cuda_check.h"
#include "executor/runtime/float16.h"
#include "ops/cpu/cpu_kernel_util.h"
#include "ops/cuda/cuda_kernel_util.h"
#include "ops/cuda/device_kernels.h"

namespace ctp::cuda {
namespace {

using cpu::product;
using cpu::shape_string;

int64_t axis_of(KernelContext& ctx, std::size_t rank) {
  int64_t axis = ctx.attr_int("axis", 0);
  if (ctx.has_input("AxisTensor"))
    axis = static_cast<int64_t>(
        cpu::scalar_value(device_context(ctx).to_host(ctx.input("AxisTensor"))));
  return cpu::normalize_axis(ctx, axis, rank, "axis");
}

std::vector<int64_t> split_sizes(KernelContext& ctx, int64_t extent, std::size_t outputs) {
  std::vector<int64_t> sizes = ctx.attr_ints("sections", {});
  const int64_t num = ctx.attr_int("num", 0);
  if (sizes.empty()) {
    if (num <= 0 || extent % num != 0)
      throw Error(ctx.where() + "num " + std::to_string(num) +
                  " does not divide the axis of size " + std::to_string(extent) +
                  " (and no sections were given)");
    sizes.assign(static_cast<std::size_t>(num), extent / num);
  } else {
    int64_t known = 0, unknown = -1;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      if (sizes[i] == -1) {
        if (unknown >= 0) throw Error(ctx.where() + "sections has more than one -1");
        unknown = static_cast<int64_t>(i);
      } else {
        known += sizes[i];
      }
    }
    if (unknown >= 0) sizes[static_cast<std::size_t>(unknown)] = extent - known;
    int64_t total = 0;
    for (int64_t s : sizes) {
      if (s < 0) throw Error(ctx.where() + "sections " + shape_string(sizes) + " are invalid");
      total += s;
    }
    if (total != extent)
      throw Error(ctx.where() + "sections " + shape_string(sizes) +
                  " do not add up to the axis size " + std::to_string(extent));
  }
  if (sizes.size() != outputs)
    throw Error(ctx.where() + std::to_string(sizes.size()) + " pieces but " +
                std::to_string(outputs) + " outputs in Out");
  return sizes;
}

// `rows` rows of `width` bytes, from a source with pitch `src_pitch` to a
// destination with pitch `dst_pitch`, on the compute stream.
void copy_rows(KernelContext& ctx, void* dst, std::size_t dst_pitch, const void* src,
               std::size_t src_pitch, std::size_t width, int64_t rows) {
  if (width == 0 || rows == 0) return;
  CTP_CUDA_CHECK(cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, width,
                                   static_cast<std::size_t>(rows), cudaMemcpyDeviceToDevice,
                                   device_context(ctx).compute_stream()));
}

void split(KernelContext& ctx) {
  const Tensor x = device_input(ctx, "X");
  const auto& shape = x.shape();
  const auto axis = static_cast<std::size_t>(axis_of(ctx, shape.size()));
  const std::size_t outputs = ctx.output_names("Out").size();
  const std::vector<int64_t> sizes = split_sizes(ctx, shape[axis], outputs);
  const int64_t outer = product(shape, 0, axis);
  const std::size_t row_bytes =
      static_cast<std::size_t>(product(shape, axis + 1, shape.size())) * element_size(x.dtype());
  const std::size_t x_stride = row_bytes * static_cast<std::size_t>(shape[axis]);
  const char* src = static_cast<const char*>(x.raw_data());
  std::size_t start = 0;
  for (std::size_t k = 0; k < outputs; ++k) {
    std::vector<int64_t> piece_shape = shape;
    piece_shape[axis] = sizes[k];
    Tensor& out = device_output(ctx, "Out", k, x.dtype(), piece_shape);
    const std::size_t piece = row_bytes * static_cast<std::size_t>(sizes[k]);
    if (piece) copy_rows(ctx, out.raw_data(), piece, src + start, x_stride, piece, outer);
    start += piece;
  }
}

void concat(KernelContext& ctx) {
  const std::size_t n = ctx.input_names("X").size();
  if (n == 0) throw Error(ctx.where() + "X has no inputs");
  std::vector<Tensor> inputs;
  for (std::size_t i = 0; i < n; ++i) inputs.push_back(device_input(ctx, "X", i));
  const auto& first = inputs[0].shape();
  const auto axis = static_cast<std::size_t>(axis_of(ctx, first.size()));
  std::vector<int64_t> out_shape = first;
  out_shape[axis] = 0;
  for (const Tensor& t : inputs) {
    bool compatible = t.dtype() == inputs[0].dtype() && t.shape().size() == first.size();
    for (std::size_t d = 0; compatible && d < first.size(); ++d)
      compatible = d == axis || t.shape()[d] == first[d];
    if (!compatible)
      throw Error(ctx.where() + "input " + shape_string(t.shape()) + " " +
                  std::string(to_string(t.dtype())) + " cannot be joined to " +
                  shape_string(first) + " " + std::string(to_string(inputs[0].dtype())) +
                  " along axis " + std::to_string(axis));
    out_shape[axis] += t.shape()[axis];
  }
  Tensor& out = device_output(ctx, "Out", 0, inputs[0].dtype(), out_shape);
  const int64_t outer = product(first, 0, axis);
  const std::size_t row_bytes = static_cast<std::size_t>(product(first, axis + 1, first.size())) *
                                element_size(inputs[0].dtype());
  const std::size_t out_stride = row_bytes * static_cast<std::size_t>(out_shape[axis]);
  char* dst = static_cast<char*>(out.raw_data());
  std::size_t start = 0;
  for (const Tensor& t : inputs) {
    const std::size_t piece = row_bytes * static_cast<std::size_t>(t.shape()[axis]);
    if (piece) copy_rows(ctx, dst + start, out_stride, t.raw_data(), piece, piece, outer);
    start += piece;
  }
}

constexpr std::size_t kGpuAlignment = 256;

struct Chunk {
  std::vector<int64_t> shape;
  std::size_t offset_bytes = 0;
};

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

void fill_device(KernelContext& ctx, Tensor& t, double value) {
  launch::Stream s = device_context(ctx).compute_stream();
  switch (t.dtype()) {
    case DataType::FP32: launch::fill<float>(t.data<float>(), t.numel(), value, s); return;
    case DataType::FP64: launch::fill<double>(t.data<double>(), t.numel(), value, s); return;
    case DataType::INT32: launch::fill<int32_t>(t.data<int32_t>(), t.numel(), value, s); return;
    case DataType::INT64: launch::fill<int64_t>(t.data<int64_t>(), t.numel(), value, s); return;
    case DataType::FP16: case DataType::BF16: {
      const float v = static_cast<float>(value);  // rounded as the CPU kernel rounds it
      launch::fill_bits16(t.data<uint16_t>(), t.numel(),
                          t.dtype() == DataType::FP16 ? float16::from_float(v)
                                                      : bfloat16::from_float(v), s);
      return;
    }
    default:
      if (value != 0.0)
        throw Error(ctx.where() + "set_constant " + std::to_string(value) + " on dtype " +
                    std::string(to_string(t.dtype())) + " is not supported on the GPU");
      CTP_CUDA_CHECK(cudaMemsetAsync(t.raw_data(), 0, t.bytes(), s));
  }
}

// As the CPU kernel (ops/cpu/coalesce_tensor_kernel.cc), on the run's GPU.
void coalesce_tensor(KernelContext& ctx) {
  const auto& in_names = ctx.input_names("Input");
  const auto& out_names = ctx.output_names("Output");
  if (in_names.empty()) throw Error(ctx.where() + "Input is empty");
  if (in_names.size() != out_names.size())
    throw Error(ctx.where() + std::to_string(in_names.size()) + " Input but " +
                std::to_string(out_names.size()) + " Output vars");
  DeviceContext& dc = device_context(ctx);
  const bool copy_data = ctx.attr_bool("copy_data", false);
  const bool set_constant = ctx.attr_bool("set_constant", false);
  const double constant = ctx.attr_float("constant", 0.0);
  const bool use_align = ctx.attr_bool("use_align", true);
  const Tensor* first = ctx.scope().find(in_names[0]);
  const DataType dtype =
      cpu::dtype_attr(ctx, "dtype", first && first->initialized() ? first->dtype() : DataType::FP32);
  const std::size_t elem = element_size(dtype);
  const int64_t user_elem = ctx.attr_int("user_defined_size_of_dtype", -1);
  if (user_elem > 0 && static_cast<std::size_t>(user_elem) != elem)
    throw Error(ctx.where() + "user_defined_size_of_dtype " + std::to_string(user_elem) +
                " differs from the " + std::to_string(elem) + "-byte dtype " +
                std::string(to_string(dtype)) + "; mixed-size fusion is not supported");
  const int64_t align_attr = ctx.attr_int("align_size", -1);
  const std::size_t alignment = align_attr > 0 ? static_cast<std::size_t>(align_attr) : kGpuAlignment;
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
  bool in_place = fused.initialized() && fused.device() == dc.device() && fused.dtype() == dtype &&
                  fused.shape() == fused_shape;
  for (std::size_t i = 0; in_place && i < chunks.size(); ++i) {
    const Tensor* out = ctx.scope().find(out_names[i]);
    in_place = out && out->shares_buffer_with(fused) &&
               out->offset() == fused.offset() + chunks[i].offset_bytes &&
               out->dtype() == dtype && out->shape() == chunks[i].shape;
  }
  RunCounters& counters = ctx.services().counters;
  const auto copy_in = [&](std::size_t i, Tensor& target) {
    Tensor& in = device_input(ctx, "Input", i);
    if (in.raw_data() == target.raw_data()) return;  // produced in place already
    copy_bytes(in, target, dc.compute_stream());
    counters.coalesce_bytes_copied += in.bytes();
  };
  if (!in_place) {
    ++counters.coalesce_layouts;
    Tensor fresh(dtype, fused_shape, dc.device());
    for (std::size_t i = 0; i < chunks.size(); ++i) {
      Tensor view = Tensor::view(fresh.buffer(), fresh.offset() + chunks[i].offset_bytes, dtype,
                                 chunks[i].shape);
      if (copy_data) copy_in(i, view);
      ctx.output("Output", i) = std::move(view);
    }
    fused = std::move(fresh);
  } else if (copy_data) {
    for (std::size_t i = 0; i < chunks.size(); ++i) copy_in(i, ctx.output("Output", i));
  }
  if (set_constant) fill_device(ctx, fused, constant);
}

}  // namespace

CTP_REGISTER_KERNEL(split, CUDA, split);
CTP_REGISTER_KERNEL(concat, CUDA, concat);
CTP_REGISTER_KERNEL(coalesce_tensor, CUDA, coalesce_tensor);

}  // namespace ctp::cuda
