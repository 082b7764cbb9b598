// CUDA kernels of the matrix products on cuBLAS: mul (flattened by
// x/y_num_col_dims), matmul_v2 (transposes, batch broadcasting, 1-D
// operands) and their gradients, with the CPU kernels' shape rules. FP32 GEMMs
// run in true FP32 (the handle's default math, no TF32); FP16 and BF16 GEMMs
// (cublasGemmEx) accumulate in FP32 and round each output element once.
#include <cublas_v2.h>

#include "executor/cuda/cuda_check.h"
#include "ops/cpu/broadcast.h"
#include "ops/cpu/cpu_kernel_util.h"
#include "ops/cuda/cuda_kernel_util.h"

namespace ctp::cuda {
namespace {

using cpu::product;
using cpu::shape_string;

int as_int(KernelContext& ctx, int64_t v) {
  if (v > INT32_MAX) throw Error(ctx.where() + "a matrix dim of " + std::to_string(v) +
                                 " exceeds cuBLAS's 32-bit sizes");
  return static_cast<int>(v);
}

// Row-major C[m,n] (= or +=) op(A)[m,k] op(B)[k,n] as cuBLAS's column-major
// C^T = op(B)^T op(A)^T.
template <typename T>
void gemm(KernelContext& ctx, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
          const T* a, const T* b, T* c, bool accumulate = false) {
  cublasHandle_t handle = device_context(ctx).cublas();
  const cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int lda = as_int(ctx, trans_a ? m : k), ldb = as_int(ctx, trans_b ? k : n);
  if (m == 0 || n == 0) return;
  if constexpr (std::is_same_v<T, launch::Half> || std::is_same_v<T, launch::BFloat16>) {
    const float alpha = 1, beta = accumulate ? 1 : 0;
    const cudaDataType_t type = std::is_same_v<T, launch::Half> ? CUDA_R_16F : CUDA_R_16BF;
    CTP_CUBLAS_CHECK(cublasGemmEx(handle, op_b, op_a, as_int(ctx, n), as_int(ctx, m),
                                  as_int(ctx, k), &alpha, b, type, ldb, a, type, lda, &beta, c,
                                  type, as_int(ctx, n), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  } else if constexpr (std::is_same_v<T, float>) {
    const float alpha = 1, beta = accumulate ? 1 : 0;
    CTP_CUBLAS_CHECK(cublasSgemm(handle, op_b, op_a, as_int(ctx, n), as_int(ctx, m),
                                 as_int(ctx, k), &alpha, b, ldb, a, lda, &beta, c,
                                 as_int(ctx, n)));
  } else {
    const double alpha = 1, beta = accumulate ? 1 : 0;
    CTP_CUBLAS_CHECK(cublasDgemm(handle, op_b, op_a, as_int(ctx, n), as_int(ctx, m),
                                 as_int(ctx, k), &alpha, b, ldb, a, lda, &beta, c,
                                 as_int(ctx, n)));
  }
}

// X, Y (and Out@GRAD) in one dtype: cuBLAS reads them as one type.
void require_one_dtype(KernelContext& ctx, const Tensor& x, const Tensor& y,
                       const Tensor* dout = nullptr) {
  if (x.dtype() != y.dtype() || (dout && dout->dtype() != x.dtype()))
    throw Error(ctx.where() + "X is " + std::string(to_string(x.dtype())) + " but Y is " +
                std::string(to_string(y.dtype())) +
                (dout ? " and Out@GRAD " + std::string(to_string(dout->dtype())) : std::string()));
}

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
    throw Error(ctx.where() + "X " + shape_string(xs) + " and Y " + shape_string(ys) +
                " flattened to [" + std::to_string(d.m) + ", " + std::to_string(d.k) + "] and [" +
                std::to_string(ky) + ", " + std::to_string(d.n) + "] cannot be multiplied");
  d.out_shape.assign(xs.begin(), xs.begin() + xnc);
  d.out_shape.insert(d.out_shape.end(), ys.begin() + ync, ys.end());
  return d;
}

void mul(KernelContext& ctx) {
  const Tensor x = device_input(ctx, "X");
  const Tensor y = device_input(ctx, "Y");
  const MulDims d = mul_dims(ctx, x, y);
  require_one_dtype(ctx, x, y);
  dispatch_mixed(x.dtype(), ctx, "X", [&]<typename T>() {
    Tensor& out = device_output(ctx, "Out", 0, x.dtype(), d.out_shape);
    gemm<T>(ctx, false, false, d.m, d.n, d.k, x.data<T>(), y.data<T>(), out.data<T>());
  });
}

void mul_grad(KernelContext& ctx) {
  const Tensor x = device_input(ctx, "X");
  const Tensor y = device_input(ctx, "Y");
  const Tensor dout = device_input(ctx, "Out@GRAD");
  const MulDims d = mul_dims(ctx, x, y);
  require_one_dtype(ctx, x, y, &dout);
  if (dout.numel() != d.m * d.n)
    throw Error(ctx.where() + "Out@GRAD has shape " + shape_string(dout.shape()) +
                ", expected " + shape_string(d.out_shape));
  dispatch_mixed(x.dtype(), ctx, "X", [&]<typename T>() {
    if (ctx.has_output("X@GRAD")) {
      Tensor& dx = device_output(ctx, "X@GRAD", 0, x.dtype(), x.shape());
      gemm<T>(ctx, false, true, d.m, d.k, d.n, dout.data<T>(), y.data<T>(), dx.data<T>());
    }
    if (ctx.has_output("Y@GRAD")) {
      Tensor& dy = device_output(ctx, "Y@GRAD", 0, y.dtype(), y.shape());
      gemm<T>(ctx, true, false, d.k, d.n, d.m, x.data<T>(), dout.data<T>(), dy.data<T>());
    }
  });
}

struct MatmulDims {
  bool trans_x, trans_y;
  int64_t m, k, n;
  int64_t x_matrix, y_matrix;
  cpu::BroadcastPlan batch;
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
                shape_string(y.shape()) + " have inner dims " + std::to_string(d.k) + " and " +
                std::to_string(ky));
  d.x_matrix = xs[rx - 2] * xs[rx - 1];
  d.y_matrix = ys[ry - 2] * ys[ry - 1];
  d.batch = cpu::plan_broadcast(ctx, std::vector<int64_t>(xs.begin(), xs.end() - 2),
                                std::vector<int64_t>(ys.begin(), ys.end() - 2), -1);
  d.out_shape = d.batch.out_shape;
  if (!x_vector) d.out_shape.push_back(d.m);
  if (!y_vector) d.out_shape.push_back(d.n);
  return d;
}

void matmul_v2(KernelContext& ctx) {
  const Tensor x = device_input(ctx, "X");
  const Tensor y = device_input(ctx, "Y");
  const MatmulDims d = matmul_dims(ctx, x, y);
  require_one_dtype(ctx, x, y);
  dispatch_mixed(x.dtype(), ctx, "X", [&]<typename T>() {
    Tensor& out = device_output(ctx, "Out", 0, x.dtype(), d.out_shape);
    const T* xp = x.data<T>();
    const T* yp = y.data<T>();
    T* op = out.data<T>();
    cpu::for_each_broadcast(d.batch, [&](int64_t b, int64_t xb, int64_t yb) {
      gemm<T>(ctx, d.trans_x, d.trans_y, d.m, d.n, d.k, xp + xb * d.x_matrix,
              yp + yb * d.y_matrix, op + b * d.m * d.n);
    });
  });
}

void matmul_v2_grad(KernelContext& ctx) {
  const Tensor x = device_input(ctx, "X");
  const Tensor y = device_input(ctx, "Y");
  const Tensor dout = device_input(ctx, "Out@GRAD");
  const MatmulDims d = matmul_dims(ctx, x, y);
  require_one_dtype(ctx, x, y, &dout);
  if (dout.shape() != d.out_shape)
    throw Error(ctx.where() + "Out@GRAD has shape " + shape_string(dout.shape()) +
                ", expected " + shape_string(d.out_shape));
  DeviceContext& dc = device_context(ctx);
  dispatch_mixed(x.dtype(), ctx, "X", [&]<typename T>() {
    const T* xp = x.data<T>();
    const T* yp = y.data<T>();
    const T* gp = dout.data<T>();
    const int64_t g_matrix = d.m * d.n;
    // dA = dOut B^T, dB = A^T dOut (stored transposed for a transposed
    // operand); broadcast batches accumulate into their one source matrix.
    if (ctx.has_output("X@GRAD")) {
      Tensor& dx = device_output(ctx, "X@GRAD", 0, x.dtype(), x.shape());
      CTP_CUDA_CHECK(cudaMemsetAsync(dx.raw_data(), 0, dx.bytes(), dc.compute_stream()));
      T* dxp = dx.data<T>();
      cpu::for_each_broadcast(d.batch, [&](int64_t b, int64_t xb, int64_t yb) {
        const T* g = gp + b * g_matrix;
        const T* yy = yp + yb * d.y_matrix;
        T* target = dxp + xb * d.x_matrix;
        if (d.trans_x) gemm<T>(ctx, d.trans_y, true, d.k, d.m, d.n, yy, g, target, true);
        else gemm<T>(ctx, false, !d.trans_y, d.m, d.k, d.n, g, yy, target, true);
      });
    }
    if (ctx.has_output("Y@GRAD")) {
      Tensor& dy = device_output(ctx, "Y@GRAD", 0, y.dtype(), y.shape());
      CTP_CUDA_CHECK(cudaMemsetAsync(dy.raw_data(), 0, dy.bytes(), dc.compute_stream()));
      T* dyp = dy.data<T>();
      cpu::for_each_broadcast(d.batch, [&](int64_t b, int64_t xb, int64_t yb) {
        const T* g = gp + b * g_matrix;
        const T* xx = xp + xb * d.x_matrix;
        T* target = dyp + yb * d.y_matrix;
        if (d.trans_y) gemm<T>(ctx, true, d.trans_x, d.n, d.k, d.m, g, xx, target, true);
        else gemm<T>(ctx, !d.trans_x, false, d.k, d.n, d.m, xx, g, target, true);
      });
    }
  });
}

}  // namespace

CTP_REGISTER_KERNEL(mul, CUDA, mul);
CTP_REGISTER_KERNEL(mul_grad, CUDA, mul_grad);
CTP_REGISTER_KERNEL(matmul_v2, CUDA, matmul_v2);
CTP_REGISTER_KERNEL(matmul_v2_grad, CUDA, matmul_v2_grad);

}  // namespace ctp::cuda
