// relu6, hard_sigmoid, hard_swish and swish and their gradients, element by
// element with the formulas the CUDA kernels share
// (ops/common/attr_activation_math.h). FP32 and FP64; FP16/BF16 computed in
// float.
#include "ops/common/attr_activation_inputs.h"
#include "ops/cpu/cpu_kernel_util.h"
#include "ops/cpu/elementwise_map.h"
#include "ops/cpu/float16_compute.h"
#include "ops/schema/meta_activation.h"

namespace ctp::cpu {
namespace {

using attr_activation::Kind;

template <Kind kKind>
void forward(KernelContext& ctx) {
  const Tensor x = ctx.input("X");  // a handle: Out may be X
  const Shape shape = meta::activation(ctx, meta_of(x));
  const attr_activation::Coefficients k = coefficients_of(ctx, kKind);
  map_elements(ctx, "X", x, ctx.output("Out"), shape,
               [&k](auto v) { return attr_activation::forward(kKind, v, k); });
}

template <Kind kKind>
void backward(KernelContext& ctx) {
  constexpr const char* kIn = attr_activation::grad_reads_out(kKind) ? "Out" : "X";
  const Tensor in = ctx.input(kIn);
  const Tensor dout = ctx.input("Out@GRAD");
  const Shape shape = meta::activation_grad(ctx, kIn, meta_of(in), meta_of(dout));
  const attr_activation::Coefficients k = coefficients_of(ctx, kKind);
  map_element_pairs(ctx, "Out@GRAD", dout, in, ctx.output("X@GRAD"), shape,
                    [&k](auto g, auto v) { return attr_activation::backward(kKind, v, g, k); });
}

}  // namespace

CTP_REGISTER_KERNEL(relu6, CPU, computed_in_float(forward<Kind::Relu6>));
CTP_REGISTER_KERNEL(hard_sigmoid, CPU, computed_in_float(forward<Kind::HardSigmoid>));
CTP_REGISTER_KERNEL(hard_swish, CPU, computed_in_float(forward<Kind::HardSwish>));
CTP_REGISTER_KERNEL(swish, CPU, computed_in_float(forward<Kind::Swish>));
CTP_REGISTER_KERNEL(relu6_grad, CPU, computed_in_float(backward<Kind::Relu6>));
CTP_REGISTER_KERNEL(hard_sigmoid_grad, CPU, computed_in_float(backward<Kind::HardSigmoid>));
CTP_REGISTER_KERNEL(hard_swish_grad, CPU, computed_in_float(backward<Kind::HardSwish>));
CTP_REGISTER_KERNEL(swish_grad, CPU, computed_in_float(backward<Kind::Swish>));

}  // namespace ctp::cpu
