#include "ops/schema/shape_rules.h"

namespace ctp {

std::string shape_to_string(const Shape& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

int64_t product(const Shape& shape, std::size_t begin, std::size_t end) {
  int64_t n = 1;
  for (std::size_t i = begin; i < end; ++i) {
    if (shape[i] < 0) return -1;
    n *= shape[i];
  }
  return n;
}

bool compatible(const Shape& a, const Shape& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i] >= 0 && b[i] >= 0 && a[i] != b[i]) return false;
  return true;
}

int64_t merge_dim(const OpContext& ctx, int64_t a, int64_t b, const std::string& what) {
  if (a < 0) return b;
  if (b < 0 || a == b) return a;
  ctx.fail(what + ": " + std::to_string(a) + " vs " + std::to_string(b));
}

int64_t broadcast_dim(const OpContext& ctx, int64_t a, int64_t b, const std::string& what) {
  if (a == b) return a;
  if (a == 1) return b;
  if (b == 1) return a;
  if (a < 0) return b > 1 ? b : -1;
  if (b < 0) return a > 1 ? a : -1;
  ctx.fail(what + ": " + std::to_string(a) + " vs " + std::to_string(b) + " do not broadcast");
}

std::size_t normalize_axis(const OpContext& ctx, int64_t axis, std::size_t rank,
                           const std::string& what) {
  const auto r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r)
    ctx.fail(what + " " + std::to_string(axis) + " is out of range for rank " + std::to_string(r));
  return static_cast<std::size_t>(axis < 0 ? axis + r : axis);
}

}  // namespace ctp
