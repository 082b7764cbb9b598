// Matrix products: mul (flattening by x/y_num_col_dims), matmul_v2 (optional
// transposes, batch broadcasting, 1-D operands) and their gradients.
#include "ops/cpu/broadcast.h"
#include "ops/cpu/cpu_kernel_util.h"
#include "ops/cpu/float16_compute.h"
#include "ops/cpu/gemm.h"

namespace ctp::cpu {
namespace {

struct MulDims {
  int64_t m, k, n;
  std::vector<int64_t> out_shape;
};

MulDims mul_dims(KernelContext& ctx, const Tensor& x, const Tensor& y) {
  const int64_t xnc = ctx.attr_int("x_num_col_dims", 1);
  const int64_t ync = ctx.attr_int("y_num_col_dims", 1);
  const auto check = [&](int64_t nc, const Tensor& t, const char* name) {
    if (nc < 1 || nc >= static_cast<int64_t>(t.shape().size()))
      throw Error(ctx.where() + std::string(name) + "_num_col_dims " + std::to_string(nc) +
                  " does not split " + name + " of shape " + shape_string(t.shape()));
  };
  check(xnc, x, "x");
  check(ync, y, "y");
  const auto& xs = x.shape();
  const auto& ys = y.shape();
  MulDims d;
  d.m = product(xs, 0, static_cast<std::size_t>(xnc));
  d.k = product(xs, static_cast<std::size_t>(xnc), xs.size());
  const int64_t ky = product(ys, 0, static_cast<std::size_t>(ync));
  d.n = product(ys, static_cast<std::size_t>(ync), ys.size());
  if (d.k != ky)
    throw Error(ctx.where() + "X " + shape_string(xs) + " flattened to [" + std::to_string(d.m) +
                ", " + std::to_string(d.k) + "] and Y " + shape_string(ys) + " flattened to [" +
                std::to_string(ky) + ", " + std::to_string(d.n) + "] cannot be multiplied");
  d.out_shape.assign(xs.begin(), xs.begin() + xnc);
  d.out_shape.insert(d.out_shape.end(), ys.begin() + ync, ys.end());
  return d;
}

void mul(KernelContext& ctx) {
  const Tensor& x = ctx.input("X");
  const Tensor& y = ctx.input("Y");
  const MulDims d = mul_dims(ctx, x, y);
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
  const MulDims d = mul_dims(ctx, x, y);
  if (dout.numel() != d.m * d.n)
    throw Error(ctx.where() + "Out@GRAD has shape " + shape_string(dout.shape()) +
                ", expected " + shape_string(d.out_shape));
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

// matmul_v2's operands as batches of matrices: 1-D X is a row [1, K] and 1-D
// Y a column [K, 1] (their transposes ignored, their dim dropped from Out).
struct MatmulDims {
  bool trans_x, trans_y;
  int64_t m, k, n;
  int64_t x_matrix, y_matrix;  // elements per matrix of X and Y
  BroadcastPlan batch;         // over the batch dims
  std::vector<int64_t> out_shape;
};

MatmulDims matmul_dims(KernelContext& ctx, const Tensor& x, const Tensor& y) {
  std::vector<int64_t> xs = x.shape(), ys = y.shape();
  if (xs.empty() || ys.empty())
    throw Error(ctx.where() + "X and Y must have rank 1 or more, got " + shape_string(xs) +
                " and " + shape_string(ys));
  MatmulDims d;
  d.trans_x = ctx.attr_bool("trans_x", false);
  d.trans_y = ctx.attr_bool("trans_y", false);
  const bool x_vector = xs.size() == 1, y_vector = ys.size() == 1;
  if (x_vector) {
    xs.insert(xs.begin(), 1);
    d.trans_x = false;
  }
  if (y_vector) {
    ys.push_back(1);
    d.trans_y = false;
  }
  const std::size_t rx = xs.size(), ry = ys.size();
  d.m = d.trans_x ? xs[rx - 1] : xs[rx - 2];
  d.k = d.trans_x ? xs[rx - 2] : xs[rx - 1];
  const int64_t ky = d.trans_y ? ys[ry - 1] : ys[ry - 2];
  d.n = d.trans_y ? ys[ry - 2] : ys[ry - 1];
  if (d.k != ky)
    throw Error(ctx.where() + "X " + shape_string(x.shape()) + " and Y " +
                shape_string(y.shape()) + " (trans_x " + std::to_string(d.trans_x) +
                ", trans_y " + std::to_string(d.trans_y) + ") have inner dims " +
                std::to_string(d.k) + " and " + std::to_string(ky));
  d.x_matrix = xs[rx - 2] * xs[rx - 1];
  d.y_matrix = ys[ry - 2] * ys[ry - 1];
  d.batch = plan_broadcast(ctx, std::vector<int64_t>(xs.begin(), xs.end() - 2),
                           std::vector<int64_t>(ys.begin(), ys.end() - 2), -1);
  d.out_shape = d.batch.out_shape;
  if (!x_vector) d.out_shape.push_back(d.m);
  if (!y_vector) d.out_shape.push_back(d.n);
  return d;
}

void matmul_v2(KernelContext& ctx) {
  const Tensor& x = ctx.input("X");
  const Tensor& y = ctx.input("Y");
  const MatmulDims d = matmul_dims(ctx, x, y);
  Tensor& out = ctx.output("Out");
  dispatch_float(x.dtype(), ctx, "X", [&]<typename T>() {
    out.resize(x.dtype(), d.out_shape);
    const T* xp = x.data<T>();
    const T* yp = y.data<T>();
    T* op = out.data<T>();
    for_each_broadcast(d.batch, [&](int64_t b, int64_t xb, int64_t yb) {
      gemm<T>(d.trans_x, d.trans_y, d.m, d.n, d.k, xp + xb * d.x_matrix, yp + yb * d.y_matrix,
              op + b * d.m * d.n);
    });
  });
}

void matmul_v2_grad(KernelContext& ctx) {
  const Tensor& x = ctx.input("X");
  const Tensor& y = ctx.input("Y");
  const Tensor& dout = ctx.input("Out@GRAD");
  const MatmulDims d = matmul_dims(ctx, x, y);
  if (dout.shape() != d.out_shape)
    throw Error(ctx.where() + "Out@GRAD has shape " + shape_string(dout.shape()) +
                ", expected " + shape_string(d.out_shape));
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
      for_each_broadcast(d.batch, [&](int64_t b, int64_t xb, int64_t yb) {
        const T* g = gp + b * g_matrix;
        const T* yy = yp + yb * d.y_matrix;
        T* target = dxp + xb * d.x_matrix;
        if (d.trans_x) gemm<T>(d.trans_y, true, d.k, d.m, d.n, yy, g, target, true);
        else gemm<T>(false, !d.trans_y, d.m, d.k, d.n, g, yy, target, true);
      });
    }
    if (ctx.has_output("Y@GRAD")) {
      Tensor& dy = ctx.output("Y@GRAD");
      dy.resize(y.dtype(), y.shape());
      fill(dy, 0.0);
      T* dyp = dy.data<T>();
      for_each_broadcast(d.batch, [&](int64_t b, int64_t xb, int64_t yb) {
        const T* g = gp + b * g_matrix;
        const T* xx = xp + xb * d.x_matrix;
        T* target = dyp + yb * d.y_matrix;
        if (d.trans_y) gemm<T>(true, d.trans_x, d.n, d.k, d.m, g, xx, target, true);
        else gemm<T>(!d.trans_x, false, d.k, d.n, d.m, xx, g, target, true);
      });
    }
  });
}

}  // namespace

CTP_REGISTER_KERNEL(mul, CPU, computed_in_float(mul));
CTP_REGISTER_KERNEL(mul_grad, CPU, computed_in_float(mul_grad));
CTP_REGISTER_KERNEL(matmul_v2, CPU, computed_in_float(matmul_v2));
CTP_REGISTER_KERNEL(matmul_v2_grad, CPU, computed_in_float(matmul_v2_grad));

}  // namespace ctp::cpu
