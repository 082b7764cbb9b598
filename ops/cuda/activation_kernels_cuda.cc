// CUDA kernels of tanh, sigmoid, sqrt, square, gelu, clip and dropout and
// their gradients under the rules of ops/schema/meta_activation.h: FP32,
// FP64, FP16 and BF16 (16-bit ones computed in float, as on the CPU), queued
// on the compute stream. One-element inputs (clip's Min/Max, dropout's Seed)
// are read on the host.
#include <optional>

#include "ops/common/activation_inputs.h"
#include "ops/cuda/activation_launch.h"
#include "ops/cuda/cuda_kernel_util.h"
#include "ops/schema/meta_activation.h"

namespace ctp::cuda {
namespace {

using activation::Kind;

launch::Stream stream_of(KernelContext& ctx) { return device_context(ctx).compute_stream(); }

Kind resolved(const KernelContext& ctx, Kind kind) {
  return kind == Kind::GeluErf && ctx.bool_attr("approximate") ? Kind::GeluTanh : kind;
}

template <Kind kKind>
void activation_forward(KernelContext& ctx) {
  const Tensor x = device_input(ctx, "X");
  const Shape shape = meta::activation(ctx, meta_of(x));
  const Kind kind = resolved(ctx, kKind);
  dispatch_mixed(x.dtype(), ctx, "X", [&]<typename T>() {
    Tensor& out = device_output(ctx, "Out", 0, x.dtype(), shape);
    launch::unary_activation<T>(kind, x.data<T>(), out.data<T>(), x.numel(), stream_of(ctx));
  });
}

template <Kind kKind>
void activation_backward(KernelContext& ctx) {
  constexpr const char* kIn = activation::grad_reads_out(kKind) ? "Out" : "X";
  const Tensor in = device_input(ctx, kIn);
  const Tensor dout = device_input(ctx, "Out@GRAD");
  const Shape shape = meta::activation_grad(ctx, kIn, meta_of(in), meta_of(dout));
  const Kind kind = resolved(ctx, kKind);
  dispatch_mixed(dout.dtype(), ctx, "Out@GRAD", [&]<typename T>() {
    Tensor& dx = device_output(ctx, "X@GRAD", 0, dout.dtype(), shape);
    launch::unary_activation_grad<T>(kind, in.data<T>(), dout.data<T>(), dx.data<T>(), dout.numel(),
                                     stream_of(ctx));
  });
}

// A one-element input copied to the host (nullopt when absent).
std::optional<Tensor> host_input(KernelContext& ctx, std::string_view slot) {
  if (!ctx.has_input(slot)) return std::nullopt;
  return device_context(ctx).to_host(ctx.input(slot));
}
const Tensor* pointer(const std::optional<Tensor>& t) { return t ? &*t : nullptr; }
std::optional<TensorMeta> meta_if(const std::optional<Tensor>& t) {
  if (!t) return std::nullopt;
  return meta_of(*t);
}

void clip(KernelContext& ctx) {
  const Tensor x = device_input(ctx, "X");
  const std::optional<Tensor> min = host_input(ctx, "Min"), max = host_input(ctx, "Max");
  const auto min_meta = meta_if(min), max_meta = meta_if(max);
  const Shape shape = meta::clip(ctx, meta_of(x), pointer(min_meta), pointer(max_meta));
  const ClipBounds b = clip_bounds(ctx, pointer(min), pointer(max));
  dispatch_mixed(x.dtype(), ctx, "X", [&]<typename T>() {
    Tensor& out = device_output(ctx, "Out", 0, x.dtype(), shape);
    launch::clip<T>(x.data<T>(), out.data<T>(), x.numel(), b.min, b.max, stream_of(ctx));
  });
}

void clip_grad(KernelContext& ctx) {
  const Tensor x = device_input(ctx, "X");
  const Tensor dout = device_input(ctx, "Out@GRAD");
  const std::optional<Tensor> min = host_input(ctx, "Min"), max = host_input(ctx, "Max");
  const auto min_meta = meta_if(min), max_meta = meta_if(max);
  const Shape shape =
      meta::clip_grad(ctx, meta_of(x), pointer(min_meta), pointer(max_meta), meta_of(dout));
  const ClipBounds b = clip_bounds(ctx, pointer(min), pointer(max));
  dispatch_mixed(x.dtype(), ctx, "X", [&]<typename T>() {
    Tensor& dx = device_output(ctx, "X@GRAD", 0, x.dtype(), shape);
    launch::clip_grad<T>(x.data<T>(), dout.data<T>(), dx.data<T>(), x.numel(), b.min, b.max,
                         stream_of(ctx));
  });
}

void dropout(KernelContext& ctx) {
  const Tensor x = device_input(ctx, "X");
  const std::optional<Tensor> seed = host_input(ctx, "Seed");
  const auto seed_meta = meta_if(seed);
  const meta::DropoutMeta m = meta::dropout(ctx, meta_of(x), pointer(seed_meta));
  dispatch_mixed(x.dtype(), ctx, "X", [&]<typename T>() {
    Tensor& out = device_output(ctx, "Out", 0, x.dtype(), m.shape);
    if (m.is_test) {  // no mask, as on the CPU
      launch::dropout_test<T>(x.data<T>(), out.data<T>(), x.numel(), m.prob, m.upscale_in_train,
                              stream_of(ctx));
      return;
    }
    uint8_t* mask = ctx.has_output("Mask")
                        ? device_output(ctx, "Mask", 0, DataType::UINT8, m.shape).data<uint8_t>()
                        : nullptr;
    launch::dropout<T>(x.data<T>(), out.data<T>(), mask, x.numel(), dropout_seed(m, pointer(seed)),
                       m.prob, m.upscale_in_train, stream_of(ctx));
  });
}

void dropout_grad(KernelContext& ctx) {
  const Tensor mask = device_input(ctx, "Mask");
  const Tensor dout = device_input(ctx, "Out@GRAD");
  const meta::DropoutMeta m = meta::dropout_grad(ctx, meta_of(mask), meta_of(dout));
  dispatch_mixed(dout.dtype(), ctx, "Out@GRAD", [&]<typename T>() {
    Tensor& dx = device_output(ctx, "X@GRAD", 0, dout.dtype(), m.shape);
    if (m.is_test)
      launch::dropout_test<T>(dout.data<T>(), dx.data<T>(), dout.numel(), m.prob,
                              m.upscale_in_train, stream_of(ctx));
    else
      launch::dropout_grad<T>(mask.data<uint8_t>(), dout.data<T>(), dx.data<T>(), dout.numel(),
                              m.prob, m.upscale_in_train, stream_of(ctx));
  });
}

}  // namespace

CTP_REGISTER_KERNEL(tanh, CUDA, activation_forward<Kind::Tanh>);
CTP_REGISTER_KERNEL(sigmoid, CUDA, activation_forward<Kind::Sigmoid>);
CTP_REGISTER_KERNEL(sqrt, CUDA, activation_forward<Kind::Sqrt>);
CTP_REGISTER_KERNEL(square, CUDA, activation_forward<Kind::Square>);
CTP_REGISTER_KERNEL(gelu, CUDA, activation_forward<Kind::GeluErf>);
CTP_REGISTER_KERNEL(tanh_grad, CUDA, activation_backward<Kind::Tanh>);
CTP_REGISTER_KERNEL(sigmoid_grad, CUDA, activation_backward<Kind::Sigmoid>);
CTP_REGISTER_KERNEL(sqrt_grad, CUDA, activation_backward<Kind::Sqrt>);
CTP_REGISTER_KERNEL(square_grad, CUDA, activation_backward<Kind::Square>);
CTP_REGISTER_KERNEL(gelu_grad, CUDA, activation_backward<Kind::GeluErf>);
CTP_REGISTER_KERNEL(clip, CUDA, clip);
CTP_REGISTER_KERNEL(clip_grad, CUDA, clip_grad);
CTP_REGISTER_KERNEL(dropout, CUDA, dropout);
CTP_REGISTER_KERNEL(dropout_grad, CUDA, dropout_grad);

}  // namespace ctp::cuda
