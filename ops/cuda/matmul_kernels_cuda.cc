// CUDA kernels of the matrix products on cuBLAS: mul (flattened by
// x/y_num_col_dims), matmul_v2 (transposes, batch broadcasting, 1-D
// operands) and their gradients, under the rules of ops/schema/meta_math.h
// as the CPU kernels. FP32 GEMMs run in true FP32 (the handle's default
// math, no TF32); FP16 and BF16 GEMMs (cublasGemmEx) accumulate in FP32 and
// round each output element once.
#include <cublas_v2.h>

#include "executor/cuda/cuda_check.h"
#include "ops/common/broadcast.h"
#include "ops/cuda/cuda_kernel_util.h"
#include "ops/schema/meta_math.h"

namespace ctp::cuda {
namespace {

int as_int(KernelContext& ctx, int64_t v) {
  if (v > INT32_MAX) ctx.fail("a matrix dim of " + std::to_string(v) +
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

void mul(KernelContext& ctx) {
  const Tensor x = device_input(ctx, "X");
  const Tensor y = device_input(ctx, "Y");
  const meta::MulMeta d = meta::mul(ctx, meta_of(x), meta_of(y));
  dispatch_mixed(x.dtype(), ctx, "X", [&]<typename T>() {
    Tensor& out = device_output(ctx, "Out", 0, x.dtype(), d.out_shape);
    gemm<T>(ctx, false, false, d.m, d.n, d.k, x.data<T>(), y.data<T>(), out.data<T>());
  });
}

void mul_grad(KernelContext& ctx) {
  const Tensor x = device_input(ctx, "X");
  const Tensor y = device_input(ctx, "Y");
  const Tensor dout = device_input(ctx, "Out@GRAD");
  const meta::MulMeta d = meta::mul_grad(ctx, meta_of(x), meta_of(y), meta_of(dout));
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

void matmul_v2(KernelContext& ctx) {
  const Tensor x = device_input(ctx, "X");
  const Tensor y = device_input(ctx, "Y");
  const meta::MatmulMeta d = meta::matmul_v2(ctx, meta_of(x), meta_of(y));
  const BroadcastPlan batch = plan_broadcast(d.batch);
  dispatch_mixed(x.dtype(), ctx, "X", [&]<typename T>() {
    Tensor& out = device_output(ctx, "Out", 0, x.dtype(), d.out_shape);
    const T* xp = x.data<T>();
    const T* yp = y.data<T>();
    T* op = out.data<T>();
    for_each_broadcast(batch, [&](int64_t b, int64_t xb, int64_t yb) {
      gemm<T>(ctx, d.trans_x, d.trans_y, d.m, d.n, d.k, xp + xb * d.x_matrix,
              yp + yb * d.y_matrix, op + b * d.m * d.n);
    });
  });
}

void matmul_v2_grad(KernelContext& ctx) {
  const Tensor x = device_input(ctx, "X");
  const Tensor y = device_input(ctx, "Y");
  const Tensor dout = device_input(ctx, "Out@GRAD");
  const meta::MatmulMeta d = meta::matmul_v2_grad(ctx, meta_of(x), meta_of(y), meta_of(dout));
  const BroadcastPlan batch = plan_broadcast(d.batch);
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
      for_each_broadcast(batch, [&](int64_t b, int64_t xb, int64_t yb) {
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
      for_each_broadcast(batch, [&](int64_t b, int64_t xb, int64_t yb) {
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
