// The device launchers of the image ops' CUDA kernels (ops/cuda/cv_kernels.cu):
// pool2d and the plane copies that pad a convolution's input
// when its paddings are asymmetric (cuDNN pads both sides alike). Each queues
// on `s` and returns; the geometry comes from the ops' rules.
#pragma once
#include <cstdint>

#include "ops/cuda/device_kernels.h"

namespace ctp::cuda::launch {

// pool2d on `planes` planes [in_h, in_w] -> [out_h, out_w], the windows of
// ops/schema/meta_conv.h as the CPU kernel places them.
struct PoolGeometry {
  int64_t planes, in_h, in_w, out_h, out_w;
  int64_t kernel[2], stride[2], pad_before[2];
  bool max, adaptive, exclusive;
};
template <typename T>
void pool2d(const T* x, T* out, const PoolGeometry& g, Stream s);
// One thread per input cell adds the windows that read it, in the CPU's order.
template <typename T>
void pool2d_grad(const T* x, const T* out, const T* dout, T* dx, const PoolGeometry& g, Stream s);

// Copies a [rows, cols] block of each of `planes` planes from src (planes of
// src_h x src_w, starting at src_row, src_col) into dst (dst_h x dst_w, at
// dst_row, dst_col); the rest of dst is left as it is.
struct PlaneCopy {
  int64_t planes, rows, cols;
  int64_t src_h, src_w, src_row, src_col;
  int64_t dst_h, dst_w, dst_row, dst_col;
};
template <typename T>
void copy_planes(const T* src, T* dst, const PlaneCopy& c, Stream s);

}  // namespace ctp::cuda::launch
