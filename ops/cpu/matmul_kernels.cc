// Matrix products: mul (flattening by x/y_num_col_dims), matmul_v2 (optional
// transposes, batch broadcasting, 1-D operands), matmul (v1: the same with
// alpha) and their gradients.
#include "ops/common/broadcast.h"
#include "ops/cpu/cpu_kernel_util.h"
#include "ops/cpu/float16_compute.h"
#include "ops/cpu/gemm.h"
#include "ops/schema/meta_math.h"

namespace ctp::cpu {
namespace {

void mul(KernelContext& ctx) {
  const Tensor& x = ctx.input("X");
  const Tensor& y = ctx.input("Y");
  const meta::MulMeta d = meta::mul(ctx, meta_of(x), meta_of(y));
  Tensor& out = ctx.output("Out");
  dispatch_float(x.dtype(), ctx, "X", [&]<typename T>() {
    out.resize(x.dtype(), d.out_shape);
    gemm<T>(false, false, d.m, d.n, d.k, x.data<T>(), y.data<T>(), out.data<T>());
  });
}

void mul_grad(KernelContext& ctx) {
  const Tensor& x = ctx.input("X");
  const Tensor& y = ctx.input("Y");
  const Tensor& dout = ctx.input("Out@GRAD");
  const meta::MulMeta d = meta::mul_grad(ctx, meta_of(x), meta_of(y), meta_of(dout));
  dispatch_float(x.dtype(), ctx, "X", [&]<typename T>() {
    if (ctx.has_output("X@GRAD")) {
      Tensor& dx = ctx.output("X@GRAD");
      dx.resize(x.dtype(), x.shape());
      gemm<T>(false, true, d.m, d.k, d.n, dout.data<T>(), y.data<T>(), dx.data<T>());
    }
    if (ctx.has_output("Y@GRAD")) {
      Tensor& dy = ctx.output("Y@GRAD");
      dy.resize(y.dtype(), y.shape());
      gemm<T>(true, false, d.k, d.n, d.m, x.data<T>(), dout.data<T>(), dy.data<T>());
    }
  });
}

// Multiplies every element by alpha (matmul v1's scale; nothing at 1).
template <typename T>
void scale_by(Tensor& t, double alpha) {
  if (alpha == 1) return;
  T* p = t.data<T>();
  for (int64_t i = 0, n = t.numel(); i < n; ++i) p[i] = static_cast<T>(p[i] * alpha);
}

// matmul_v2 and matmul (v1): the products the rules `d` describe.
void matmul_product(KernelContext& ctx, const meta::MatmulMeta& d) {
  const Tensor& x = ctx.input("X");
  const Tensor& y = ctx.input("Y");
  const BroadcastPlan batch = plan_broadcast(d.batch);
  Tensor& out = ctx.output("Out");
  dispatch_float(x.dtype(), ctx, "X", [&]<typename T>() {
    out.resize(x.dtype(), d.out_shape);
    const T* xp = x.data<T>();
    const T* yp = y.data<T>();
    T* op = out.data<T>();
    for_each_broadcast(batch, [&](int64_t b, int64_t xb, int64_t yb) {
      gemm<T>(d.trans_x, d.trans_y, d.m, d.n, d.k, xp + xb * d.x_matrix, yp + yb * d.y_matrix,
              op + b * d.m * d.n);
    });
    scale_by<T>(out, d.alpha);
  });
}

// Their gradients; with alpha, dX and dY are alpha times matmul_v2's.
void matmul_product_grad(KernelContext& ctx, const meta::MatmulMeta& d) {
  const Tensor& x = ctx.input("X");
  const Tensor& y = ctx.input("Y");
  const Tensor& dout = ctx.input("Out@GRAD");
  const BroadcastPlan batch = plan_broadcast(d.batch);
  dispatch_float(x.dtype(), ctx, "X", [&]<typename T>() {
    const T* xp = x.data<T>();
    const T* yp = y.data<T>();
    const T* gp = dout.data<T>();
    const int64_t g_matrix = d.m * d.n;
    // With A = op(X) and B = op(Y): dA = dOut B^T and dB = A^T dOut; a
    // transposed operand's gradient is stored transposed. Batches that were
    // broadcast add up into the one matrix they came from.
    if (ctx.has_output("X@GRAD")) {
      Tensor& dx = ctx.output("X@GRAD");
      dx.resize(x.dtype(), x.shape());
      fill(dx, 0.0);
      T* dxp = dx.data<T>();
      for_each_broadcast(batch, [&](int64_t b, int64_t xb, int64_t yb) {
        const T* g = gp + b * g_matrix;
        const T* yy = yp + yb * d.y_matrix;
        T* target = dxp + xb * d.x_matrix;
        if (d.trans_x) gemm<T>(d.trans_y, true, d.k, d.m, d.n, yy, g, target, true);
        else gemm<T>(false, !d.trans_y, d.m, d.k, d.n, g, yy, target, true);
      });
      scale_by<T>(dx, d.alpha);
    }
    if (ctx.has_output("Y@GRAD")) {
      Tensor& dy = ctx.output("Y@GRAD");
      dy.resize(y.dtype(), y.shape());
      fill(dy, 0.0);
      T* dyp = dy.data<T>();
      for_each_broadcast(batch, [&](int64_t b, int64_t xb, int64_t yb) {
        const T* g = gp + b * g_matrix;
        const T* xx = xp + xb * d.x_matrix;
        T* target = dyp + yb * d.y_matrix;
        if (d.trans_y) gemm<T>(true, d.trans_x, d.n, d.k, d.m, g, xx, target, true);
        else gemm<T>(!d.trans_x, false, d.k, d.n, d.m, xx, g, target, true);
      });
      scale_by<T>(dy, d.alpha);
    }
  });
}

void matmul_v2(KernelContext& ctx) {
  matmul_product(ctx, meta::matmul_v2(ctx, meta_of(ctx.input("X")), meta_of(ctx.input("Y"))));
}
void matmul_v2_grad(KernelContext& ctx) {
  matmul_product_grad(ctx, meta::matmul_v2_grad(ctx, meta_of(ctx.input("X")),
                                                meta_of(ctx.input("Y")),
                                                meta_of(ctx.input("Out@GRAD"))));
}
void matmul(KernelContext& ctx) {
  matmul_product(ctx, meta::matmul(ctx, meta_of(ctx.input("X")), meta_of(ctx.input("Y"))));
}
void matmul_grad(KernelContext& ctx) {
  matmul_product_grad(ctx, meta::matmul_grad(ctx, meta_of(ctx.input("X")),
                                             meta_of(ctx.input("Y")),
                                             meta_of(ctx.input("Out@GRAD"))));
}

}  // namespace

CTP_REGISTER_KERNEL(mul, CPU, computed_in_float(mul));
CTP_REGISTER_KERNEL(mul_grad, CPU, computed_in_float(mul_grad));
CTP_REGISTER_KERNEL(matmul_v2, CPU, computed_in_float(matmul_v2));
CTP_REGISTER_KERNEL(matmul_v2_grad, CPU, computed_in_float(matmul_v2_grad));
CTP_REGISTER_KERNEL(matmul, CPU, computed_in_float(matmul));
CTP_REGISTER_KERNEL(matmul_grad, CPU, computed_in_float(matmul_grad));

}  // namespace ctp::cpu
