// Launchers of the device code of the shape ops and the NLP layers
// (strided_copy.cu, layer_norm.cu, embedding.cu), declared apart from device_kernels.h so that these op
// families can grow without touching the shared list; same conventions.
#pragma once
#include <cstdint>

#include "ops/cuda/device_kernels.h"

namespace ctp::cuda::launch {

// ops/common/strided_copy.h's copy as plain arrays: element (i_0..i_n) of
// `shape` goes from src_offset + sum(i_d * src_strides[d]) to dst_offset +
// sum(i_d * dst_strides[d]).
struct StridedIndex {
  int rank = 0;
  int64_t shape[kMaxDims] = {};
  int64_t src_strides[kMaxDims] = {};
  int64_t dst_strides[kMaxDims] = {};
  int64_t src_offset = 0, dst_offset = 0;
};
// Elements of element_size bytes (1, 2, 4 or 8), any dtype.
void strided_copy(const void* src, void* dst, int element_size, const StridedIndex& index,
                  Stream s);

// layer_norm over `rows` rows of `cols` elements (one block per row); T is
// float, double, Half or BFloat16, U (Scale, Bias, Mean, Variance) float
// for all but double. scale and bias may be null.
template <typename T, typename U>
void layer_norm(const T* x, const U* scale, const U* bias, T* y, U* mean, U* variance,
                int64_t rows, int64_t cols, double epsilon, Stream s);
// Its gradient; dx, dscale and dbias may be null (not wanted). With dscale
// or dbias, `scratch` holds layer_norm_grad_scratch(rows, cols) elements of
// U (the per-chunk column sums; the same bits every run).
int64_t layer_norm_grad_scratch(int64_t rows, int64_t cols);
template <typename T, typename U>
void layer_norm_grad(const T* x, const U* scale, const U* mean, const U* variance, const T* dy,
                     T* dx, U* dscale, U* dbias, U* scratch, int64_t rows, int64_t cols,
                     double epsilon, Stream s);

// lookup_table_v2: out row i = W row ids[i] (zeros for padding_idx, and
// for an id outside [0, rows): the host checks ids it holds), elements of
// element_size bytes.
void lookup_rows(const void* w, const void* ids, bool ids64, int64_t padding_idx, void* out,
                 int64_t count, int64_t rows, int64_t width, int element_size, Stream s);
// Its gradient added into dw (zeroed by the caller); T float or double.
template <typename T>
void lookup_rows_grad(const T* dout, const void* ids, bool ids64, int64_t padding_idx, T* dw,
                      int64_t count, int64_t rows, int64_t width, Stream s);

}  // namespace ctp::cuda::launch
