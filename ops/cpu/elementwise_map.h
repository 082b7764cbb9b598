// The CPU kernels of the activation family (relu, tanh, gelu, clip, swish,
// ...) and their gradients differ only in the formula applied to each
// element; these run such a formula over a whole tensor, FP32 or FP64 (the
// kernels' computed_in_float wrapper brings FP16/BF16 here as float). The
// shape rules stay with each op's InferMeta: the caller passes their result.
#pragma once

#include "ops/common/kernel_util.h"

namespace ctp::cpu {

// out[i] = f(x[i]); `out` takes x's dtype and `shape`. `f` is generic in the
// element type. `slot` names x in a dtype error. x may be out (in place), so
// x must be a handle, not a reference to out.
template <typename ElementFn>
void map_elements(KernelContext& ctx, const char* slot, const Tensor& x, Tensor& out,
                  const Shape& shape, ElementFn&& f) {
  dispatch_float(x.dtype(), ctx, slot, [&]<typename T>() {
    out.resize(x.dtype(), shape);
    const T* xp = x.data<T>();
    T* op = out.data<T>();
    for (int64_t i = 0, n = x.numel(); i < n; ++i) op[i] = f(xp[i]);
  });
}

// out[i] = f(a[i], b[i]) for a and b of one dtype and size (a gradient's
// forward input or output beside Out@GRAD); `out` takes a's dtype and `shape`.
template <typename ElementFn>
void map_element_pairs(KernelContext& ctx, const char* slot, const Tensor& a, const Tensor& b,
                       Tensor& out, const Shape& shape, ElementFn&& f) {
  dispatch_float(a.dtype(), ctx, slot, [&]<typename T>() {
    out.resize(a.dtype(), shape);
    const T* ap = a.data<T>();
    const T* bp = b.data<T>();
    T* op = out.data<T>();
    for (int64_t i = 0, n = a.numel(); i < n; ++i) op[i] = f(ap[i], bp[i]);
  });
}

}  // namespace ctp::cpu
