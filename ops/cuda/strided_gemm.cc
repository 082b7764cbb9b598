#include "ops/cuda/strided_gemm.h"

#include <cublas_v2.h>

#include <string>

#include "executor/cuda/cuda_check.h"
#include "ops/cuda/cuda_kernel_util.h"
#include "ops/cuda/matrix_pointers.h"

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

// Whether every operand's grid rows follow on evenly (one stride).
bool one_level(const MatrixBatch& a, const MatrixBatch& b, const OutputBatch& c, int64_t batch,
               int64_t inner) {
  if (inner <= 0 || batch <= inner) return true;
  return a.outer_stride == inner * a.stride && b.outer_stride == inner * b.stride &&
         c.outer_stride == inner * c.stride;
}

// The three operands' matrix addresses on the GPU, in a buffer freed (stream
// ordered) with the returned tensor.
Tensor matrix_addresses(DeviceContext& dc, DataType in, DataType out, const MatrixBatch& a,
                        const MatrixBatch& b, const OutputBatch& c, int64_t batch,
                        int64_t inner) {
  const int64_t ei = static_cast<int64_t>(element_size(in));
  const int64_t eo = static_cast<int64_t>(element_size(out));
  Tensor addresses = Tensor::view(
      allocate_uninitialized_buffer(dc.device(), 3 * static_cast<std::size_t>(batch) *
                                                     sizeof(void*)),
      0, DataType::UINT8, {3 * batch * static_cast<int64_t>(sizeof(void*))});
  const launch::MatrixGrid grids[3] = {
      {static_cast<const char*>(a.data), a.outer_stride * ei, a.stride * ei},
      {static_cast<const char*>(b.data), b.outer_stride * ei, b.stride * ei},
      {static_cast<const char*>(c.data), c.outer_stride * eo, c.stride * eo}};
  launch::matrix_pointers(grids, batch, inner, static_cast<const void**>(addresses.raw_data()),
                          dc.compute_stream());
  return addresses;
}

}  // namespace

void strided_gemm(KernelContext& ctx, DataType in, DataType out, int64_t m, int64_t n, int64_t k,
                  float alpha, const MatrixBatch& a, const MatrixBatch& b, const OutputBatch& c,
                  int64_t batch, int64_t inner) {
  if (m == 0 || n == 0 || batch == 0) return;
  DeviceContext& dc = device_context(ctx);
  const bool uniform = one_level(a, b, c, batch, inner);
  if (k == 0) {  // an empty sum: zeros, whatever cuBLAS would make of a depth of 0
    const std::size_t elem = element_size(out);
    for (int64_t i = 0; i < batch; ++i) {
      const int64_t at =
          uniform ? i * c.stride : (i / inner) * c.outer_stride + (i % inner) * c.stride;
      CTP_CUDA_CHECK(cudaMemset2DAsync(static_cast<char*>(c.data) + at * elem, c.ld * elem, 0,
                                       n * elem, m, dc.compute_stream()));
    }
    return;
  }
  cublasHandle_t handle = dc.cublas();
  const float beta = 0;
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T.
  if (!uniform) {
    const Tensor addresses = matrix_addresses(dc, in, out, a, b, c, batch, inner);
    const void* const* p = static_cast<const void* const*>(addresses.raw_data());
    CTP_CUBLAS_CHECK(cublasGemmBatchedEx(
        handle, b.trans ? CUBLAS_OP_T : CUBLAS_OP_N, a.trans ? CUBLAS_OP_T : CUBLAS_OP_N,
        as_int(ctx, n), as_int(ctx, m), as_int(ctx, k), &alpha, p + batch, cuda_type(ctx, in),
        as_int(ctx, b.ld), p, cuda_type(ctx, in), as_int(ctx, a.ld), &beta,
        const_cast<void* const*>(p + 2 * batch), cuda_type(ctx, out), as_int(ctx, c.ld),
        as_int(ctx, batch), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return;
  }
  CTP_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
      handle, b.trans ? CUBLAS_OP_T : CUBLAS_OP_N, a.trans ? CUBLAS_OP_T : CUBLAS_OP_N,
      as_int(ctx, n), as_int(ctx, m), as_int(ctx, k), &alpha, b.data, cuda_type(ctx, in),
      as_int(ctx, b.ld), b.stride, a.data, cuda_type(ctx, in), as_int(ctx, a.ld), a.stride, &beta,
      c.data, cuda_type(ctx, out), as_int(ctx, c.ld), c.stride, as_int(ctx, batch),
      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

}  // namespace ctp::cuda
