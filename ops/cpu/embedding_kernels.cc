// lookup_table_v2 (rows of W picked by Ids) and its dense gradient
// (ops/schema/meta_embedding.h). The forward pass moves whole rows, so it
// takes W of any float dtype; the gradient adds rows in FP32 or FP64
// (FP16/BF16 through computed_in_float).
#include <cstring>

#include "ops/common/strided_copy.h"
#include "ops/cpu/cpu_kernel_util.h"
#include "ops/cpu/float16_compute.h"
#include "ops/schema/meta_embedding.h"

namespace ctp::cpu {
namespace {

int64_t id_at(const Tensor& ids, int64_t i) {
  return ids.dtype() == DataType::INT32 ? ids.data<int32_t>()[i] : ids.data<int64_t>()[i];
}

void lookup_table_v2(KernelContext& ctx) {
  const Tensor w = ctx.input("W");
  const Tensor ids = ctx.input("Ids");
  const meta::LookupMeta m = meta::lookup_table_v2(ctx, meta_of(w), meta_of(ids));
  const std::size_t row_bytes =
      static_cast<std::size_t>(m.width) * movable_element_size(ctx, w.dtype());
  Tensor& out = ctx.output("Out");
  out.resize(w.dtype(), m.out_shape);
  const auto* wp = static_cast<const unsigned char*>(w.raw_data());
  auto* op = static_cast<unsigned char*>(out.raw_data());
  for (int64_t i = 0; i < m.ids; ++i) {
    const int64_t row = meta::lookup_row(ctx, m, i, id_at(ids, i));
    if (row < 0) std::memset(op + i * row_bytes, 0, row_bytes);
    else std::memcpy(op + i * row_bytes, wp + row * row_bytes, row_bytes);
  }
}

void lookup_table_v2_grad(KernelContext& ctx) {
  const Tensor& w = ctx.shape_input("W");
  const Tensor ids = ctx.input("Ids");
  const Tensor dout = ctx.input("Out@GRAD");
  const meta::LookupMeta m =
      meta::lookup_table_v2_grad(ctx, meta_of(w), meta_of(ids), meta_of(dout));
  if (!ctx.has_output("W@GRAD")) return;
  Tensor& dw = ctx.output("W@GRAD");
  dispatch_float(dout.dtype(), ctx, "Out@GRAD", [&]<typename T>() {
    dw.resize(dout.dtype(), w.shape());
    fill(dw, 0.0);
    T* d = dw.data<T>();
    const T* g = dout.data<T>();
    for (int64_t i = 0; i < m.ids; ++i) {
      const int64_t row = meta::lookup_row(ctx, m, i, id_at(ids, i));
      if (row < 0) continue;
      for (int64_t c = 0; c < m.width; ++c) d[row * m.width + c] += g[i * m.width + c];
    }
  });
}

}  // namespace

CTP_REGISTER_KERNEL(lookup_table_v2, CPU, lookup_table_v2);
CTP_REGISTER_KERNEL(lookup_table_v2_grad, CPU, computed_in_float(lookup_table_v2_grad));

}  // namespace ctp::cpu
