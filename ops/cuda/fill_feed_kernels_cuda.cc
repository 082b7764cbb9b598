// CUDA kernels of the initializers and copies: fill_constant, uniform_random,
// gaussian_random, assign, fill_zeros_like, cast, and feed/fetch.
//
// The random initializers produce their numbers with the CPU kernel (same
// engine, same seed derivation) and upload them: they run once, in the
// startup program, and this keeps a GPU run's initial parameters identical to
// a CPU run's, which is what lets GPU and CPU training be compared.
#include <cstring>
#include <optional>
#include <utility>

#include "executor/cuda/cuda_check.h"
#include "executor/runtime/float16.h"
#include "ops/common/feed_fetch.h"
#include "ops/common/initializer_shape.h"
#include "ops/cuda/batch_launch.h"
#include "ops/cuda/cuda_kernel_util.h"
#include "ops/cuda/device_kernels.h"
#include "ops/schema/meta_tensor.h"

namespace ctp::cuda {
namespace {

// Runs the op's CPU kernel on host copies of its inputs, then moves every
// output to the GPU (into its existing buffer when the shape is unchanged,
// so views into it stay valid).
void run_on_host_and_upload(KernelContext& ctx) {
  DeviceContext& dc = device_context(ctx);
  const KernelFn* cpu_kernel = KernelRegistry::global().find(ctx.op().type, DeviceKind::CPU);
  if (!cpu_kernel) ctx.fail("no CPU kernel to produce the values with");
  Scope host;
  for (const Slot& slot : ctx.op().inputs())
    for (const std::string& name : slot.args)
      if (const Tensor* t = ctx.scope().find(name); t && t->initialized())
        host.var(name) = t->device().kind == DeviceKind::CPU ? *t : dc.to_host(*t);
  KernelContext host_ctx(ctx.op(), ctx.block(), host, ctx.services(), ctx.op_index());
  (*cpu_kernel)(host_ctx);
  for (const Slot& slot : ctx.op().outputs())
    for (const std::string& name : slot.args) {
      const Tensor& value = host.get(name);
      Tensor& out = ctx.scope().var(name);
      out.resize(value.dtype(), value.shape(), dc.device());
      copy_bytes(value, out, dc.compute_stream());
    }
}

// The CPU's rounding of `value` (float16.h), so both fill the same bits.
void fill_16bit(Tensor& out, double value, launch::Stream s) {
  const float v = static_cast<float>(value);
  const uint16_t bits =
      out.dtype() == DataType::FP16 ? float16::from_float(v) : bfloat16::from_float(v);
  launch::fill_bits16(out.data<uint16_t>(), out.numel(), bits, s);
}

void fill_constant(KernelContext& ctx) {
  const DataType dtype = ctx.dtype_attr("dtype", DataType::FP32);
  const bool simple = !ctx.has_input("ValueTensor") && !ctx.has_input("ShapeTensor") &&
                      !ctx.has_input("ShapeTensorList") &&
                      ctx.string_attr("str_value", "").empty();
  if (!simple || (dtype != DataType::FP32 && dtype != DataType::FP64 &&
                  dtype != DataType::FP16 && dtype != DataType::BF16 &&
                  dtype != DataType::INT32 && dtype != DataType::INT64)) {
    run_on_host_and_upload(ctx);
    return;
  }
  const std::vector<int64_t> shape = initializer_shape(ctx);
  const double value = ctx.float_attr("value", 0.0);
  Tensor& out = device_output(ctx, "Out", 0, dtype, shape);
  launch::Stream s = device_context(ctx).compute_stream();
  switch (dtype) {
    case DataType::FP32: launch::fill<float>(out.data<float>(), out.numel(), value, s); break;
    case DataType::FP64: launch::fill<double>(out.data<double>(), out.numel(), value, s); break;
    case DataType::INT32: launch::fill<int32_t>(out.data<int32_t>(), out.numel(), value, s); break;
    case DataType::FP16: case DataType::BF16: fill_16bit(out, value, s); break;
    default: launch::fill<int64_t>(out.data<int64_t>(), out.numel(), value, s); break;
  }
}

// Zeros of X's shape and dtype; X itself is not read (nor moved to the GPU).
void fill_zeros_like(KernelContext& ctx) {
  const Tensor& x = ctx.shape_input("X");
  Tensor& out = device_output(ctx, "Out", 0, x.dtype(), x.shape());
  CTP_CUDA_CHECK(
      cudaMemsetAsync(out.raw_data(), 0, out.bytes(), device_context(ctx).compute_stream()));
}

void assign(KernelContext& ctx) {
  const Tensor x = device_input(ctx, "X");
  if (ctx.output_names("Out").at(0) == ctx.input_names("X").at(0)) return;
  Tensor& out = device_output(ctx, "Out", 0, x.dtype(), x.shape());
  if (out.raw_data() == x.raw_data()) return;
  copy_bytes(x, out, device_context(ctx).compute_stream());
}

// cast between FP32, FP64, FP16 and BF16 on the GPU; other dtypes (labels,
// masks: rare and small) are converted by the CPU kernel and uploaded.
// Returns the element-wise work of a cast between two floating dtypes, after
// checking the op and sizing Out; does the rest (a copy, a host cast) itself.
using CastKey = std::pair<DataType, DataType>;
std::optional<BatchedTask<CastKey>> prepare_cast(KernelContext& ctx) {
  const Tensor x = device_input(ctx, "X");
  const DataType out_dtype = meta::cast(ctx, meta_of(x)).out;
  const auto floating = [](DataType d) {
    return d == DataType::FP32 || d == DataType::FP64 || d == DataType::FP16 ||
           d == DataType::BF16;
  };
  if (out_dtype == x.dtype()) {
    if (ctx.output_names("Out").at(0) == ctx.input_names("X").at(0)) return std::nullopt;
    Tensor& out = device_output(ctx, "Out", 0, x.dtype(), x.shape());
    if (out.raw_data() != x.raw_data()) copy_bytes(x, out, device_context(ctx).compute_stream());
    return std::nullopt;
  }
  if (!floating(x.dtype()) || !floating(out_dtype)) {
    run_on_host_and_upload(ctx);
    return std::nullopt;
  }
  Tensor& out = device_output(ctx, "Out", 0, out_dtype, x.shape());
  BatchedTask<CastKey> work{{x.dtype(), out_dtype}, {x.raw_data(), nullptr, out.raw_data(), x.numel()}};
  work.bytes.reads(x.raw_data(), x.bytes()).writes(out.raw_data(), out.bytes());
  return work;
}

// The cast tasks of one (from, to) pair: one multi-tensor launch for several.
void launch_casts(KernelContext& ctx, const CastKey& key, const launch::TensorTask* tasks,
                  std::size_t count) {
  launch::Stream s = device_context(ctx).compute_stream();
  dispatch_mixed(key.first, ctx, "X", [&]<typename From>() {
    dispatch_mixed(key.second, ctx, "Out", [&]<typename To>() {
      if (count == 1)
        launch::cast<From, To>(static_cast<const From*>(tasks->a), static_cast<To*>(tasks->out),
                               tasks->n, s);
      else
        launch::multi_cast<From, To>(tasks, count, s);
    });
  });
}


// feed: the fed tensor on the GPU; a tensor fed from the host is copied into
// the var's device buffer (the same buffer every step).
void feed(KernelContext& ctx) {
  const Tensor& in = fed_tensor(ctx);
  DeviceContext& dc = device_context(ctx);
  if (in.device() == dc.device()) {
    ctx.output("Out") = in;
    return;
  }
  Tensor& out = device_output(ctx, "Out", 0, in.dtype(), in.shape());
  copy_bytes(in, out, dc.compute_stream());
}

// fetch: a host copy, taken after every stream of the device is idle.
void fetch(KernelContext& ctx) {
  Tensor& target = fetch_target(ctx);
  target = device_context(ctx).to_host(ctx.input("X"));
}

}  // namespace

CTP_REGISTER_KERNEL(fill_constant, CUDA, fill_constant);
CTP_REGISTER_KERNEL(uniform_random, CUDA, run_on_host_and_upload);
CTP_REGISTER_KERNEL(gaussian_random, CUDA, run_on_host_and_upload);
CTP_REGISTER_KERNEL(assign, CUDA, assign);
CTP_REGISTER_KERNEL(fill_zeros_like, CUDA, fill_zeros_like);
// A run of independent casts (mixed precision's per-parameter casts): one
// launch per pair of dtypes.
CTP_REGISTER_KERNEL(cast, CUDA, (run_one<prepare_cast, launch_casts>));
CTP_REGISTER_BATCH_KERNEL(cast, CUDA, (run_batch<prepare_cast, launch_casts>));
CTP_REGISTER_KERNEL(feed, CUDA, feed);
CTP_REGISTER_KERNEL(fetch, CUDA, fetch);

}  // namespace ctp::cuda
