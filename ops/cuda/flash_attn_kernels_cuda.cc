// CUDA kernels of flash_attn and flash_attn_grad (FP32, FP16, BF16; FP64 is
// the CPU kernel's only) under the rules of ops/schema/meta_attention.h, as
// the CPU kernels. Not yet one fused kernel: cuBLAS computes every head's
// scores S = scale Q K^T in FP32 straight from q and k's [batch, seq, heads,
// head_dim] layout (strided_gemm.h: no transposes; the batch indices' heads
// are one batch of matrices, addressed through a pointer array), a row kernel
// (attention_launch.h) turns them into lse and P (in q's dtype), and O = P V
// is written straight into out's layout. The backward recomputes S and P
// from lse (nothing but lse is kept between the two) and runs dP = dO V^T,
// the row step dS = P (dP - rowsum(dO * O)) scale, then dV = P^T dO,
// dQ = dS K, dK = dS^T Q, each one GEMM with FP32 sums. The scores and their
// gradients live in scratch for a round of batch indices (kRoundBytes at
// most; BERT-large's 8 in one round), freed when the op returns. (A GEMM per
// batch index, or fewer heads a GEMM, ran slower: bench/RESULTS.md, session
// 15.)
//
// With 16-bit q, k, v and a head_dim of 32 or 64 (BERT's), the op runs the
// fused kernels of fused_attention_launch.h instead: no scores in memory,
// and no scratch but one float per query row in the backward.
#include <cuda_runtime.h>

#include <algorithm>
#include <initializer_list>
#include <optional>
#include <string_view>
#include <type_traits>

#include "executor/cuda/cuda_check.h"
#include "ops/cuda/attention_launch.h"
#include "ops/cuda/cuda_kernel_util.h"
#include "ops/cuda/fused_attention_launch.h"
#include "ops/cuda/strided_gemm.h"
#include "ops/schema/meta_attention.h"

namespace ctp::cuda {
namespace {

// q, k and v's types as the launchers name them.
template <typename F>
void dispatch_attention(DataType dtype, const KernelContext& ctx, F&& f) {
  dispatch_dtype<float, launch::Half, launch::BFloat16>(
      dtype, ctx, "input q", "flash_attn's CUDA kernel", std::forward<F>(f));
}

// Device memory for one op's intermediates, freed (stream-ordered) when the
// tensor goes.
template <typename U>
Tensor scratch(DeviceContext& dc, int64_t elements) {
  return Tensor::view(allocate_uninitialized_buffer(
                          dc.device(), static_cast<std::size_t>(elements) * sizeof(U)),
                      0, data_type_of<U>(), {elements});
}

// Views of q/k/v-shaped tensors from batch index b0 on: head h of batch
// index b0 + o is a [seq, head_dim] matrix whose rows are heads * head_dim
// apart, matrix o * heads + h of a two-level batch (strided_gemm.h).
struct HeadLayout {
  int64_t seq = 0, heads = 0, head_dim = 0;
  int64_t batch_stride() const { return seq * heads * head_dim; }
  MatrixBatch read(const void* base, int64_t elem, int64_t b0, bool trans = false) const {
    return {static_cast<const char*>(base) + b0 * batch_stride() * elem, heads * head_dim,
            head_dim, trans, batch_stride()};
  }
  OutputBatch write(void* base, int64_t elem, int64_t b0) const {
    return {static_cast<char*>(base) + b0 * batch_stride() * elem, heads * head_dim, head_dim,
            batch_stride()};
  }
};

// A round's scores: [batch indices, heads, seq_q, seq_k], contiguous.
struct ScoreLayout {
  int64_t heads = 0, seq_q = 0, seq_k = 0;
  MatrixBatch read(const void* p, bool trans = false) const {
    return {p, seq_k, seq_q * seq_k, trans, heads * seq_q * seq_k};
  }
  OutputBatch write(void* p) const { return {p, seq_k, seq_q * seq_k, heads * seq_q * seq_k}; }
};

// The most scratch one round of batch indices takes (scores, probabilities
// and, backward, their gradients): more batch indices a round mean fewer,
// larger GEMMs (BERT-large's 8 in one); the bound keeps long sequences'
// scratch in proportion.
constexpr int64_t kRoundBytes = int64_t{512} << 20;

// One op's work in rounds of `batches` batch indices, each round's GEMMs one
// batch of rounds x heads matrices.
struct Attention {
  meta::FlashAttnMeta m;
  HeadLayout q, k, out;  // v has k's layout, out@GRAD out's
  ScoreLayout scores;
  DataType dtype;
  int64_t elem;
  int64_t batches;  // per round
  int64_t scores_per_round() const { return batches * m.heads * m.seq_q * m.seq_k; }
  launch::AttentionRows rows(int64_t count) const {
    return {count * m.heads * m.seq_q, m.seq_q, m.seq_k, m.causal};
  }
  // Calls round(b0, count) for each round.
  template <typename F>
  void for_each_round(F&& round) const {
    for (int64_t b0 = 0; b0 < m.batch; b0 += batches) round(b0, std::min(batches, m.batch - b0));
  }
};

// `scratch_bytes` per score of a round.
Attention plan(const meta::FlashAttnMeta& m, DataType dtype, int64_t scratch_bytes) {
  const int64_t per_batch = std::max<int64_t>(1, m.heads * m.seq_q * m.seq_k * scratch_bytes);
  return {m,
          {m.seq_q, m.heads, m.head_dim},
          {m.seq_k, m.heads, m.head_dim},
          {m.seq_q, m.heads, m.head_dim},
          {m.heads, m.seq_q, m.seq_k},
          dtype,
          static_cast<int64_t>(element_size(dtype)),
          std::clamp<int64_t>(kRoundBytes / per_batch, 1, std::max<int64_t>(1, m.batch))};
}

// S = scale Q K^T of every head of batch indices b0 .. b0 + count - 1, in FP32.
void scores_of(KernelContext& ctx, const Attention& a, const void* q, const void* k, int64_t b0,
               int64_t count, float* s) {
  strided_gemm(ctx, a.dtype, DataType::FP32, a.m.seq_q, a.m.seq_k, a.m.head_dim, a.m.scale,
               a.q.read(q, a.elem, b0), a.k.read(k, a.elem, b0, true), a.scores.write(s),
               count * a.m.heads, a.m.heads);
}

template <typename T>
void forward(KernelContext& ctx, const meta::FlashAttnMeta& m, const T* q, const T* k, const T* v,
             T* out, float* lse, T* kept_probs) {
  DeviceContext& dc = device_context(ctx);
  constexpr bool fp32 = std::is_same_v<T, float>;  // P then overwrites S
  const Attention a = plan(m, data_type_of<T>(), sizeof(float) + (fp32 ? 0 : sizeof(T)));
  Tensor s = scratch<float>(dc, a.scores_per_round());
  Tensor p16;
  if (!fp32 && !kept_probs) p16 = scratch<T>(dc, a.scores_per_round());
  a.for_each_round([&](int64_t b0, int64_t count) {
    const int64_t first_row = b0 * m.heads * m.seq_q;
    T* p = kept_probs ? kept_probs + first_row * m.seq_k
                      : (fp32 ? reinterpret_cast<T*>(s.data<float>()) : p16.data<T>());
    scores_of(ctx, a, q, k, b0, count, s.data<float>());
    launch::attention_probs<T>(s.data<float>(), p, lse + first_row, a.rows(count),
                               dc.compute_stream());
    strided_gemm(ctx, a.dtype, a.dtype, m.seq_q, m.head_dim, m.seq_k, 1, a.scores.read(p),
                 a.k.read(v, a.elem, b0), a.out.write(out, a.elem, b0), count * m.heads, m.heads);
  });
}

// seed_offset: fixed_seed_offset's values when given, else zeros, as the CPU
// kernel writes it (no dropout mask is drawn, so no generator state).
void write_seed_offset(KernelContext& ctx, bool fixed) {
  DeviceContext& dc = device_context(ctx);
  Tensor& seed = device_output(ctx, "seed_offset", 0, DataType::INT64, {2});
  if (fixed)
    CTP_CUDA_CHECK(cudaMemcpyAsync(seed.raw_data(),
                                   device_input(ctx, "fixed_seed_offset").raw_data(), seed.bytes(),
                                   cudaMemcpyDeviceToDevice, dc.compute_stream()));
  else
    CTP_CUDA_CHECK(cudaMemsetAsync(seed.raw_data(), 0, seed.bytes(), dc.compute_stream()));
}

// The fused kernels' view of the op, when they take it: 16-bit q, k, v of a
// head_dim they are built for, every tensor aligned for their 16-byte loads.
std::optional<launch::FusedAttention> fused_attention(const meta::FlashAttnMeta& m, DataType dtype,
                                                      std::initializer_list<const void*> tensors) {
  if (dtype != DataType::BF16 && dtype != DataType::FP16) return std::nullopt;
  const void* const* all = tensors.begin();
  launch::FusedAttention a;
  a.q = static_cast<const uint16_t*>(all[0]);
  a.k = static_cast<const uint16_t*>(all[1]);
  a.v = static_cast<const uint16_t*>(all[2]);
  a.batch = m.batch;
  a.seq_q = m.seq_q;
  a.seq_k = m.seq_k;
  a.heads = m.heads;
  a.head_dim = m.head_dim;
  a.scale = m.scale;
  a.causal = m.causal;
  a.bf16 = dtype == DataType::BF16;
  if (!launch::fused_attention_supported(a, all, static_cast<int>(tensors.size())))
    return std::nullopt;
  return a;
}

void flash_attn(KernelContext& ctx) {
  const Tensor q = device_input(ctx, "q");
  const Tensor k = device_input(ctx, "k");
  const Tensor v = device_input(ctx, "v");
  const std::optional<TensorMeta> fixed = optional_input_meta(ctx, "fixed_seed_offset");
  const std::optional<TensorMeta> mask = optional_input_meta(ctx, "attn_mask");
  const meta::FlashAttnMeta m =
      meta::flash_attn(ctx, meta_of(q), meta_of(k), meta_of(v), pointer(fixed),
                       pointer(mask));
  dispatch_attention(q.dtype(), ctx, [&]<typename T>() {
    Tensor& out = device_output(ctx, "out", 0, q.dtype(), m.out_shape);
    Tensor& lse = device_output(ctx, "softmax_lse", 0, DataType::FP32, m.softmax_lse_shape);
    T* kept = nullptr;
    if (ctx.has_output("softmax")) {
      Tensor& probs = device_output(ctx, "softmax", 0, q.dtype(), m.softmax_shape);
      if (m.return_softmax) kept = probs.data<T>();
    }
    // The probabilities asked for back need the path that writes them.
    const auto fused = kept ? std::nullopt
                            : fused_attention(m, q.dtype(), {q.raw_data(), k.raw_data(),
                                                             v.raw_data(), out.raw_data()});
    if (fused)
      launch::fused_attention_forward(*fused, static_cast<uint16_t*>(out.raw_data()),
                                      lse.data<float>(), device_context(ctx).compute_stream());
    else
      forward<T>(ctx, m, q.data<T>(), k.data<T>(), v.data<T>(), out.data<T>(), lse.data<float>(),
                 kept);
  });
  if (ctx.has_output("seed_offset")) write_seed_offset(ctx, fixed.has_value());
}

// The input gradients of a round (b0, count) from its P and dS.
template <typename T>
struct InputGrads {
  const T *q, *k, *dout;
  T *dq, *dk, *dv;  // null: not asked for
};

template <typename T>
void input_grads(KernelContext& ctx, const Attention& a, int64_t b0, int64_t count, const T* p,
                 const T* ds, const InputGrads<T>& g) {
  const meta::FlashAttnMeta& m = a.m;
  const int64_t n = count * m.heads;
  if (g.dv)  // P^T dO
    strided_gemm(ctx, a.dtype, a.dtype, m.seq_k, m.head_dim, m.seq_q, 1, a.scores.read(p, true),
                 a.out.read(g.dout, a.elem, b0), a.k.write(g.dv, a.elem, b0), n, m.heads);
  if (g.dq)  // dS K
    strided_gemm(ctx, a.dtype, a.dtype, m.seq_q, m.head_dim, m.seq_k, 1, a.scores.read(ds),
                 a.k.read(g.k, a.elem, b0), a.q.write(g.dq, a.elem, b0), n, m.heads);
  if (g.dk)  // dS^T Q
    strided_gemm(ctx, a.dtype, a.dtype, m.seq_k, m.head_dim, m.seq_q, 1, a.scores.read(ds, true),
                 a.q.read(g.q, a.elem, b0), a.k.write(g.dk, a.elem, b0), n, m.heads);
}

template <typename T>
void backward(KernelContext& ctx, const meta::FlashAttnMeta& m, const T* v, const T* out,
              const float* lse, const InputGrads<T>& g) {
  DeviceContext& dc = device_context(ctx);
  constexpr bool fp32 = std::is_same_v<T, float>;  // P and dS then overwrite S and dP
  const Attention a =
      plan(m, data_type_of<T>(), 2 * sizeof(float) + (fp32 ? 0 : 2 * sizeof(T)));
  Tensor s = scratch<float>(dc, a.scores_per_round());
  Tensor dp = scratch<float>(dc, a.scores_per_round());
  Tensor p16, ds16;
  if (!fp32) {
    p16 = scratch<T>(dc, a.scores_per_round());
    ds16 = scratch<T>(dc, a.scores_per_round());
  }
  T* p = fp32 ? reinterpret_cast<T*>(s.data<float>()) : p16.data<T>();
  T* ds = fp32 ? reinterpret_cast<T*>(dp.data<float>()) : ds16.data<T>();
  a.for_each_round([&](int64_t b0, int64_t count) {
    scores_of(ctx, a, g.q, g.k, b0, count, s.data<float>());
    strided_gemm(ctx, a.dtype, DataType::FP32, m.seq_q, m.seq_k, m.head_dim, 1,
                 a.out.read(g.dout, a.elem, b0), a.k.read(v, a.elem, b0, true),
                 a.scores.write(dp.data<float>()), count * m.heads, m.heads);
    const int64_t at = b0 * a.out.batch_stride();
    launch::attention_grad_scores<T>(s.data<float>(), dp.data<float>(),
                                     lse + b0 * m.heads * m.seq_q, out + at, g.dout + at, p, ds,
                                     {a.rows(count), m.heads, m.head_dim, m.scale},
                                     dc.compute_stream());
    input_grads<T>(ctx, a, b0, count, p, ds, g);
  });
}

// The fused backward; its row sums D live in scratch for the op.
template <typename T>
void fused_backward(KernelContext& ctx, const launch::FusedAttention& a, const Tensor& out,
                    const Tensor& dout, const Tensor& lse, const InputGrads<T>& g) {
  DeviceContext& dc = device_context(ctx);
  Tensor rows = scratch<float>(dc, a.batch * a.heads * a.seq_q);
  launch::FusedAttentionGrads grads;
  grads.out = static_cast<const uint16_t*>(out.raw_data());
  grads.dout = static_cast<const uint16_t*>(dout.raw_data());
  grads.lse = lse.data<float>();
  grads.rows = rows.data<float>();
  grads.dq = reinterpret_cast<uint16_t*>(g.dq);
  grads.dk = reinterpret_cast<uint16_t*>(g.dk);
  grads.dv = reinterpret_cast<uint16_t*>(g.dv);
  launch::fused_attention_backward(a, grads, dc.compute_stream());
}

void flash_attn_grad(KernelContext& ctx) {
  const Tensor q = device_input(ctx, "q");
  const Tensor k = device_input(ctx, "k");
  const Tensor v = device_input(ctx, "v");
  const Tensor out = device_input(ctx, "out");
  const Tensor lse = device_input(ctx, "softmax_lse");
  const Tensor dout = device_input(ctx, "out@GRAD");
  const std::optional<TensorMeta> mask = optional_input_meta(ctx, "attn_mask");
  const meta::FlashAttnMeta m =
      meta::flash_attn_grad(ctx, meta_of(q), meta_of(k), meta_of(v), meta_of(out), meta_of(lse),
                            pointer(mask), meta_of(dout));
  dispatch_attention(q.dtype(), ctx, [&]<typename T>() {
    auto grad = [&](const char* slot, const Tensor& like) -> T* {
      if (!ctx.has_output(slot)) return nullptr;
      return device_output(ctx, slot, 0, like.dtype(), like.shape()).data<T>();
    };
    const InputGrads<T> g{q.data<T>(),       k.data<T>(),       dout.data<T>(),
                          grad("q@GRAD", q), grad("k@GRAD", k), grad("v@GRAD", v)};
    const auto fused =
        fused_attention(m, q.dtype(), {q.raw_data(), k.raw_data(), v.raw_data(), out.raw_data(),
                                       dout.raw_data(), g.dq, g.dk, g.dv});
    if (fused) {
      fused_backward(ctx, *fused, out, dout, lse, g);
      return;
    }
    backward<T>(ctx, m, v.data<T>(), out.data<T>(), lse.data<float>(), g);
  });
}

}  // namespace

CTP_REGISTER_KERNEL(flash_attn, CUDA, flash_attn);
CTP_REGISTER_KERNEL(flash_attn_grad, CUDA, flash_attn_grad);

}  // namespace ctp::cuda
