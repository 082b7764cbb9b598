// CUDA kernels of relu6, hard_sigmoid, hard_swish and swish and their
// gradients under the rules of ops/schema/meta_activation.h: FP32, FP64,
// FP16 and BF16 (16-bit ones computed in float, as on the CPU).
#include "ops/common/attr_activation_inputs.h"
#include "ops/cuda/attr_activation_launch.h"
#include "ops/cuda/cuda_kernel_util.h"
#include "ops/schema/meta_activation.h"

namespace ctp::cuda {
namespace {

using attr_activation::Kind;

template <Kind kKind>
void forward(KernelContext& ctx) {
  const Tensor x = device_input(ctx, "X");
  const Shape shape = meta::activation(ctx, meta_of(x));
  const attr_activation::Coefficients k = coefficients_of(ctx, kKind);
  dispatch_mixed(x.dtype(), ctx, "X", [&]<typename T>() {
    Tensor& out = device_output(ctx, "Out", 0, x.dtype(), shape);
    launch::attr_activation<T>(kKind, k, x.data<T>(), out.data<T>(), x.numel(),
                               device_context(ctx).compute_stream());
  });
}

template <Kind kKind>
void backward(KernelContext& ctx) {
  constexpr const char* kIn = attr_activation::grad_reads_out(kKind) ? "Out" : "X";
  const Tensor in = device_input(ctx, kIn);
  const Tensor dout = device_input(ctx, "Out@GRAD");
  const Shape shape = meta::activation_grad(ctx, kIn, meta_of(in), meta_of(dout));
  const attr_activation::Coefficients k = coefficients_of(ctx, kKind);
  dispatch_mixed(dout.dtype(), ctx, "Out@GRAD", [&]<typename T>() {
    Tensor& dx = device_output(ctx, "X@GRAD", 0, dout.dtype(), shape);
    launch::attr_activation_grad<T>(kKind, k, in.data<T>(), dout.data<T>(), dx.data<T>(),
                                    dout.numel(), device_context(ctx).compute_stream());
  });
}

}  // namespace

CTP_REGISTER_KERNEL(relu6, CUDA, forward<Kind::Relu6>);
CTP_REGISTER_KERNEL(hard_sigmoid, CUDA, forward<Kind::HardSigmoid>);
CTP_REGISTER_KERNEL(hard_swish, CUDA, forward<Kind::HardSwish>);
CTP_REGISTER_KERNEL(swish, CUDA, forward<Kind::Swish>);
CTP_REGISTER_KERNEL(relu6_grad, CUDA, backward<Kind::Relu6>);
CTP_REGISTER_KERNEL(hard_sigmoid_grad, CUDA, backward<Kind::HardSigmoid>);
CTP_REGISTER_KERNEL(hard_swish_grad, CUDA, backward<Kind::HardSwish>);
CTP_REGISTER_KERNEL(swish_grad, CUDA, backward<Kind::Swish>);

}  // namespace ctp::cuda
