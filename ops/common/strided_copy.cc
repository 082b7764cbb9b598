#include "ops/common/strided_copy.h"

#include <cstring>
#include <utility>

namespace ctp {
namespace {

template <typename Element>
void walk(const StridedCopy& c, const Element* src, Element* dst) {
  const std::size_t rank = c.shape.size();
  int64_t total = 1;
  for (int64_t d : c.shape) total *= d;
  if (total == 0) return;
  std::vector<int64_t> index(rank, 0);
  int64_t s = c.src_offset, t = c.dst_offset;
  for (int64_t n = 0; n < total; ++n) {
    dst[t] = src[s];
    // Advance the multi-index, innermost dim first.
    for (std::size_t d = rank; d-- > 0;) {
      s += c.src_strides[d];
      t += c.dst_strides[d];
      if (++index[d] < c.shape[d]) break;
      s -= c.src_strides[d] * c.shape[d];
      t -= c.dst_strides[d] * c.shape[d];
      index[d] = 0;
    }
  }
}

}  // namespace

std::size_t movable_element_size(const KernelContext& ctx, DataType dtype) {
  const std::size_t size = element_size(dtype);
  if (size != 1 && size != 2 && size != 4 && size != 8)
    ctx.fail("dtype " + std::string(to_string(dtype)) + " has no fixed-size elements to move");
  return size;
}

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (std::size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

StridedCopy reversed(StridedCopy copy) {
  std::swap(copy.src_strides, copy.dst_strides);
  std::swap(copy.src_offset, copy.dst_offset);
  return copy;
}

StridedCopy transpose_copy(const meta::TransposeMeta& m) {
  const std::vector<int64_t> x_strides = contiguous_strides(m.x_shape);
  StridedCopy c;
  c.shape = m.out_shape;
  for (std::size_t p : m.perm) c.src_strides.push_back(x_strides[p]);
  c.dst_strides = contiguous_strides(m.out_shape);
  return c;
}

StridedCopy slice_copy(const meta::SliceMeta& m) {
  StridedCopy c;
  c.shape = m.sliced_shape;
  c.src_strides = contiguous_strides(m.input_shape);
  for (std::size_t d = 0; d < m.begin.size(); ++d) c.src_offset += m.begin[d] * c.src_strides[d];
  c.dst_strides = contiguous_strides(m.sliced_shape);
  return c;
}

StridedCopy stack_copy(const meta::StackMeta& m, std::size_t i) {
  // X viewed as [outer, inner] around the new axis; Y as [outer, count, inner].
  int64_t outer = 1, inner = 1;
  for (std::size_t d = 0; d < m.x_shape.size(); ++d) (d < m.axis ? outer : inner) *= m.x_shape[d];
  const auto count = static_cast<int64_t>(m.count);
  StridedCopy c;
  c.shape = {outer, inner};
  c.src_strides = {inner, 1};
  c.dst_strides = {count * inner, 1};
  c.dst_offset = static_cast<int64_t>(i) * inner;
  return c;
}

void copy_strided_on_host(const StridedCopy& copy, const void* src, void* dst,
                          std::size_t element_size) {
  switch (element_size) {
    case 1: return walk(copy, static_cast<const uint8_t*>(src), static_cast<uint8_t*>(dst));
    case 2: return walk(copy, static_cast<const uint16_t*>(src), static_cast<uint16_t*>(dst));
    case 4: return walk(copy, static_cast<const uint32_t*>(src), static_cast<uint32_t*>(dst));
    default: return walk(copy, static_cast<const uint64_t*>(src), static_cast<uint64_t*>(dst));
  }
}

}  // namespace ctp
