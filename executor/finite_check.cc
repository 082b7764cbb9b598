#include "executor/finite_check.h"

#include <cmath>
#include <cstdint>
#include <cstdio>

#include "executor/runtime/device_backend.h"

namespace ctp {
namespace {

bool is_floating(DataType dtype) {
  return dtype == DataType::FP32 || dtype == DataType::FP64 || dtype == DataType::FP16 ||
         dtype == DataType::BF16;
}

// The first non-finite element and how many there are.
struct Scan {
  int64_t first = -1;
  int64_t count = 0;
  double value = 0;  // the first one: nan, inf or -inf
};

template <typename T, typename IsBad, typename Value>
Scan scan(const T* data, int64_t n, IsBad is_bad, Value value) {
  Scan s;
  for (int64_t i = 0; i < n; ++i)
    if (is_bad(data[i])) {
      if (s.count++ == 0) {
        s.first = i;
        s.value = value(data[i]);
      }
    }
  return s;
}

// Half-precision values are non-finite when every exponent bit is set.
double half_value(uint16_t bits, uint16_t mantissa_mask) {
  if (bits & mantissa_mask) return NAN;
  return (bits & 0x8000) ? -INFINITY : INFINITY;
}

Scan scan_host(const Tensor& t) {
  const int64_t n = t.numel();
  switch (t.dtype()) {
    case DataType::FP32:
      return scan(t.data<float>(), n, [](float v) { return !std::isfinite(v); },
                  [](float v) { return static_cast<double>(v); });
    case DataType::FP64:
      return scan(t.data<double>(), n, [](double v) { return !std::isfinite(v); },
                  [](double v) { return v; });
    case DataType::FP16:
      return scan(t.data<uint16_t>(), n, [](uint16_t b) { return (b & 0x7c00) == 0x7c00; },
                  [](uint16_t b) { return half_value(b, 0x03ff); });
    case DataType::BF16:
      return scan(t.data<uint16_t>(), n, [](uint16_t b) { return (b & 0x7f80) == 0x7f80; },
                  [](uint16_t b) { return half_value(b, 0x007f); });
    default:
      return {};
  }
}

Tensor on_host(const Tensor& t, DeviceSession* device) {
  if (t.device().kind == DeviceKind::CPU) return t;
  if (device) return device->to_host(t);
  throw Error("cannot check " + t.device().to_string() + " values for NaN/Inf without its device");
}

std::string shape_text(const Tensor& t) {
  std::string s = "[";
  for (std::size_t i = 0; i < t.shape().size(); ++i)
    s += (i ? ", " : "") + std::to_string(t.shape()[i]);
  return s + "]";
}

std::string value_text(double v) {
  if (std::isnan(v)) return "nan";
  return v > 0 ? "inf" : "-inf";
}

}  // namespace

std::optional<std::string> non_finite_value(const Tensor& t) {
  if (!t.initialized() || !is_floating(t.dtype()) || t.numel() == 0) return std::nullopt;
  const Scan s = scan_host(t);
  if (s.count == 0) return std::nullopt;
  return std::string(to_string(t.dtype())) + shape_text(t) + " holds " + value_text(s.value) +
         " at element " + std::to_string(s.first) + " (" + std::to_string(s.count) + " of " +
         std::to_string(t.numel()) + " values are not finite)";
}

std::optional<std::string> non_finite_output(const Op& op, const Scope& scope,
                                             DeviceSession* device) {
  for (const Slot& slot : op.outputs())
    for (const std::string& name : slot.args) {
      const Tensor* t = scope.find(name);
      if (!t || !t->initialized() || !is_floating(t->dtype()) || t->numel() == 0) continue;
      if (auto bad = non_finite_value(on_host(*t, device)))
        return "output " + slot.name + "='" + name + "' " + *bad;
    }
  return std::nullopt;
}

std::optional<std::string> first_non_finite_op(const Block& block, const Scope& scope,
                                               DeviceSession* device) {
  std::size_t index = 0;
  for (const Op& op : block.ops()) {
    if (auto bad = non_finite_output(op, scope, device))
      return "block " + std::to_string(block.idx) + ", op " + std::to_string(index) + " '" +
             op.type + "': " + *bad;
    ++index;
  }
  return std::nullopt;
}

}  // namespace ctp
