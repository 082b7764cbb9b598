#include "ops/cpu/cpu_kernel_util.h"

#include <cmath>
#include <cstring>

namespace ctp::cpu {

DataType dtype_attr(const KernelContext& ctx, const char* name, DataType fallback) {
  const int64_t value = ctx.attr_int(name, -1);
  if (value < 0) return fallback;
  if (!is_valid_var_kind(static_cast<int32_t>(value)) ||
      element_size(static_cast<DataType>(value)) == 0)
    throw Error(ctx.where() + "attribute '" + name + "' = " + std::to_string(value) +
                " is not a tensor element type");
  return static_cast<DataType>(value);
}

namespace {

template <typename T>
void fill_as(Tensor& t, T value) {
  T* p = static_cast<T*>(t.raw_data());
  const int64_t n = t.numel();
  for (int64_t i = 0; i < n; ++i) p[i] = value;
}

}  // namespace

void fill(Tensor& t, double value) {
  switch (t.dtype()) {
    case DataType::FP32: fill_as<float>(t, static_cast<float>(value)); return;
    case DataType::FP64: fill_as<double>(t, value); return;
    case DataType::FP16: fill_as<uint16_t>(t, float16::from_float(static_cast<float>(value))); return;
    case DataType::BF16:
      fill_as<uint16_t>(t, bfloat16::from_float(static_cast<float>(value)));
      return;
    case DataType::INT32: fill_as<int32_t>(t, static_cast<int32_t>(value)); return;
    case DataType::INT64: fill_as<int64_t>(t, static_cast<int64_t>(value)); return;
    case DataType::INT16: fill_as<int16_t>(t, static_cast<int16_t>(value)); return;
    case DataType::INT8: fill_as<int8_t>(t, static_cast<int8_t>(value)); return;
    case DataType::UINT8: fill_as<uint8_t>(t, static_cast<uint8_t>(value)); return;
    case DataType::BOOL: fill_as<bool>(t, value != 0.0); return;
    default:
      throw Error("cannot fill a tensor of dtype " + std::string(to_string(t.dtype())));
  }
}

double scalar_value(const Tensor& t) {
  if (t.numel() < 1) throw Error("expected a one-element tensor, got an empty one");
  const void* p = t.raw_data();
  switch (t.dtype()) {
    case DataType::FP32: return *static_cast<const float*>(p);
    case DataType::FP64: return *static_cast<const double*>(p);
    case DataType::FP16: return float16::to_float(*static_cast<const uint16_t*>(p));
    case DataType::BF16: return bfloat16::to_float(*static_cast<const uint16_t*>(p));
    case DataType::INT32: return *static_cast<const int32_t*>(p);
    case DataType::INT64: return static_cast<double>(*static_cast<const int64_t*>(p));
    case DataType::BOOL: return *static_cast<const bool*>(p) ? 1.0 : 0.0;
    default:
      throw Error("cannot read a scalar of dtype " + std::string(to_string(t.dtype())));
  }
}

int64_t product(const std::vector<int64_t>& shape, std::size_t begin, std::size_t end) {
  int64_t n = 1;
  for (std::size_t i = begin; i < end; ++i) n *= shape[i];
  return n;
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

int64_t normalize_axis(const KernelContext& ctx, int64_t axis, std::size_t rank, const char* what) {
  const int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r)
    throw Error(ctx.where() + std::string(what) + " " + std::to_string(axis) +
                " is out of range for rank " + std::to_string(r));
  return axis < 0 ? axis + r : axis;
}

void copy_tensor(const Tensor& src, Tensor& dst) {
  if (&src == &dst) return;
  if (src.shares_buffer_with(dst) && src.offset() == dst.offset() &&
      src.dtype() == dst.dtype() && src.shape() == dst.shape())
    return;
  dst.resize(src.dtype(), src.shape());
  if (src.bytes() == 0) return;
  std::memmove(dst.raw_data(), src.raw_data(), src.bytes());
}

}  // namespace ctp::cpu
