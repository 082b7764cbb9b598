// flash_attn and flash_attn_grad on the CPU. Each batch and head is
// computed whole: the head's q, k, v gathered into [seq, head_dim] matrices,
// its [seq_q, seq_k] scores in memory and the products through gemm. (A GPU
// kernel tiles the scores to keep them out of memory; on the CPU they fit,
// and the products are what costs.) The backward recomputes the
// probabilities from softmax_lse, as FlashAttention does, rather than keeping
// them from the forward. FP32 and FP64; FP16/BF16 computed in float.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string_view>
#include <vector>

#include "ops/common/strided_copy.h"
#include "ops/cpu/cpu_kernel_util.h"
#include "ops/cpu/float16_compute.h"
#include "ops/cpu/gemm.h"
#include "ops/schema/meta_attention.h"

namespace ctp::cpu {
namespace {

// Where head (b, h) of a [batch, seq, heads, head_dim] tensor lies, copied
// to or (reversed) from a contiguous [seq, head_dim] matrix.
StridedCopy head_copy(const meta::FlashAttnMeta& m, int64_t seq, int64_t b, int64_t h) {
  StridedCopy c;
  c.shape = {seq, m.head_dim};
  c.src_strides = {m.heads * m.head_dim, 1};
  c.dst_strides = {m.head_dim, 1};
  c.src_offset = (b * seq * m.heads + h) * m.head_dim;
  return c;
}

// The heads of one batch and head index, gathered from q, k, v (and, for
// the gradient, out and out@GRAD) and written back.
template <typename T>
struct HeadMatrices {
  const meta::FlashAttnMeta& m;
  int64_t b = 0, h = 0;

  std::vector<T> gather(const Tensor& t, int64_t seq) const {
    std::vector<T> matrix(static_cast<std::size_t>(seq * m.head_dim));
    copy_strided_on_host(head_copy(m, seq, b, h), t.data<T>(), matrix.data(), sizeof(T));
    return matrix;
  }
  void scatter(const std::vector<T>& matrix, int64_t seq, Tensor& t) const {
    copy_strided_on_host(reversed(head_copy(m, seq, b, h)), matrix.data(), t.data<T>(),
                         sizeof(T));
  }
};

// scale * q k^T for one head, [seq_q, seq_k], -inf where causal masks.
template <typename T>
std::vector<T> scores(const meta::FlashAttnMeta& m, const std::vector<T>& q,
                      const std::vector<T>& k) {
  std::vector<T> s(static_cast<std::size_t>(m.seq_q * m.seq_k));
  gemm<T>(false, true, m.seq_q, m.seq_k, m.head_dim, q.data(), k.data(), s.data());
  const T scale = static_cast<T>(m.scale);
  for (int64_t i = 0; i < m.seq_q; ++i)
    for (int64_t j = 0; j < m.seq_k; ++j) {
      T& v = s[static_cast<std::size_t>(i * m.seq_k + j)];
      v = meta::causal_masked(m, i, j) ? -std::numeric_limits<T>::infinity() : v * scale;
    }
  return s;
}

// Turns each row of scores into probabilities in place and returns its
// log-sum-exp (+inf, with probabilities 0, for a row with no unmasked key).
template <typename T>
std::vector<float> softmax_rows(const meta::FlashAttnMeta& m, std::vector<T>& s) {
  std::vector<float> lse(static_cast<std::size_t>(m.seq_q));
  for (int64_t i = 0; i < m.seq_q; ++i) {
    T* row = s.data() + i * m.seq_k;
    T max = -std::numeric_limits<T>::infinity();
    for (int64_t j = 0; j < m.seq_k; ++j) max = std::max(max, row[j]);
    if (max == -std::numeric_limits<T>::infinity()) {
      std::fill(row, row + m.seq_k, T(0));
      lse[static_cast<std::size_t>(i)] = std::numeric_limits<float>::infinity();
      continue;
    }
    T sum = 0;
    for (int64_t j = 0; j < m.seq_k; ++j) sum += (row[j] = std::exp(row[j] - max));
    for (int64_t j = 0; j < m.seq_k; ++j) row[j] /= sum;
    lse[static_cast<std::size_t>(i)] = static_cast<float>(max + std::log(sum));
  }
  return lse;
}

// seed_offset: fixed_seed_offset's values when given, else zeros (no kernel
// draws a dropout mask, so there is no generator state to report).
void write_seed_offset(KernelContext& ctx) {
  Tensor& seed_offset = ctx.output("seed_offset");
  seed_offset.resize(DataType::INT64, {2});
  int64_t* dst = seed_offset.data<int64_t>();
  const int64_t* fixed =
      ctx.has_input("fixed_seed_offset") ? ctx.input("fixed_seed_offset").data<int64_t>() : nullptr;
  dst[0] = fixed ? fixed[0] : 0;
  dst[1] = fixed ? fixed[1] : 0;
}

void flash_attn(KernelContext& ctx) {
  const Tensor q = ctx.input("q"), k = ctx.input("k"), v = ctx.input("v");
  const auto fixed = optional_input_meta(ctx, "fixed_seed_offset");
  const auto mask = optional_input_meta(ctx, "attn_mask");
  const meta::FlashAttnMeta m = meta::flash_attn(ctx, meta_of(q), meta_of(k), meta_of(v),
                                                 pointer(fixed), pointer(mask));
  Tensor& out = ctx.output("out");
  Tensor& softmax = ctx.output("softmax");
  Tensor& lse = ctx.output("softmax_lse");
  dispatch_float(q.dtype(), ctx, "q", [&]<typename T>() {
    out.resize(q.dtype(), m.out_shape);
    softmax.resize(q.dtype(), m.softmax_shape);
    lse.resize(DataType::FP32, m.softmax_lse_shape);
    for (int64_t b = 0; b < m.batch; ++b)
      for (int64_t h = 0; h < m.heads; ++h) {
        const HeadMatrices<T> head{m, b, h};
        std::vector<T> p = scores(m, head.gather(q, m.seq_q), head.gather(k, m.seq_k));
        const std::vector<float> row_lse = softmax_rows(m, p);
        std::vector<T> o(static_cast<std::size_t>(m.seq_q * m.head_dim));
        gemm<T>(false, false, m.seq_q, m.head_dim, m.seq_k, p.data(),
                head.gather(v, m.seq_k).data(), o.data());
        head.scatter(o, m.seq_q, out);
        const int64_t bh = b * m.heads + h;
        std::copy(row_lse.begin(), row_lse.end(), lse.data<float>() + bh * m.seq_q);
        if (m.return_softmax)
          std::copy(p.begin(), p.end(), softmax.data<T>() + bh * m.seq_q * m.seq_k);
      }
  });
  write_seed_offset(ctx);
}

// One head's gradients: P = exp(s - lse); dV = P^T dO; dP = dO V^T;
// D_i = rowsum(dO_i * O_i); dS = P * (dP - D) * scale; dQ = dS K; dK = dS^T Q.
template <typename T>
struct HeadGrads {
  std::vector<T> dq, dk, dv;
};

template <typename T>
HeadGrads<T> head_grads(const meta::FlashAttnMeta& m, const std::vector<T>& q,
                        const std::vector<T>& k, const std::vector<T>& v, const std::vector<T>& o,
                        const std::vector<T>& dout, const float* lse) {
  const int64_t sq = m.seq_q, sk = m.seq_k, d = m.head_dim;
  std::vector<T> p = scores(m, q, k);
  for (int64_t i = 0; i < sq; ++i)
    for (int64_t j = 0; j < sk; ++j) {
      T& pij = p[static_cast<std::size_t>(i * sk + j)];
      pij = std::exp(pij - static_cast<T>(lse[i]));
    }
  HeadGrads<T> g{std::vector<T>(static_cast<std::size_t>(sq * d)),
                 std::vector<T>(static_cast<std::size_t>(sk * d)),
                 std::vector<T>(static_cast<std::size_t>(sk * d))};
  gemm<T>(true, false, sk, d, sq, p.data(), dout.data(), g.dv.data());
  std::vector<T> ds(static_cast<std::size_t>(sq * sk));
  gemm<T>(false, true, sq, sk, d, dout.data(), v.data(), ds.data());
  const T scale = static_cast<T>(m.scale);
  for (int64_t i = 0; i < sq; ++i) {
    T row_dot = 0;
    for (int64_t c = 0; c < d; ++c) row_dot += dout[i * d + c] * o[i * d + c];
    for (int64_t j = 0; j < sk; ++j) {
      const std::size_t at = static_cast<std::size_t>(i * sk + j);
      ds[at] = p[at] * (ds[at] - row_dot) * scale;
    }
  }
  gemm<T>(false, false, sq, d, sk, ds.data(), k.data(), g.dq.data());
  gemm<T>(true, false, sk, d, sq, ds.data(), q.data(), g.dk.data());
  return g;
}

void flash_attn_grad(KernelContext& ctx) {
  const Tensor q = ctx.input("q"), k = ctx.input("k"), v = ctx.input("v");
  const Tensor out = ctx.input("out"), lse = ctx.input("softmax_lse");
  const Tensor dout = ctx.input("out@GRAD");
  const auto mask = optional_input_meta(ctx, "attn_mask");
  const meta::FlashAttnMeta m =
      meta::flash_attn_grad(ctx, meta_of(q), meta_of(k), meta_of(v), meta_of(out), meta_of(lse),
                            pointer(mask), meta_of(dout));
  Tensor* dq = ctx.has_output("q@GRAD") ? &ctx.output("q@GRAD") : nullptr;
  Tensor* dk = ctx.has_output("k@GRAD") ? &ctx.output("k@GRAD") : nullptr;
  Tensor* dv = ctx.has_output("v@GRAD") ? &ctx.output("v@GRAD") : nullptr;
  dispatch_float(q.dtype(), ctx, "q", [&]<typename T>() {
    if (dq) dq->resize(q.dtype(), q.shape());
    if (dk) dk->resize(k.dtype(), k.shape());
    if (dv) dv->resize(v.dtype(), v.shape());
    for (int64_t b = 0; b < m.batch; ++b)
      for (int64_t h = 0; h < m.heads; ++h) {
        const HeadMatrices<T> head{m, b, h};
        const HeadGrads<T> g = head_grads(
            m, head.gather(q, m.seq_q), head.gather(k, m.seq_k), head.gather(v, m.seq_k),
            head.gather(out, m.seq_q), head.gather(dout, m.seq_q),
            lse.data<float>() + (b * m.heads + h) * m.seq_q);
        if (dq) head.scatter(g.dq, m.seq_q, *dq);
        if (dk) head.scatter(g.dk, m.seq_k, *dk);
        if (dv) head.scatter(g.dv, m.seq_k, *dv);
      }
  });
}

}  // namespace

// softmax_lse stays FP32 beside 16-bit q, k, v (an output kept FP32; an
// input the 16-bit kernel takes as it is).
CTP_REGISTER_KERNEL(flash_attn, CPU, computed_in_float(flash_attn, {}, {"softmax_lse"}));
CTP_REGISTER_KERNEL(flash_attn_grad, CPU,
                    computed_in_float(flash_attn_grad, {"softmax_lse"}));

}  // namespace ctp::cpu
