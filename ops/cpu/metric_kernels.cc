// top_k / top_k_v2 (and their gradients) and accuracy on the CPU, under the
// rules of ops/schema/meta_metrics.h and the order of ops/common/top_k_order.h.
#include <algorithm>
#include <numeric>
#include <optional>
#include <vector>

#include "ops/common/top_k_order.h"
#include "ops/cpu/cpu_kernel_util.h"
#include "ops/schema/meta_metrics.h"

namespace ctp::cpu {
namespace {

// The value types top_k takes (Paddle's kernels: float, double, int32, int64).
template <typename F>
void dispatch_top_k(DataType dtype, const KernelContext& ctx, const char* what, F&& f) {
  dispatch_dtype<float, double, int32_t, int64_t>(dtype, ctx, what, "top_k",
                                                  std::forward<F>(f));
}

// K's value when the op has a K input.
std::optional<int64_t> k_input(KernelContext& ctx) {
  if (!ctx.has_input("K")) return std::nullopt;
  return static_cast<int64_t>(scalar_value(ctx.input("K")));
}

void top_k(KernelContext& ctx) {
  const Tensor x = ctx.input("X");
  const meta::TopKMeta m = meta::top_k(ctx, meta_of(x), k_input(ctx));
  Tensor& out = ctx.output("Out");
  Tensor& indices = ctx.output("Indices");
  dispatch_top_k(x.dtype(), ctx, "X", [&]<typename T>() {
    out.resize(x.dtype(), m.out_shape);
    indices.resize(DataType::INT64, m.out_shape);
    const T* xp = x.data<T>();
    T* op = out.data<T>();
    int64_t* ip = indices.data<int64_t>();
    std::vector<int64_t> order(static_cast<std::size_t>(m.n));
    for (int64_t o = 0; o < m.outer; ++o)
      for (int64_t i = 0; i < m.inner; ++i) {
        const T* row = xp + o * m.n * m.inner + i;
        const auto before = [&](int64_t a, int64_t b) {
          return top_k_order::before(row[a * m.inner], a, row[b * m.inner], b, m.largest);
        };
        std::iota(order.begin(), order.end(), int64_t{0});
        std::partial_sort(order.begin(), order.begin() + m.k, order.end(), before);
        const int64_t base = o * m.k * m.inner + i;
        for (int64_t j = 0; j < m.k; ++j) {
          op[base + j * m.inner] = row[order[j] * m.inner];
          ip[base + j * m.inner] = order[j];
        }
      }
  });
}

// X@GRAD is 0 but at the picked elements, which take Out@GRAD.
void top_k_grad(KernelContext& ctx) {
  const Tensor& x = ctx.input("X");
  const Tensor& indices = ctx.input("Indices");
  const Tensor& dout = ctx.input("Out@GRAD");
  const meta::TopKMeta m =
      meta::top_k_grad(ctx, meta_of(x), meta_of(indices), meta_of(dout));
  if (!ctx.has_output("X@GRAD")) return;
  Tensor& dx = ctx.output("X@GRAD");
  dispatch_float(dout.dtype(), ctx, "Out@GRAD", [&]<typename T>() {
    dx.resize(dout.dtype(), x.shape());
    T* d = dx.data<T>();
    std::fill(d, d + dx.numel(), T(0));
    const T* g = dout.data<T>();
    const int64_t* ip = indices.data<int64_t>();
    for (int64_t o = 0; o < m.outer; ++o)
      for (int64_t i = 0; i < m.inner; ++i)
        for (int64_t j = 0; j < m.k; ++j) {
          const int64_t at = o * m.k * m.inner + j * m.inner + i;
          if (ip[at] < 0 || ip[at] >= m.n)
            ctx.fail(ctx.describe_input("Indices") + " holds " + std::to_string(ip[at]) +
                     ", outside [0, " + std::to_string(m.n) + ")");
          d[o * m.n * m.inner + ip[at] * m.inner + i] += g[at];
        }
  });
}

void accuracy(KernelContext& ctx) {
  const Tensor& indices = ctx.input("Indices");
  const Tensor& label = ctx.input("Label");
  const meta::AccuracyMeta m =
      meta::accuracy(ctx, meta_of(ctx.input("Out")), meta_of(indices), meta_of(label));
  const int64_t* ip = indices.data<int64_t>();
  int64_t correct = 0;
  for (int64_t row = 0; row < m.rows; ++row) {
    const int64_t want = meta::accuracy_label(
        ctx, row,
        label.dtype() == DataType::INT32 ? label.data<int32_t>()[row] : label.data<int64_t>()[row]);
    const int64_t* picks = ip + row * m.k;
    if (std::find(picks, picks + m.k, want) != picks + m.k) ++correct;
  }
  Tensor& acc = ctx.output("Accuracy");
  acc.resize(DataType::FP32, {1});
  // No samples: accuracy 0 (Paddle's kernel).
  acc.data<float>()[0] =
      m.rows == 0 ? 0.0f : static_cast<float>(correct) / static_cast<float>(m.rows);
  Tensor& correct_out = ctx.output("Correct");
  correct_out.resize(DataType::INT32, {1});
  correct_out.data<int32_t>()[0] = static_cast<int32_t>(correct);
  Tensor& total = ctx.output("Total");
  total.resize(DataType::INT32, {1});
  total.data<int32_t>()[0] = static_cast<int32_t>(m.rows);
}

}  // namespace

CTP_REGISTER_KERNEL(top_k, CPU, top_k);
CTP_REGISTER_KERNEL(top_k_v2, CPU, top_k);
CTP_REGISTER_KERNEL(top_k_grad, CPU, top_k_grad);
CTP_REGISTER_KERNEL(top_k_v2_grad, CPU, top_k_grad);
CTP_REGISTER_KERNEL(accuracy, CPU, accuracy);

}  // namespace ctp::cpu
