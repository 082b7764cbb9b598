// Batches of row-major matrix products on cuBLAS whose operands are strided
// views of larger tensors: a matrix's rows need not be adjacent (a leading
// dim larger than its width) and matrix i of a batch starts `stride`
// elements after matrix i - 1, or, on a two-level grid, matrix (o, j) at
// o * outer_stride + j * stride. Attention reads each head of q, k and v
// this way straight from their [batch, seq, heads, head_dim] layout (rows
// heads * head_dim apart, heads head_dim apart, batch indices
// seq * heads * head_dim apart), so no transpose is written.
#pragma once
#include <cstdint>

#include "executor/runtime/kernel.h"

namespace ctp::cuda {

// A batch of row-major matrices: matrix i at data + i * stride elements
// (with the call's `inner`: at data + (i / inner) * outer_stride +
// (i % inner) * stride), its rows `ld` elements apart; read transposed when
// `trans`.
struct MatrixBatch {
  const void* data = nullptr;
  int64_t ld = 0;
  int64_t stride = 0;
  bool trans = false;
  int64_t outer_stride = 0;
};

// The product's batch, placed the same way.
struct OutputBatch {
  void* data = nullptr;
  int64_t ld = 0;
  int64_t stride = 0;
  int64_t outer_stride = 0;
};

// C_i = alpha op(A_i) op(B_i) for i < batch, each [m, n] of depth k, in one
// cublasGemmStridedBatchedEx: A and B of dtype `in` (FP32, FP16 or BF16), C
// of `out` (`in`, or FP32 for 16-bit inputs); products summed in FP32 (true
// FP32 for FP32 inputs, no TF32) and each element of C rounded once. Fails
// naming the op when a size exceeds cuBLAS's 32-bit ints. `inner` > 0: the
// batch is a grid of batch / inner rows of `inner` matrices (outer_stride
// apart); where some operand's rows are not `inner` strides apart, one
// cublasGemmBatchedEx takes the matrices' addresses, written on the GPU.
void strided_gemm(KernelContext& ctx, DataType in, DataType out, int64_t m, int64_t n, int64_t k,
                  float alpha, const MatrixBatch& a, const MatrixBatch& b, const OutputBatch& c,
                  int64_t batch, int64_t inner = 0);

}  // namespace ctp::cuda
