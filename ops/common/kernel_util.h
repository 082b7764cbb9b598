// Helpers the CPU and CUDA kernels both use: dispatch on a tensor's dtype
// and reading a one-element host tensor.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "executor/runtime/kernel.h"

namespace ctp {

// Calls f.template operator()<T>() with the T among Ts whose dtype
// (data_type_of<T>()) is `dtype`; any other dtype is a ctp::Error naming the
// op, `what`, and the dtypes `kernel` supports.
template <typename... Ts, typename F>
void dispatch_dtype(DataType dtype, const KernelContext& ctx, const char* what,
                    const char* kernel, F&& f) {
  const bool found =
      ((dtype == data_type_of<Ts>() ? (f.template operator()<Ts>(), true) : false) || ...);
  if (found) return;
  const DataType supported[] = {data_type_of<Ts>()...};
  std::string list;
  for (std::size_t i = 0; i < sizeof...(Ts); ++i)
    list += std::string(i == 0 ? "" : i + 1 == sizeof...(Ts) ? " and " : ", ") +
            std::string(to_string(supported[i]));
  ctx.fail(std::string(what) + " has dtype " + std::string(to_string(dtype)) + "; " + kernel +
           " supports " + list);
}

// FP32 and FP64 (FP16/BF16 reach only the CPU kernels that take them,
// wrapped in cpu::computed_in_float; the CUDA loss and optimizer kernels use
// this dispatch too, hence "this kernel").
template <typename F>
void dispatch_float(DataType dtype, const KernelContext& ctx, const char* what, F&& f) {
  dispatch_dtype<float, double>(dtype, ctx, what, "this kernel", std::forward<F>(f));
}

// A dispensable input's meta, or nullopt; pointer() gives the rules' form
// (null when absent): meta::flash_attn(ctx, ..., pointer(mask)). The same
// pair as the schema's optional_meta/pointer (ops/schema/defs_common.h).
inline std::optional<TensorMeta> optional_input_meta(KernelContext& ctx, std::string_view slot) {
  if (!ctx.has_input(slot)) return std::nullopt;
  return meta_of(ctx.input(slot));
}
inline const TensorMeta* pointer(const std::optional<TensorMeta>& m) { return m ? &*m : nullptr; }

// The first element of a numeric host tensor as a double (learning rates,
// beta powers and other one-element inputs of any float or integer dtype).
double scalar_value(const Tensor& t);

}  // namespace ctp
