#include "ops/cuda/strided_gemm.h"

#include <cublas_v2.h>

#include <string>

#include "executor/cuda/cuda_check.h"
#include "ops/cuda/cuda_kernel_util.h"

namespace ctp::cuda {
namespace {

int as_int(KernelContext& ctx, int64_t v) {
  if (v > INT32_MAX)
    ctx.fail("a matrix size of " + std::to_string(v) + " exceeds cuBLAS's 32-bit sizes");
  return static_cast<int>(v);
}

cudaDataType_t cuda_type(KernelContext& ctx, DataType t) {
  switch (t) {
    case DataType::FP32: return CUDA_R_32F;
    case DataType::FP16: return CUDA_R_16F;
    case DataType::BF16: return CUDA_R_16BF;
    default: ctx.fail("strided_gemm takes FP32, FP16 or BF16, not " + std::string(to_string(t)));
  }
}

}  // namespace

void strided_gemm(KernelContext& ctx, DataType in, DataType out, int64_t m, int64_t n, int64_t k,
                  float alpha, const MatrixBatch& a, const MatrixBatch& b, const OutputBatch& c,
                  int64_t batch) {
  if (m == 0 || n == 0 || batch == 0) return;
  DeviceContext& dc = device_context(ctx);
  if (k == 0) {  // an empty sum: zeros, whatever cuBLAS would make of a depth of 0
    const std::size_t elem = element_size(out);
    for (int64_t i = 0; i < batch; ++i)
      CTP_CUDA_CHECK(cudaMemset2DAsync(static_cast<char*>(c.data) + i * c.stride * elem,
                                       c.ld * elem, 0, n * elem, m, dc.compute_stream()));
    return;
  }
  cublasHandle_t handle = dc.cublas();
  const float beta = 0;
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T.
  CTP_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
      handle, b.trans ? CUBLAS_OP_T : CUBLAS_OP_N, a.trans ? CUBLAS_OP_T : CUBLAS_OP_N,
      as_int(ctx, n), as_int(ctx, m), as_int(ctx, k), &alpha, b.data, cuda_type(ctx, in),
      as_int(ctx, b.ld), b.stride, a.data, cuda_type(ctx, in), as_int(ctx, a.ld), a.stride, &beta,
      c.data, cuda_type(ctx, out), as_int(ctx, c.ld), c.stride, as_int(ctx, batch),
      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

}  // namespace ctp::cuda
