// CUDA kernels of softmax and softmax_grad under the rules of
// ops/schema/meta_nn.h: FP32, FP64, FP16 and BF16 (16-bit ones computed in
// float, as on the CPU), queued on the compute stream.
#include "ops/common/kernel_util.h"
#include "ops/cuda/cuda_kernel_util.h"
#include "ops/cuda/device_kernels.h"
#include "ops/schema/meta_nn.h"

namespace ctp::cuda {
namespace {

void softmax(KernelContext& ctx) {
  const Tensor x = device_input(ctx, "X");
  const meta::SoftmaxMeta m = meta::softmax(ctx, meta_of(x));
  dispatch_mixed(x.dtype(), ctx, "X", [&]<typename T>() {
    Tensor& out = device_output(ctx, "Out", 0, x.dtype(), x.shape());
    launch::softmax<T>(x.data<T>(), out.data<T>(), m.outer, m.classes, m.inner,
                       device_context(ctx).compute_stream());
  });
}

void softmax_grad(KernelContext& ctx) {
  const Tensor out = device_input(ctx, "Out");
  const Tensor dout = device_input(ctx, "Out@GRAD");
  const meta::SoftmaxMeta m = meta::softmax_grad(ctx, meta_of(out), meta_of(dout));
  dispatch_mixed(out.dtype(), ctx, "Out", [&]<typename T>() {
    Tensor& dx = device_output(ctx, "X@GRAD", 0, out.dtype(), out.shape());
    launch::softmax_grad<T>(out.data<T>(), dout.data<T>(), dx.data<T>(), m.outer, m.classes,
                            m.inner, device_context(ctx).compute_stream());
  });
}

}  // namespace

CTP_REGISTER_KERNEL(softmax, CUDA, softmax);
CTP_REGISTER_KERNEL(softmax_grad, CUDA, softmax_grad);

}  // namespace ctp::cuda
