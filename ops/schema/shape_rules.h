// Shape arithmetic the op rules share. -1 marks a dim unknown before run
// time (a declared var's batch dim) and stays unknown; with the concrete
// shapes of tensors the same functions give the run-time answers.
#pragma once
#include <cstdint>
#include <string>

#include "ops/schema/op_context.h"

namespace ctp {

// "[2, 3, -1]"
std::string shape_to_string(const Shape& shape);
// The product of dims [begin, end); -1 when one of them is unknown.
int64_t product(const Shape& shape, std::size_t begin, std::size_t end);
inline int64_t product(const Shape& shape) { return product(shape, 0, shape.size()); }
// Whether two shapes have one rank and agree where both dims are known.
bool compatible(const Shape& a, const Shape& b);
// Two dims that must agree: the known one, or fails with "<what>: a vs b".
int64_t merge_dim(const OpContext& ctx, int64_t a, int64_t b, const std::string& what);
// One broadcast dim: equal dims, or a 1 that stretches to the other; an
// unknown dim stays unknown unless the other is a real size. Fails with
// "<what>: a vs b do not broadcast".
int64_t broadcast_dim(const OpContext& ctx, int64_t a, int64_t b, const std::string& what);
// A possibly negative axis made non-negative; fails with "<what> <axis> is
// out of range for rank <rank>".
std::size_t normalize_axis(const OpContext& ctx, int64_t axis, std::size_t rank,
                           const std::string& what);

}  // namespace ctp
