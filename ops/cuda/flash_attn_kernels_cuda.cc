// CUDA kernels of flash_attn and flash_attn_grad (FP32, FP16, BF16; FP64 is
// the CPU kernel's only) under the rules of ops/schema/meta_attention.h, as
// the CPU kernels. Not yet one fused kernel: per batch index, cuBLAS
// computes every head's scores S = scale Q K^T in FP32 straight from q and
// k's [batch, seq, heads, head_dim] layout (strided_gemm.h: no transposes),
// a row kernel (attention_launch.h) turns them into lse and P (in q's
// dtype), and O = P V is written straight into out's layout. The backward
// recomputes S and P from lse (nothing but lse is kept between the two) and
// runs dP = dO V^T, the row step dS = P (dP - rowsum(dO * O)) scale, then
// dV = P^T dO, dQ = dS K, dK = dS^T Q, each a strided GEMM with FP32 sums.
// The scores and their gradients live in scratch for one batch index at a
// time (BERT-large: 16 heads x 512 x 512, 16 MiB in FP32), freed when the op
// returns; the heads of a batch index are one strided batch (in rounds of
// fewer heads, to keep the scratch in the L2 cache, BERT-large's backward
// ran slower: bench/RESULTS.md, session 15).
#include <cuda_runtime.h>

#include <optional>
#include <string_view>
#include <type_traits>

#include "executor/cuda/cuda_check.h"
#include "ops/cuda/attention_launch.h"
#include "ops/cuda/cuda_kernel_util.h"
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

// The per-batch-index views of q/k/v-shaped tensors: head h of batch index
// b is a [seq, head_dim] matrix whose rows are heads * head_dim apart.
struct HeadLayout {
  int64_t seq = 0, heads = 0, head_dim = 0;
  int64_t batch_stride() const { return seq * heads * head_dim; }
  MatrixBatch read(const void* base, int64_t elem, int64_t b, bool trans = false) const {
    return {static_cast<const char*>(base) + b * batch_stride() * elem, heads * head_dim, head_dim,
            trans};
  }
  OutputBatch write(void* base, int64_t elem, int64_t b) const {
    return {static_cast<char*>(base) + b * batch_stride() * elem, heads * head_dim, head_dim};
  }
};

// The scores of one batch index: heads x [seq_q, seq_k], contiguous.
struct ScoreLayout {
  int64_t seq_q = 0, seq_k = 0;
  MatrixBatch read(const void* p, bool trans = false) const {
    return {p, seq_k, seq_q * seq_k, trans};
  }
  OutputBatch write(void* p) const { return {p, seq_k, seq_q * seq_k}; }
};

struct Attention {
  meta::FlashAttnMeta m;
  HeadLayout q, k, v, out;  // out: out, out@GRAD
  ScoreLayout scores;
  launch::AttentionRows rows;
  DataType dtype;
};

Attention plan(const meta::FlashAttnMeta& m, DataType dtype) {
  Attention a;
  a.m = m;
  a.q = {m.seq_q, m.heads, m.head_dim};
  a.k = {m.seq_k, m.heads, m.head_dim};
  a.v = {m.seq_k, m.heads, m.head_dim};
  a.out = {m.seq_q, m.heads, m.head_dim};
  a.scores = {m.seq_q, m.seq_k};
  a.rows = {m.heads * m.seq_q, m.seq_q, m.seq_k, m.causal};
  a.dtype = dtype;
  return a;
}

// S = scale Q_b K_b^T for every head of batch index b, in FP32.
void scores_of(KernelContext& ctx, const Attention& a, const void* q, const void* k, int64_t b,
               float* s) {
  const int64_t elem = static_cast<int64_t>(element_size(a.dtype));
  strided_gemm(ctx, a.dtype, DataType::FP32, a.m.seq_q, a.m.seq_k, a.m.head_dim, a.m.scale,
               a.q.read(q, elem, b), a.k.read(k, elem, b, true), a.scores.write(s), a.m.heads);
}

template <typename T>
void forward(KernelContext& ctx, const Attention& a, const T* q, const T* k, const T* v, T* out,
             float* lse, T* kept_probs) {
  DeviceContext& dc = device_context(ctx);
  const int64_t per_batch = a.rows.rows * a.m.seq_k, elem = sizeof(T);
  Tensor s = scratch<float>(dc, per_batch);
  Tensor p16;
  if (!std::is_same_v<T, float> && !kept_probs) p16 = scratch<T>(dc, per_batch);
  for (int64_t b = 0; b < a.m.batch; ++b) {
    T* p = kept_probs ? kept_probs + b * per_batch
                      : (std::is_same_v<T, float> ? reinterpret_cast<T*>(s.data<float>())
                                                  : p16.data<T>());
    scores_of(ctx, a, q, k, b, s.data<float>());
    launch::attention_probs<T>(s.data<float>(), p, lse + b * a.rows.rows, a.rows,
                               dc.compute_stream());
    strided_gemm(ctx, a.dtype, a.dtype, a.m.seq_q, a.m.head_dim, a.m.seq_k, 1,
                 a.scores.read(p), a.v.read(v, elem, b), a.out.write(out, elem, b), a.m.heads);
  }
}

std::optional<TensorMeta> optional_input_meta(KernelContext& ctx, std::string_view slot) {
  if (!ctx.has_input(slot)) return std::nullopt;
  return meta_of(ctx.input(slot));
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

void flash_attn(KernelContext& ctx) {
  const Tensor q = device_input(ctx, "q");
  const Tensor k = device_input(ctx, "k");
  const Tensor v = device_input(ctx, "v");
  const std::optional<TensorMeta> fixed = optional_input_meta(ctx, "fixed_seed_offset");
  const std::optional<TensorMeta> mask = optional_input_meta(ctx, "attn_mask");
  const meta::FlashAttnMeta m =
      meta::flash_attn(ctx, meta_of(q), meta_of(k), meta_of(v), fixed ? &*fixed : nullptr,
                       mask ? &*mask : nullptr);
  dispatch_attention(q.dtype(), ctx, [&]<typename T>() {
    Tensor& out = device_output(ctx, "out", 0, q.dtype(), m.out_shape);
    Tensor& lse = device_output(ctx, "softmax_lse", 0, DataType::FP32, m.softmax_lse_shape);
    T* kept = nullptr;
    if (ctx.has_output("softmax")) {
      Tensor& probs = device_output(ctx, "softmax", 0, q.dtype(), m.softmax_shape);
      if (m.return_softmax) kept = probs.data<T>();
    }
    forward<T>(ctx, plan(m, q.dtype()), q.data<T>(), k.data<T>(), v.data<T>(), out.data<T>(),
               lse.data<float>(), kept);
  });
  if (ctx.has_output("seed_offset")) write_seed_offset(ctx, fixed.has_value());
}

// dV, dQ and dK of batch index b from P and dS (heads x [seq_q, seq_k]).
template <typename T>
void input_grads(KernelContext& ctx, const Attention& a, int64_t b, const T* p, const T* ds,
                 const T* q, const T* k, const T* dout, T* dq, T* dk, T* dv) {
  const int64_t elem = sizeof(T);
  const meta::FlashAttnMeta& m = a.m;
  if (dv)
    strided_gemm(ctx, a.dtype, a.dtype, m.seq_k, m.head_dim, m.seq_q, 1,
                 a.scores.read(p, true), a.out.read(dout, elem, b),
                 a.v.write(dv, elem, b), m.heads);
  if (dq)
    strided_gemm(ctx, a.dtype, a.dtype, m.seq_q, m.head_dim, m.seq_k, 1, a.scores.read(ds),
                 a.k.read(k, elem, b), a.q.write(dq, elem, b), m.heads);
  if (dk)
    strided_gemm(ctx, a.dtype, a.dtype, m.seq_k, m.head_dim, m.seq_q, 1,
                 a.scores.read(ds, true), a.q.read(q, elem, b), a.k.write(dk, elem, b),
                 m.heads);
}

template <typename T>
void backward(KernelContext& ctx, const Attention& a, const T* q, const T* k, const T* v,
              const T* out, const float* lse, const T* dout, T* dq, T* dk, T* dv) {
  DeviceContext& dc = device_context(ctx);
  const meta::FlashAttnMeta& m = a.m;
  const int64_t per_batch = a.rows.rows * m.seq_k, elem = sizeof(T);
  constexpr bool fp32 = std::is_same_v<T, float>;
  Tensor s = scratch<float>(dc, per_batch), dp = scratch<float>(dc, per_batch);
  Tensor p16, ds16;
  if (!fp32) p16 = scratch<T>(dc, per_batch), ds16 = scratch<T>(dc, per_batch);
  T* p = fp32 ? reinterpret_cast<T*>(s.data<float>()) : p16.data<T>();
  T* ds = fp32 ? reinterpret_cast<T*>(dp.data<float>()) : ds16.data<T>();
  launch::AttentionGradRows g{a.rows, m.heads, m.head_dim, m.scale};
  for (int64_t b = 0; b < m.batch; ++b) {
    scores_of(ctx, a, q, k, b, s.data<float>());
    strided_gemm(ctx, a.dtype, DataType::FP32, m.seq_q, m.seq_k, m.head_dim, 1,
                 a.out.read(dout, elem, b), a.v.read(v, elem, b, true),
                 a.scores.write(dp.data<float>()), m.heads);
    const int64_t at = b * a.out.batch_stride();
    launch::attention_grad_scores<T>(s.data<float>(), dp.data<float>(), lse + b * a.rows.rows,
                                     out + at, dout + at, p, ds, g, dc.compute_stream());
    input_grads<T>(ctx, a, b, p, ds, q, k, dout, dq, dk, dv);
  }
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
                            mask ? &*mask : nullptr, meta_of(dout));
  dispatch_attention(q.dtype(), ctx, [&]<typename T>() {
    auto grad = [&](const char* slot, const Tensor& like) -> T* {
      if (!ctx.has_output(slot)) return nullptr;
      return device_output(ctx, slot, 0, like.dtype(), like.shape()).data<T>();
    };
    T* dq = grad("q@GRAD", q);
    T* dk = grad("k@GRAD", k);
    T* dv = grad("v@GRAD", v);
    backward<T>(ctx, plan(m, q.dtype()), q.data<T>(), k.data<T>(), v.data<T>(), out.data<T>(),
                lse.data<float>(), dout.data<T>(), dq, dk, dv);
  });
}

}  // namespace

CTP_REGISTER_KERNEL(flash_attn, CUDA, flash_attn);
CTP_REGISTER_KERNEL(flash_attn_grad, CUDA, flash_attn_grad);

}  // namespace ctp::cuda
