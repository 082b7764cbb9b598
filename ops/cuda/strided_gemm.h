// Batches of row-major matrix products on cuBLAS whose operands are strided
// views of larger tensors: a matrix's rows need not be adjacent (a leading
// dim larger than its width) and matrix i of a batch starts `stride`
// elements after matrix i - 1. Attention reads each head of q, k and v this
// way straight from their [batch, seq, heads, head_dim] layout (rows
// heads * head_dim apart, heads head_dim apart), so no transpose is written.
#pragma once
#include <cstdint>

#include "executor/runtime/kernel.h"

namespace ctp::cuda {

// A batch of row-major matrices: matrix i at data + i * stride elements, its
// rows `ld` elements apart; read transposed when `trans`.
struct MatrixBatch {
  const void* data = nullptr;
  int64_t ld = 0;
  int64_t stride = 0;
  bool trans = false;
};

// The product's batch: matrix i at data + i * stride elements, rows ld apart.
struct OutputBatch {
  void* data = nullptr;
  int64_t ld = 0;
  int64_t stride = 0;
};

// C_i = alpha op(A_i) op(B_i) for i < batch, each [m, n] of depth k, in one
// cublasGemmStridedBatchedEx: A and B of dtype `in` (FP32, FP16 or BF16), C
// of `out` (`in`, or FP32 for 16-bit inputs); products summed in FP32 (true
// FP32 for FP32 inputs, no TF32) and each element of C rounded once. Fails
// naming the op when a size exceeds cuBLAS's 32-bit ints.
void strided_gemm(KernelContext& ctx, DataType in, DataType out, int64_t m, int64_t n, int64_t k,
                  float alpha, const MatrixBatch& a, const MatrixBatch& b, const OutputBatch& c,
                  int64_t batch);

}  // namespace ctp::cuda
