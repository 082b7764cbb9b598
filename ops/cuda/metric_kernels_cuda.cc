// CUDA kernels of top_k / top_k_v2 (and their gradients) and accuracy under
// the rules of ops/schema/meta_metrics.h; the launchers are
// ops/cuda/metric_device_kernels.h.
#include <optional>

#include "ops/common/kernel_util.h"
#include "ops/cuda/cuda_kernel_util.h"
#include "ops/cuda/metric_device_kernels.h"
#include "ops/schema/meta_metrics.h"

namespace ctp::cuda {
namespace {

launch::Stream stream_of(KernelContext& ctx) { return device_context(ctx).compute_stream(); }

launch::TopKGeometry geometry_of(const meta::TopKMeta& m) {
  return {m.outer, m.n, m.inner, m.k, m.largest};
}

// K's value when the op has a K input (read back to the host: it sets the
// outputs' shape).
std::optional<int64_t> k_input(KernelContext& ctx) {
  if (!ctx.has_input("K")) return std::nullopt;
  const Tensor& k = ctx.input("K");
  const Tensor host = k.device().kind == DeviceKind::CPU ? k : device_context(ctx).to_host(k);
  return static_cast<int64_t>(scalar_value(host));
}

void top_k(KernelContext& ctx) {
  const std::optional<int64_t> k = k_input(ctx);
  const Tensor x = device_input(ctx, "X");
  const meta::TopKMeta m = meta::top_k(ctx, meta_of(x), k);
  dispatch_dtype<float, double, int32_t, int64_t>(
      x.dtype(), ctx, "X", "top_k", [&]<typename T>() {
        Tensor& out = device_output(ctx, "Out", 0, x.dtype(), m.out_shape);
        Tensor& indices = device_output(ctx, "Indices", 0, DataType::INT64, m.out_shape);
        launch::top_k<T>(x.data<T>(), out.data<T>(), indices.data<int64_t>(), geometry_of(m),
                         stream_of(ctx));
      });
}

void top_k_grad(KernelContext& ctx) {
  const Tensor x = device_input(ctx, "X");
  const Tensor indices = device_input(ctx, "Indices");
  const Tensor dout = device_input(ctx, "Out@GRAD");
  const meta::TopKMeta m = meta::top_k_grad(ctx, meta_of(x), meta_of(indices), meta_of(dout));
  if (!ctx.has_output("X@GRAD")) return;
  dispatch_float(dout.dtype(), ctx, "Out@GRAD", [&]<typename T>() {
    Tensor& dx = device_output(ctx, "X@GRAD", 0, dout.dtype(), x.shape());
    launch::top_k_grad<T>(indices.data<int64_t>(), dout.data<T>(), dx.data<T>(), geometry_of(m),
                          stream_of(ctx));
  });
}

void accuracy(KernelContext& ctx) {
  const Tensor out = device_input(ctx, "Out");
  const Tensor indices = device_input(ctx, "Indices");
  const meta::AccuracyMeta m =
      meta::accuracy(ctx, meta_of(out), meta_of(indices), meta_of(ctx.input("Label")));
  // Labels fed from the host are checked there, as the CPU kernel checks
  // them; labels already on the GPU are not read back.
  const Tensor& raw = ctx.input("Label");
  if (raw.device().kind == DeviceKind::CPU)
    for (int64_t row = 0; row < m.rows; ++row)
      meta::accuracy_label(ctx, row,
                           raw.dtype() == DataType::INT32 ? raw.data<int32_t>()[row]
                                                          : raw.data<int64_t>()[row]);
  const Tensor label = device_input(ctx, "Label");
  Tensor& acc = device_output(ctx, "Accuracy", 0, DataType::FP32, {1});
  Tensor& correct = device_output(ctx, "Correct", 0, DataType::INT32, {1});
  Tensor& total = device_output(ctx, "Total", 0, DataType::INT32, {1});
  launch::accuracy(indices.data<int64_t>(), label.raw_data(), label.dtype() == DataType::INT64,
                   m.rows, m.k, acc.data<float>(), correct.data<int32_t>(),
                   total.data<int32_t>(), stream_of(ctx));
}

}  // namespace

CTP_REGISTER_KERNEL(top_k, CUDA, top_k);
CTP_REGISTER_KERNEL(top_k_v2, CUDA, top_k);
CTP_REGISTER_KERNEL(top_k_grad, CUDA, top_k_grad);
CTP_REGISTER_KERNEL(top_k_v2_grad, CUDA, top_k_grad);
CTP_REGISTER_KERNEL(accuracy, CUDA, accuracy);

}  // namespace ctp::cuda
