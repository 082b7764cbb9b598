// CUDA kernels of layer_norm and lookup_table_v2 (and their gradients)
// under the rules of ops/schema/meta_norm.h and meta_embedding.h, with the
// CPU kernels' formulas. layer_norm takes FP32, FP64, FP16 and BF16 X (its
// statistics, Scale and Bias in FP32 for all but FP64); lookup_table_v2
// moves rows of any float dtype, its gradient adds FP32 or FP64 rows.
#include <cuda_runtime.h>

#include <optional>

#include "executor/cuda/cuda_check.h"
#include "ops/common/strided_copy.h"
#include "ops/cuda/cuda_kernel_util.h"
#include "ops/cuda/shape_device_kernels.h"
#include "ops/schema/meta_embedding.h"
#include "ops/schema/meta_norm.h"

namespace ctp::cuda {
namespace {

launch::Stream stream_of(KernelContext& ctx) { return device_context(ctx).compute_stream(); }

std::optional<Tensor> optional_device_input(KernelContext& ctx, const char* slot) {
  if (!ctx.has_input(slot)) return std::nullopt;
  return device_input(ctx, slot);
}

std::optional<TensorMeta> meta_if(const std::optional<Tensor>& t) {
  if (!t) return std::nullopt;
  return meta_of(*t);
}

template <typename U>
const U* data_if(const std::optional<Tensor>& t) {
  return t ? t->data<U>() : nullptr;
}

// The statistics type of element type T: double for double, float otherwise.
template <typename T>
using Stat = std::conditional_t<std::is_same_v<T, double>, double, float>;

// A [rows] statistics output on the GPU, or scratch when the op leaves it out.
template <typename U>
U* statistics(KernelContext& ctx, const char* slot, const meta::LayerNormMeta& m,
              Tensor& scratch) {
  if (ctx.has_output(slot)) return device_output(ctx, slot, 0, m.stat_dtype, m.stat_shape).data<U>();
  scratch = Tensor(m.stat_dtype, m.stat_shape, device_context(ctx).device());
  return scratch.data<U>();
}

void layer_norm(KernelContext& ctx) {
  const Tensor x = device_input(ctx, "X");
  const std::optional<Tensor> scale = optional_device_input(ctx, "Scale");
  const std::optional<Tensor> bias = optional_device_input(ctx, "Bias");
  const meta::LayerNormMeta m = meta::layer_norm(ctx, meta_of(x), meta_if(scale), meta_if(bias));
  dispatch_mixed(x.dtype(), ctx, "X", [&]<typename T>() {
    using U = Stat<T>;
    Tensor mean_scratch, var_scratch;
    U* mean = statistics<U>(ctx, "Mean", m, mean_scratch);
    U* var = statistics<U>(ctx, "Variance", m, var_scratch);
    Tensor& y = device_output(ctx, "Y", 0, x.dtype(), x.shape());
    launch::layer_norm<T, U>(x.data<T>(), data_if<U>(scale), data_if<U>(bias), y.data<T>(), mean,
                             var, m.rows, m.cols, m.epsilon, stream_of(ctx));
  });
}

void layer_norm_grad(KernelContext& ctx) {
  const Tensor x = device_input(ctx, "X");
  const std::optional<Tensor> scale = optional_device_input(ctx, "Scale");
  const std::optional<Tensor> bias = optional_device_input(ctx, "Bias");
  const Tensor mean = device_input(ctx, "Mean");
  const Tensor var = device_input(ctx, "Variance");
  const Tensor dy = device_input(ctx, "Y@GRAD");
  const meta::LayerNormMeta m = meta::layer_norm_grad(
      ctx, meta_of(x), meta_if(scale), meta_if(bias), meta_of(mean), meta_of(var), meta_of(dy));
  dispatch_mixed(x.dtype(), ctx, "X", [&]<typename T>() {
    using U = Stat<T>;
    T* dx = ctx.has_output("X@GRAD")
                ? device_output(ctx, "X@GRAD", 0, x.dtype(), x.shape()).data<T>()
                : nullptr;
    const auto param_grad = [&](const char* slot, const std::optional<Tensor>& param) -> U* {
      if (!param || !ctx.has_output(slot)) return nullptr;
      return device_output(ctx, slot, 0, m.stat_dtype, param->shape()).data<U>();
    };
    U* dscale = param_grad("Scale@GRAD", scale);
    U* dbias = param_grad("Bias@GRAD", bias);
    Tensor scratch;  // the column sums' partials, freed (stream-ordered) on return
    U* partials = nullptr;
    if (dscale || dbias) {
      const int64_t n = launch::layer_norm_grad_scratch(m.rows, m.cols);
      scratch = Tensor::view(allocate_uninitialized_buffer(device_context(ctx).device(),
                                                           static_cast<std::size_t>(n) * sizeof(U)),
                             0, m.stat_dtype, {n});
      partials = scratch.data<U>();
    }
    launch::layer_norm_grad<T, U>(x.data<T>(), data_if<U>(scale), mean.data<U>(), var.data<U>(),
                                  dy.data<T>(), dx, dscale, dbias, partials, m.rows, m.cols,
                                  m.epsilon, stream_of(ctx));
  });
}

// Ids fed from the host are checked there, as the CPU kernel checks them;
// ids already on the GPU are not read back (an out-of-range one then picks a
// row of zeros rather than costing a host round trip).
const Tensor& checked_ids(KernelContext& ctx, const meta::LookupMeta& m) {
  const Tensor& raw = ctx.input("Ids");
  if (raw.device().kind == DeviceKind::CPU)
    for (int64_t i = 0; i < raw.numel(); ++i)
      meta::lookup_row(ctx, m, i,
                       raw.dtype() == DataType::INT32 ? raw.data<int32_t>()[i]
                                                      : raw.data<int64_t>()[i]);
  return device_input(ctx, "Ids");
}

void lookup_table_v2(KernelContext& ctx) {
  const Tensor w = device_input(ctx, "W");
  const meta::LookupMeta m = meta::lookup_table_v2(ctx, meta_of(w), meta_of(ctx.input("Ids")));
  const Tensor ids = checked_ids(ctx, m);
  const int bytes = static_cast<int>(movable_element_size(ctx, w.dtype()));
  Tensor& out = device_output(ctx, "Out", 0, w.dtype(), m.out_shape);
  launch::lookup_rows(w.raw_data(), ids.raw_data(), ids.dtype() == DataType::INT64,
                      m.padding_idx, out.raw_data(), m.ids, m.rows, m.width, bytes,
                      stream_of(ctx));
}

void lookup_table_v2_grad(KernelContext& ctx) {
  const Tensor& w = ctx.shape_input("W");
  const Tensor dout = device_input(ctx, "Out@GRAD");
  const meta::LookupMeta m =
      meta::lookup_table_v2_grad(ctx, meta_of(w), meta_of(ctx.input("Ids")), meta_of(dout));
  const Tensor ids = checked_ids(ctx, m);
  if (!ctx.has_output("W@GRAD")) return;
  dispatch_float(dout.dtype(), ctx, "Out@GRAD", [&]<typename T>() {
    Tensor& dw = device_output(ctx, "W@GRAD", 0, dout.dtype(), w.shape());
    CTP_CUDA_CHECK(cudaMemsetAsync(dw.raw_data(), 0, dw.bytes(), stream_of(ctx)));
    launch::lookup_rows_grad<T>(dout.data<T>(), ids.raw_data(), ids.dtype() == DataType::INT64,
                                m.padding_idx, dw.data<T>(), m.ids, m.rows, m.width,
                                stream_of(ctx));
  });
}

}  // namespace

CTP_REGISTER_KERNEL(layer_norm, CUDA, layer_norm);
CTP_REGISTER_KERNEL(layer_norm_grad, CUDA, layer_norm_grad);
CTP_REGISTER_KERNEL(lookup_table_v2, CUDA, lookup_table_v2);
CTP_REGISTER_KERNEL(lookup_table_v2_grad, CUDA, lookup_table_v2_grad);

}  // namespace ctp::cuda
