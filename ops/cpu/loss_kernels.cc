// softmax_with_cross_entropy and its gradient, along any axis, with hard
// (integer class) or soft (distribution) labels; cross_entropy2 (hard labels
// on probabilities, the last axis) and its gradient. The forward pass works in
// log space (x - max - log(sum(exp(x - max)))), so large logits neither
// overflow nor take the log of zero.
#include <algorithm>
#include <cmath>

#include "ops/cpu/cpu_kernel_util.h"
#include "ops/schema/meta_nn.h"

namespace ctp::cpu {
namespace {

// The label of `row` as stored (INT32 or INT64, as the rules require).
int64_t label_value(const Tensor& label, int64_t row) {
  return label.dtype() == DataType::INT32 ? label.data<int32_t>()[row]
                                          : label.data<int64_t>()[row];
}

// The class of row (o, i), or -1 for ignore_index.
int64_t hard_label(KernelContext& ctx, const Tensor& label,
                   const meta::SoftmaxCrossEntropyMeta& l, int64_t row) {
  return meta::hard_label_class(ctx, l, row, label_value(label, row));
}

void softmax_with_cross_entropy(KernelContext& ctx) {
  const Tensor& logits = ctx.input("Logits");
  const Tensor& label = ctx.input("Label");
  const meta::SoftmaxCrossEntropyMeta l =
      meta::softmax_with_cross_entropy(ctx, meta_of(logits), meta_of(label));
  const bool soft = l.soft_label, use_softmax = l.use_softmax;
  Tensor& softmax = ctx.output("Softmax");
  Tensor& loss = ctx.output("Loss");
  dispatch_float(logits.dtype(), ctx, "Logits", [&]<typename T>() {
    softmax.resize(logits.dtype(), logits.shape());
    loss.resize(logits.dtype(), l.loss_shape);
    const T* x = logits.data<T>();
    T* sm = softmax.data<T>();
    T* lp = loss.data<T>();
    const T* soft_label = soft ? label.data<T>() : nullptr;
    std::vector<T> log_p(static_cast<std::size_t>(l.classes));
    for (int64_t o = 0; o < l.outer; ++o)
      for (int64_t i = 0; i < l.inner; ++i) {
        const int64_t base = o * l.classes * l.inner + i;
        const auto at = [&](int64_t c) { return base + c * l.inner; };
        if (use_softmax) {
          T max = x[at(0)];
          for (int64_t c = 1; c < l.classes; ++c) max = std::max(max, x[at(c)]);
          T sum = 0;
          for (int64_t c = 0; c < l.classes; ++c) sum += std::exp(x[at(c)] - max);
          const T log_sum = std::log(sum);
          for (int64_t c = 0; c < l.classes; ++c) {
            log_p[c] = x[at(c)] - max - log_sum;
            sm[at(c)] = std::exp(log_p[c]);
          }
        } else {  // the logits already are probabilities
          for (int64_t c = 0; c < l.classes; ++c) {
            sm[at(c)] = x[at(c)];
            log_p[c] = std::log(x[at(c)]);
          }
        }
        const int64_t row = o * l.inner + i;
        if (soft) {
          T total = 0;
          for (int64_t c = 0; c < l.classes; ++c) total -= soft_label[at(c)] * log_p[c];
          lp[row] = total;
        } else {
          const int64_t c = hard_label(ctx, label, l, row);
          lp[row] = c < 0 ? T(0) : -log_p[c];
        }
      }
  });
}

// d loss / d logits = (softmax - label) * dLoss, the label one-hot for hard
// labels (Paddle's formula, exact when soft labels sum to 1). Without the
// softmax (use_softmax false) it is -label / p * dLoss.
void softmax_with_cross_entropy_grad(KernelContext& ctx) {
  const Tensor& softmax = ctx.input("Softmax");
  const Tensor& label = ctx.input("Label");
  const Tensor& dloss = ctx.input("Loss@GRAD");
  const meta::SoftmaxCrossEntropyMeta l = meta::softmax_with_cross_entropy_grad(
      ctx, meta_of(softmax), meta_of(label), meta_of(dloss));
  const bool soft = l.soft_label, use_softmax = l.use_softmax;
  Tensor& dx = ctx.output("Logits@GRAD");
  dispatch_float(softmax.dtype(), ctx, "Softmax", [&]<typename T>() {
    dx.resize(softmax.dtype(), softmax.shape());
    const T* sm = softmax.data<T>();
    const T* g = dloss.data<T>();
    T* d = dx.data<T>();
    const T* soft_label = soft ? label.data<T>() : nullptr;
    for (int64_t o = 0; o < l.outer; ++o)
      for (int64_t i = 0; i < l.inner; ++i) {
        const int64_t base = o * l.classes * l.inner + i;
        const int64_t row = o * l.inner + i;
        const int64_t hard = soft ? 0 : hard_label(ctx, label, l, row);
        for (int64_t c = 0; c < l.classes; ++c) {
          const int64_t at = base + c * l.inner;
          const T target = soft ? soft_label[at] : T(c == hard ? 1 : 0);
          if (!soft && hard < 0) d[at] = 0;
          else if (use_softmax) d[at] = (sm[at] - target) * g[row];
          else d[at] = target == T(0) ? T(0) : -target / sm[at] * g[row];
        }
      }
  });
}

// -log(p) of each row's labelled probability, kept as MatchX for the
// gradient; an ignored row has loss 0 (and MatchX 0). As in Paddle, log(0)
// counts as -1e20, so a zero probability gives a large finite loss.
void cross_entropy2(KernelContext& ctx) {
  const Tensor x = ctx.input("X");
  const Tensor& label = ctx.input("Label");
  const meta::CrossEntropy2Meta m = meta::cross_entropy2(ctx, meta_of(x), meta_of(label));
  Tensor& y = ctx.output("Y");
  Tensor& match_x = ctx.output("MatchX");
  Tensor& xshape = ctx.output("XShape");
  dispatch_float(x.dtype(), ctx, "X", [&]<typename T>() {
    y.resize(x.dtype(), m.y_shape);
    match_x.resize(x.dtype(), m.match_x_shape);
    xshape.resize(x.dtype(), m.xshape_shape);  // no elements: only its shape is read
    const T* xp = x.data<T>();
    T* yp = y.data<T>();
    T* mp = match_x.data<T>();
    for (int64_t row = 0; row < m.rows; ++row) {
      const int64_t c =
          meta::hard_label_class(ctx, m.classes, m.ignore_index, row, label_value(label, row));
      if (c < 0) {
        yp[row] = mp[row] = T(0);
        continue;
      }
      mp[row] = xp[row * m.classes + c];
      T log_p = std::log(mp[row]);
      if (std::isinf(log_p)) log_p = log_p < 0 ? T(-1e20) : T(1e20);
      yp[row] = -log_p;
    }
  });
}

// d Y / d X: -dY / MatchX at each row's label, 0 elsewhere and on ignored rows.
void cross_entropy_grad2(KernelContext& ctx) {
  const Tensor& label = ctx.input("Label");
  const Tensor& match_x = ctx.input("MatchX");
  const Tensor& dy = ctx.input("Y@GRAD");
  const meta::CrossEntropy2Meta m = meta::cross_entropy_grad2(
      ctx, meta_of(ctx.input("XShape")), meta_of(label), meta_of(match_x), meta_of(dy));
  Tensor& dx = ctx.output("X@GRAD");
  dispatch_float(dy.dtype(), ctx, "Y@GRAD", [&]<typename T>() {
    dx.resize(dy.dtype(), m.x_shape);
    const T* g = dy.data<T>();
    const T* p = match_x.data<T>();
    T* d = dx.data<T>();
    std::fill(d, d + dx.numel(), T(0));
    for (int64_t row = 0; row < m.rows; ++row) {
      const int64_t c =
          meta::hard_label_class(ctx, m.classes, m.ignore_index, row, label_value(label, row));
      if (c >= 0) d[row * m.classes + c] = -g[row] / p[row];
    }
  });
}

}  // namespace

CTP_REGISTER_KERNEL(cross_entropy2, CPU, cross_entropy2);
CTP_REGISTER_KERNEL(cross_entropy_grad2, CPU, cross_entropy_grad2);
CTP_REGISTER_KERNEL(softmax_with_cross_entropy, CPU, softmax_with_cross_entropy);
CTP_REGISTER_KERNEL(softmax_with_cross_entropy_grad, CPU, softmax_with_cross_entropy_grad);

}  // namespace ctp::cpu
