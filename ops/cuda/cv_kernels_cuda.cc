// CUDA kernels of pool2d and pool2d_grad (FP32, FP64, FP16, BF16) under the
// rules of ops/schema/meta_conv.h, launching ops/cuda/cv_kernels.cu. pool2d
// has its own kernels rather than cuDNN's: cuDNN pools with one padding per
// dim and has no adaptive windows or ceil_mode, which Paddle's pool2d has.
// batch_norm's are in batch_norm_kernels_cuda.cc.
#include "ops/common/kernel_util.h"
#include "ops/cuda/cuda_kernel_util.h"
#include "ops/cuda/cv_device_kernels.h"
#include "ops/schema/meta_conv.h"

namespace ctp::cuda {
namespace {

launch::PoolGeometry geometry_of(const meta::Pool2dMeta& m) {
  launch::PoolGeometry g{};
  g.planes = m.batch * m.channels;
  g.in_h = m.in_h;
  g.in_w = m.in_w;
  g.out_h = m.out_h;
  g.out_w = m.out_w;
  for (int d = 0; d < 2; ++d) {
    g.kernel[d] = m.window.kernel[static_cast<std::size_t>(d)];
    g.stride[d] = m.window.stride[static_cast<std::size_t>(d)];
    g.pad_before[d] = m.window.pad_before(d);
  }
  g.max = m.max;
  g.adaptive = m.adaptive;
  g.exclusive = m.exclusive;
  return g;
}

void pool2d(KernelContext& ctx) {
  const Tensor x = device_input(ctx, "X");
  const meta::Pool2dMeta m = meta::pool2d(ctx, meta_of(x));
  dispatch_mixed(x.dtype(), ctx, "X", [&]<typename T>() {
    Tensor& out = device_output(ctx, "Out", 0, x.dtype(), m.out_shape);
    launch::pool2d<T>(x.data<T>(), out.data<T>(), geometry_of(m),
                      device_context(ctx).compute_stream());
  });
}

void pool2d_grad(KernelContext& ctx) {
  const Tensor x = device_input(ctx, "X");
  const Tensor out = device_input(ctx, "Out");
  const Tensor dout = device_input(ctx, "Out@GRAD");
  const meta::Pool2dMeta m = meta::pool2d_grad(ctx, meta_of(x), meta_of(out), meta_of(dout));
  if (!ctx.has_output("X@GRAD")) return;
  dispatch_mixed(x.dtype(), ctx, "X", [&]<typename T>() {
    Tensor& dx = device_output(ctx, "X@GRAD", 0, x.dtype(), x.shape());
    launch::pool2d_grad<T>(x.data<T>(), out.data<T>(), dout.data<T>(), dx.data<T>(),
                           geometry_of(m), device_context(ctx).compute_stream());
  });
}

}  // namespace

CTP_REGISTER_KERNEL(pool2d, CUDA, pool2d);
CTP_REGISTER_KERNEL(pool2d_grad, CUDA, pool2d_grad);

}  // namespace ctp::cuda
