// tanh, sigmoid, sqrt, square, gelu and clip and their gradients, element by
// element with the formulas the CUDA kernels share
// (ops/common/activation_math.h). FP32 and FP64; FP16/BF16 computed in float.
#include <optional>

#include "ops/common/activation_inputs.h"
#include "ops/common/activation_math.h"
#include "ops/cpu/cpu_kernel_util.h"
#include "ops/cpu/elementwise_map.h"
#include "ops/cpu/float16_compute.h"
#include "ops/schema/meta_activation.h"

namespace ctp::cpu {
namespace {

using activation::Kind;

// gelu's form follows its approximate attribute.
Kind resolved(const KernelContext& ctx, Kind kind) {
  return kind == Kind::GeluErf && ctx.bool_attr("approximate") ? Kind::GeluTanh : kind;
}

template <Kind kKind>
void activation_forward(KernelContext& ctx) {
  const Tensor x = ctx.input("X");  // a handle: Out may be X
  const Shape shape = meta::activation(ctx, meta_of(x));
  const Kind kind = resolved(ctx, kKind);
  map_elements(ctx, "X", x, ctx.output("Out"), shape,
               [kind](auto v) { return activation::forward(kind, v); });
}

template <Kind kKind>
void activation_backward(KernelContext& ctx) {
  constexpr const char* kIn = activation::grad_reads_out(kKind) ? "Out" : "X";
  const Tensor in = ctx.input(kIn);
  const Tensor dout = ctx.input("Out@GRAD");
  const Shape shape = meta::activation_grad(ctx, kIn, meta_of(in), meta_of(dout));
  const Kind kind = resolved(ctx, kKind);
  map_element_pairs(ctx, "Out@GRAD", dout, in, ctx.output("X@GRAD"), shape,
                    [kind](auto g, auto v) { return activation::backward(kind, v, g); });
}

const Tensor* optional_input(KernelContext& ctx, std::string_view slot) {
  return ctx.has_input(slot) ? &ctx.input(slot) : nullptr;
}
std::optional<TensorMeta> optional_meta(const Tensor* t) {
  if (!t) return std::nullopt;
  return meta_of(*t);
}

void clip(KernelContext& ctx) {
  const Tensor x = ctx.input("X");
  const Tensor* min = optional_input(ctx, "Min");
  const Tensor* max = optional_input(ctx, "Max");
  const auto min_meta = optional_meta(min), max_meta = optional_meta(max);
  const Shape shape = meta::clip(ctx, meta_of(x), pointer(min_meta), pointer(max_meta));
  const ClipBounds b = clip_bounds(ctx, min, max);
  map_elements(ctx, "X", x, ctx.output("Out"), shape, [b](auto v) {
    using T = decltype(v);
    return activation::clip(v, static_cast<T>(b.min), static_cast<T>(b.max));
  });
}

void clip_grad(KernelContext& ctx) {
  const Tensor& x = ctx.input("X");
  const Tensor& dout = ctx.input("Out@GRAD");
  const Tensor* min = optional_input(ctx, "Min");
  const Tensor* max = optional_input(ctx, "Max");
  const auto min_meta = optional_meta(min), max_meta = optional_meta(max);
  const Shape shape =
      meta::clip_grad(ctx, meta_of(x), pointer(min_meta), pointer(max_meta), meta_of(dout));
  const ClipBounds b = clip_bounds(ctx, min, max);
  map_element_pairs(ctx, "X", x, dout, ctx.output("X@GRAD"), shape, [b](auto v, auto g) {
    using T = decltype(v);
    return activation::clip_grad(v, static_cast<T>(b.min), static_cast<T>(b.max), g);
  });
}

}  // namespace

CTP_REGISTER_KERNEL(tanh, CPU, computed_in_float(activation_forward<Kind::Tanh>));
CTP_REGISTER_KERNEL(sigmoid, CPU, computed_in_float(activation_forward<Kind::Sigmoid>));
CTP_REGISTER_KERNEL(sqrt, CPU, computed_in_float(activation_forward<Kind::Sqrt>));
CTP_REGISTER_KERNEL(square, CPU, computed_in_float(activation_forward<Kind::Square>));
CTP_REGISTER_KERNEL(gelu, CPU, computed_in_float(activation_forward<Kind::GeluErf>));
CTP_REGISTER_KERNEL(tanh_grad, CPU, computed_in_float(activation_backward<Kind::Tanh>));
CTP_REGISTER_KERNEL(sigmoid_grad, CPU, computed_in_float(activation_backward<Kind::Sigmoid>));
CTP_REGISTER_KERNEL(sqrt_grad, CPU, computed_in_float(activation_backward<Kind::Sqrt>));
CTP_REGISTER_KERNEL(square_grad, CPU, computed_in_float(activation_backward<Kind::Square>));
CTP_REGISTER_KERNEL(gelu_grad, CPU, computed_in_float(activation_backward<Kind::GeluErf>));
// Min and Max are bounds, read as numbers whatever X's dtype.
CTP_REGISTER_KERNEL(clip, CPU, computed_in_float(clip, {"Min", "Max"}));
CTP_REGISTER_KERNEL(clip_grad, CPU, computed_in_float(clip_grad, {"Min", "Max"}));

}  // namespace ctp::cpu
