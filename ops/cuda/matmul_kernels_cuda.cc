// CUDA kernels of the matrix products on cuBLAS: mul (flattened by
// x/y_num_col_dims), matmul_v2 (transposes, batch broadcasting, 1-D
// operands), matmul (v1: the same, then scaled by alpha in place; a 16-bit
// result is then rounded twice where the CPU rounds once) and their
// gradients, under the rules of ops/schema/meta_math.h
// as the CPU kernels. FP32 GEMMs run in true FP32 (the handle's default
// math, no TF32); FP16 and BF16 GEMMs (cublasGemmEx) accumulate in FP32 and
// round each output element once. matmul_v2's batches are one strided
// batched GEMM whenever each operand's batch index steps evenly (batched,
// or broadcast as a whole), or one GEMM when X's batches meet one Y matrix;
// other broadcasts, and gradients that add several batches into one matrix,
// run a GEMM per batch.
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

// C_i (= or +=) op(A_i) op(B_i) for i < batch, A_i = a + i * stride_a
// (elements) and so on: one cublas*StridedBatched call.
template <typename T>
void gemm_batched(KernelContext& ctx, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                  const T* a, int64_t stride_a, const T* b, int64_t stride_b, T* c,
                  int64_t stride_c, int64_t batch, bool accumulate = false) {
  cublasHandle_t handle = device_context(ctx).cublas();
  const cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int lda = as_int(ctx, trans_a ? m : k), ldb = as_int(ctx, trans_b ? k : n);
  if (m == 0 || n == 0 || batch == 0) return;
  const int mi = as_int(ctx, m), ni = as_int(ctx, n), ki = as_int(ctx, k);
  const int count = as_int(ctx, batch);
  if constexpr (std::is_same_v<T, launch::Half> || std::is_same_v<T, launch::BFloat16>) {
    const float alpha = 1, beta = accumulate ? 1 : 0;
    const cudaDataType_t type = std::is_same_v<T, launch::Half> ? CUDA_R_16F : CUDA_R_16BF;
    CTP_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
        handle, op_b, op_a, ni, mi, ki, &alpha, b, type, ldb, stride_b, a, type, lda, stride_a,
        &beta, c, type, ni, stride_c, count, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  } else if constexpr (std::is_same_v<T, float>) {
    const float alpha = 1, beta = accumulate ? 1 : 0;
    CTP_CUBLAS_CHECK(cublasSgemmStridedBatched(handle, op_b, op_a, ni, mi, ki, &alpha, b, ldb,
                                               stride_b, a, lda, stride_a, &beta, c, ni,
                                               stride_c, count));
  } else {
    const double alpha = 1, beta = accumulate ? 1 : 0;
    CTP_CUBLAS_CHECK(cublasDgemmStridedBatched(handle, op_b, op_a, ni, mi, ki, &alpha, b, ldb,
                                               stride_b, a, lda, stride_a, &beta, c, ni,
                                               stride_c, count));
  }
}

// matmul_v2's batches as even steps: batch i uses X's matrix i * x_step
// and Y's matrix i * y_step (0: broadcast as a whole). `even` is false when
// the broadcast interleaves (X [2, 1], Y [3] batches).
struct BatchSteps {
  bool even = true;
  int64_t count = 0, x_step = 0, y_step = 0;
};

BatchSteps batch_steps(const BroadcastPlan& batch) {
  BatchSteps s;
  for_each_broadcast(batch, [&](int64_t b, int64_t xb, int64_t yb) {
    if (b == 1) {
      s.x_step = xb;
      s.y_step = yb;
    }
    if (xb != b * s.x_step || yb != b * s.y_step) s.even = false;
    s.count = b + 1;
  });
  return s;
}

// X's batches against one Y matrix (a linear layer on [batch, seq, hidden]):
// X's batches, untransposed and contiguous, are one [count * m, k] matrix,
// so the product and both gradients are single GEMMs. dY then sums over
// every row at once: as a GEMM per batch, each adding a [k, n] product of
// depth m into dY, BERT-large's weight gradients took 22 ms a step.
bool folds_batches(const meta::MatmulMeta& d, const BatchSteps& steps) {
  return steps.even && steps.count > 1 && steps.x_step == 1 && steps.y_step == 0 && !d.trans_x;
}

template <typename T>
void zero(KernelContext& ctx, T* p, int64_t elements) {
  CTP_CUDA_CHECK(cudaMemsetAsync(p, 0, static_cast<std::size_t>(elements) * sizeof(T),
                                 device_context(ctx).compute_stream()));
}

// With A = op(X) and B = op(Y): dA = dOut B^T, stored transposed for a
// transposed X. One strided batched GEMM when every batch has its own dX
// matrix; batches broadcast from one X matrix add up into it one by one.
template <typename T>
void matmul_dx(KernelContext& ctx, const meta::MatmulMeta& d, const BroadcastPlan& batch,
               const BatchSteps& steps, const T* yp, const T* gp, T* dxp, int64_t dx_elements) {
  const int64_t g_matrix = d.m * d.n;
  if (folds_batches(d, steps)) {
    gemm<T>(ctx, false, !d.trans_y, steps.count * d.m, d.k, d.n, gp, yp, dxp);
    return;
  }
  if (steps.even && (steps.x_step != 0 || steps.count == 1)) {  // each dX matrix once
    const int64_t sy = steps.y_step * d.y_matrix, sx = steps.x_step * d.x_matrix;
    if (d.trans_x)
      gemm_batched<T>(ctx, d.trans_y, true, d.k, d.m, d.n, yp, sy, gp, g_matrix, dxp, sx,
                      steps.count);
    else
      gemm_batched<T>(ctx, false, !d.trans_y, d.m, d.k, d.n, gp, g_matrix, yp, sy, dxp, sx,
                      steps.count);
    return;
  }
  zero(ctx, dxp, dx_elements);
  for_each_broadcast(batch, [&](int64_t b, int64_t xb, int64_t yb) {
    const T* g = gp + b * g_matrix;
    const T* yy = yp + yb * d.y_matrix;
    T* target = dxp + xb * d.x_matrix;
    if (d.trans_x) gemm<T>(ctx, d.trans_y, true, d.k, d.m, d.n, yy, g, target, true);
    else gemm<T>(ctx, false, !d.trans_y, d.m, d.k, d.n, g, yy, target, true);
  });
}

// dB = A^T dOut, the same way.
template <typename T>
void matmul_dy(KernelContext& ctx, const meta::MatmulMeta& d, const BroadcastPlan& batch,
               const BatchSteps& steps, const T* xp, const T* gp, T* dyp, int64_t dy_elements) {
  const int64_t g_matrix = d.m * d.n;
  if (folds_batches(d, steps)) {
    const int64_t rows = steps.count * d.m;
    if (d.trans_y) gemm<T>(ctx, true, false, d.n, d.k, rows, gp, xp, dyp);
    else gemm<T>(ctx, true, false, d.k, d.n, rows, xp, gp, dyp);
    return;
  }
  if (steps.even && (steps.y_step != 0 || steps.count == 1)) {  // each dY matrix once
    const int64_t sy = steps.y_step * d.y_matrix, sx = steps.x_step * d.x_matrix;
    if (d.trans_y)
      gemm_batched<T>(ctx, true, d.trans_x, d.n, d.k, d.m, gp, g_matrix, xp, sx, dyp, sy,
                      steps.count);
    else
      gemm_batched<T>(ctx, !d.trans_x, false, d.k, d.n, d.m, xp, sx, gp, g_matrix, dyp, sy,
                      steps.count);
    return;
  }
  zero(ctx, dyp, dy_elements);
  for_each_broadcast(batch, [&](int64_t b, int64_t xb, int64_t yb) {
    const T* g = gp + b * g_matrix;
    const T* xx = xp + xb * d.x_matrix;
    T* target = dyp + yb * d.y_matrix;
    if (d.trans_y) gemm<T>(ctx, true, d.trans_x, d.n, d.k, d.m, g, xx, target, true);
    else gemm<T>(ctx, !d.trans_x, false, d.k, d.n, d.m, xx, g, target, true);
  });
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

// Multiplies n elements by alpha in place (matmul v1's scale; nothing at 1),
// rounding as the CPU kernel does.
template <typename T>
void scale_by(KernelContext& ctx, T* p, int64_t n, double alpha) {
  if (alpha != 1) launch::scale<T>(p, p, n, alpha, 0.0, true, device_context(ctx).compute_stream());
}

// matmul_v2 and matmul (v1): the products the rules of `Rules` describe.
template <auto Rules>
void matmul_product(KernelContext& ctx) {
  const Tensor x = device_input(ctx, "X");
  const Tensor y = device_input(ctx, "Y");
  const meta::MatmulMeta d = Rules(ctx, meta_of(x), meta_of(y));
  const BroadcastPlan batch = plan_broadcast(d.batch);
  dispatch_mixed(x.dtype(), ctx, "X", [&]<typename T>() {
    Tensor& out = device_output(ctx, "Out", 0, x.dtype(), d.out_shape);
    const T* xp = x.data<T>();
    const T* yp = y.data<T>();
    T* op = out.data<T>();
    const BatchSteps steps = batch_steps(batch);
    if (folds_batches(d, steps)) {
      gemm<T>(ctx, false, d.trans_y, steps.count * d.m, d.n, d.k, xp, yp, op);
    } else if (steps.even) {
      gemm_batched<T>(ctx, d.trans_x, d.trans_y, d.m, d.n, d.k, xp, steps.x_step * d.x_matrix, yp,
                      steps.y_step * d.y_matrix, op, d.m * d.n, steps.count);
    } else {
      for_each_broadcast(batch, [&](int64_t b, int64_t xb, int64_t yb) {
        gemm<T>(ctx, d.trans_x, d.trans_y, d.m, d.n, d.k, xp + xb * d.x_matrix,
                yp + yb * d.y_matrix, op + b * d.m * d.n);
      });
    }
    scale_by<T>(ctx, op, out.numel(), d.alpha);
  });
}

// Their gradients; with alpha, dX and dY are alpha times matmul_v2's.
template <auto Rules>
void matmul_product_grad(KernelContext& ctx) {
  const Tensor x = device_input(ctx, "X");
  const Tensor y = device_input(ctx, "Y");
  const Tensor dout = device_input(ctx, "Out@GRAD");
  const meta::MatmulMeta d = Rules(ctx, meta_of(x), meta_of(y), meta_of(dout));
  const BroadcastPlan batch = plan_broadcast(d.batch);
  const BatchSteps steps = batch_steps(batch);
  dispatch_mixed(x.dtype(), ctx, "X", [&]<typename T>() {
    if (ctx.has_output("X@GRAD")) {
      Tensor& dx = device_output(ctx, "X@GRAD", 0, x.dtype(), x.shape());
      matmul_dx<T>(ctx, d, batch, steps, y.data<T>(), dout.data<T>(), dx.data<T>(), dx.numel());
      scale_by<T>(ctx, dx.data<T>(), dx.numel(), d.alpha);
    }
    if (ctx.has_output("Y@GRAD")) {
      Tensor& dy = device_output(ctx, "Y@GRAD", 0, y.dtype(), y.shape());
      matmul_dy<T>(ctx, d, batch, steps, x.data<T>(), dout.data<T>(), dy.data<T>(), dy.numel());
      scale_by<T>(ctx, dy.data<T>(), dy.numel(), d.alpha);
    }
  });
}

}  // namespace

CTP_REGISTER_KERNEL(mul, CUDA, mul);
CTP_REGISTER_KERNEL(mul_grad, CUDA, mul_grad);
CTP_REGISTER_KERNEL(matmul_v2, CUDA, matmul_product<meta::matmul_v2>);
CTP_REGISTER_KERNEL(matmul_v2_grad, CUDA, matmul_product_grad<meta::matmul_v2_grad>);
CTP_REGISTER_KERNEL(matmul, CUDA, matmul_product<meta::matmul>);
CTP_REGISTER_KERNEL(matmul_grad, CUDA, matmul_product_grad<meta::matmul_grad>);

}  // namespace ctp::cuda
