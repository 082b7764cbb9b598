// batch_norm and batch_norm_grad on the GPU (batch_norm_device_kernels.h).
// Both are bound by memory, so each reads X (and dY) as few times as the
// formulas allow, in 16-byte packs where the tensors' alignment and the
// planes' width allow:
//   forward:  one pass of per-channel sums, then Y = (X - mean) * a + bias;
//   backward: one pass of per-channel sums of dY and dY * (X - mean), then
//             dX = A * dY - B * (X - mean) - C.
// The sums of a channel are split over blocks (a whole GPU's worth when
// channels are few); the channel's last block to finish adds them in block
// order and computes the statistics and the coefficients (a; A, B, C):
// results are the same every run, and differ from the CPU's sequential sums in
// the last bits.
#include <algorithm>

#include "ops/cuda/batch_norm_device_kernels.h"
#include "ops/cuda/block_sum.cuh"
#include "ops/cuda/device_math.cuh"
#include "ops/cuda/pack.cuh"

namespace ctp::cuda::launch {
namespace {

using namespace detail;  // ops/cuda/device_math.cuh, pack.cuh, block_sum.cuh

// How a channel's planes are split over blocks: `splits` blocks per channel,
// block s taking planes [s * outer / splits, (s + 1) * outer / splits).
// Enough blocks to fill the GPU (ResNet-50's last layers have 256 to 2048
// channels of 3K to 13K elements), none with under 2K elements.
int64_t splits_of(const BatchNormGeometry& g) {
  const int64_t by_size = g.outer * g.inner / 2048;
  const int64_t by_grid = 2048 / (g.channels > 0 ? g.channels : 1);
  return std::max<int64_t>(1, std::min({by_size, by_grid, g.outer}));
}

// The most packs of N that one plane's `inner` elements touch: a plane
// starts on a pack when inner is a multiple of N, else anywhere in one.
int64_t packs_per_plane(int64_t inner, int n) {
  return inner % n == 0 ? inner / n : (inner + n - 2) / n + 1;
}

__host__ __device__ int64_t elements_of(const BatchNormGeometry& g) {
  return g.outer * g.channels * g.inner;
}

// Pack p of a tensor of n elements: one load when it lies inside, else its
// elements below n one at a time (the last pack of a tensor whose size is not
// a multiple of N; the rest are left default).
template <int N, typename T, typename I>
__device__ inline Pack<T, N> load_pack(const T* a, I p, I n) {
  if ((p + 1) * N <= n) return reinterpret_cast<const Pack<T, N>*>(a)[p];
  Pack<T, N> r{};
#pragma unroll
  for (int e = 0; e < N; ++e)
    if (p * N + e < n) r.v[e] = a[p * N + e];
  return r;
}

// The channel's total of its blocks' partial sums, by a warp: lane l adds
// blocks l, l + 32, ..., then a fixed tree adds the lanes (the same bits
// every run); lane 0 holds the total. The sums are read past L1 (__ldcg):
// other blocks wrote them during this kernel.
template <typename U>
__device__ U channel_total(const U* partials, int64_t c, int64_t splits) {
  U v = 0;
  for (int64_t s = threadIdx.x & 31u; s < splits; s += 32) v += __ldcg(partials + c * splits + s);
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}

// Per channel c, from the totals of the forward sums (sum(x - k) and
// sum((x - k)^2), ignored without batch statistics): the statistics (the
// batch's, or the running ones), the running statistics' update, the saved
// mean and 1 / std, and the apply pass's a = scale / std.
template <typename T, typename U>
struct ForwardFinish {
  const T* x;
  const U *scale, *running_mean, *running_var;
  U *mean_out, *var_out, *saved_mean, *saved_inv_std, *a;
  __device__ void operator()(int64_t c, U d, U squares, const BatchNormGeometry& g) const {
    U mean = running_mean[c], var = running_var[c];
    if (g.batch_stats) {
      const U count = static_cast<U>(g.outer * g.inner);
      const U shift = count > U(0) ? U(widen(x[c * g.inner])) : U(0);
      d /= count;
      squares /= count;
      mean = shift + d;
      var = max(squares - d * d, U(0));
      const U momentum = static_cast<U>(g.momentum);
      mean_out[c] = running_mean[c] * momentum + mean * (U(1) - momentum);
      var_out[c] = running_var[c] * momentum + var * (U(1) - momentum);
    } else {
      mean_out[c] = mean;
      var_out[c] = var;
    }
    const U inv_std = U(1) / sqrt(var + static_cast<U>(g.epsilon));
    saved_mean[c] = mean;
    saved_inv_std[c] = inv_std;
    a[c] = scale[c] * inv_std;
  }
};

// Per channel c, from the totals of sum(dy) and sum(dy * (x - mean)): dScale,
// dBias and the dX pass's coefficients, dX = A * dy - B * (x - mean) - C
// (without batch statistics dX = A * dy).
template <typename U>
struct GradFinish {
  const U *scale, *spread;
  U *dscale, *dbias, *coef;
  __device__ void operator()(int64_t c, U sum_dy, U sum_dy_xmu, const BatchNormGeometry& g) const {
    const U inv_std =
        g.batch_stats ? spread[c] : U(1) / sqrt(spread[c] + static_cast<U>(g.epsilon));
    const U sum_dy_xhat = sum_dy_xmu * inv_std;
    dbias[c] = sum_dy;
    dscale[c] = sum_dy_xhat;
    const U k = scale[c] * inv_std, count = static_cast<U>(g.outer * g.inner);
    coef[c] = k;
    coef[g.channels + c] = k * inv_std * sum_dy_xhat / count;
    coef[2 * g.channels + c] = k * sum_dy / count;
  }
};

// The two sums block (c, s) of grid [channels * splits] adds over its planes
// of channel c, to partials[block] and partials[blocks + block]:
//   forward (Grad false, a = X): sum(x - k) and sum((x - k)^2), with k the
//     channel's first element (a shift near the mean, so that the variance
//     E[(x - k)^2] - E[x - k]^2 does not cancel);
//   backward (a = dY, b = X): sum(dy) and sum(dy * (x - mean[c])).
// Each plane is walked as per_plane slots, pack r of plane q being slot
// q * per_plane + r; the block's threads take consecutive slots (coalesced
// loads), kUnroll packs in flight each, stepping (q, r) without divisions.
// Whole: planes start and end on packs (inner a multiple of N); else the
// elements of other channels in a pack a plane shares are masked.
// The channel's last block to finish (counted in counters[c], which it sets
// back to 0) adds the blocks' sums in block order and calls finish.
template <bool Grad, int N, bool Whole, typename I, typename T, typename U, typename Finish>
__global__ void channel_sums_kernel(const T* a, const T* b, const U* mean, U* partials,
                                    unsigned* counters, Finish finish, int64_t splits,
                                    I per_plane, BatchNormGeometry g) {
  constexpr int kUnroll = 4;
  __shared__ U shared[32];
  const int64_t c = blockIdx.x / splits, s = blockIdx.x % splits;
  const int64_t first = s * g.outer / splits, end = (s + 1) * g.outer / splits;
  const I n = static_cast<I>(elements_of(g)), inner = static_cast<I>(g.inner);
  const I plane_stride = static_cast<I>(g.channels * g.inner);
  const I base = static_cast<I>((first * g.channels + c) * g.inner);
  const I slots = static_cast<I>(end - first) * per_plane;
  const U center = Grad ? mean[c] : n > 0 ? U(widen(a[c * g.inner])) : U(0);
  I q = threadIdx.x / per_plane, r = threadIdx.x % per_plane;
  const I dq = blockDim.x / per_plane, dr = blockDim.x % per_plane;
  U s1 = 0, s2 = 0;
  for (I k0 = threadIdx.x; k0 < slots; k0 += kUnroll * blockDim.x) {
    Pack<T, N> va[kUnroll], vb[kUnroll];
    int lo[kUnroll], hi[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      lo[u] = 0;
      hi[u] = k0 + u * blockDim.x < slots ? N : 0;
      const I begin = base + q * plane_stride, p = begin / N + r;
      r += dr;
      q += dq;
      if (r >= per_plane) {
        r -= per_plane;
        ++q;
      }
      if (hi[u] == 0) continue;
      if constexpr (Whole) {
        va[u] = reinterpret_cast<const Pack<T, N>*>(a)[p];
        if constexpr (Grad) vb[u] = reinterpret_cast<const Pack<T, N>*>(b)[p];
      } else {
        // A plane that starts on a pack touches one pack fewer than per_plane.
        const I at = p * N, stop = begin + inner;
        lo[u] = begin > at ? static_cast<int>(begin - at) : 0;
        hi[u] = stop <= at ? 0 : stop - at < N ? static_cast<int>(stop - at) : N;
        if (hi[u] == 0) continue;
        va[u] = load_pack<N>(a, p, n);
        if constexpr (Grad) vb[u] = load_pack<N>(b, p, n);
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if (hi[u] == 0) continue;
#pragma unroll
      for (int e = 0; e < N; ++e) {
        if (!Whole && (e < lo[u] || e >= hi[u])) continue;
        if constexpr (Grad) {
          const U d = U(widen(va[u].v[e]));
          s1 += d;
          s2 += d * (U(widen(vb[u].v[e])) - center);
        } else {
          const U v = U(widen(va[u].v[e])) - center;
          s1 += v;
          s2 += v * v;
        }
      }
    }
  }
  s1 = block_sum(s1, shared);
  s2 = block_sum(s2, shared);
  __shared__ bool last;
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = s1;
    partials[gridDim.x + blockIdx.x] = s2;
    __threadfence();  // the sums are visible before the count says so
    last = atomicAdd(counters + c, 1u) == splits - 1;
  }
  __syncthreads();
  if (!last || threadIdx.x >= 32) return;
  __threadfence();
  const U t1 = channel_total(partials, c, splits);
  const U t2 = channel_total(partials + gridDim.x, c, splits);
  if (threadIdx.x == 0) {
    finish(c, t1, t2, g);
    counters[c] = 0;
  }
}

// The statistics without batch statistics (no sums): a thread per channel.
template <typename T, typename U>
__global__ void running_stats_kernel(ForwardFinish<T, U> finish, BatchNormGeometry g) {
  const int64_t c = first_index();
  if (c < g.channels) finish(c, U(0), U(0), g);
}

// The channels of a pack of N elements starting at e0 (inner >= N when N >
// 1, so at most two): c0, and c1 from element `boundary` of the pack on.
template <typename I>
struct PackChannels {
  I c0, c1, boundary;
  __device__ PackChannels(I e0, I inner, I channels) {
    const I plane = e0 / inner;
    c0 = plane % channels;
    c1 = c0 + 1 == channels ? 0 : c0 + 1;
    boundary = (plane + 1) * inner - e0;
  }
};

// One of two channels' coefficients (a functor's Coef structs define their own).
template <typename U>
__device__ inline U pick(bool second, U c0, U c1) {
  return second ? c1 : c0;
}

// out = f(f.at(channel), x[, y]) over every element, flat over packs of N,
// Unroll packs in flight per thread. A pack reads the coefficients of its
// one or two channels once; one of two channels picks per element.
template <int N, int Unroll, int Arity, typename I, typename T, typename F>
__global__ void map_channels_kernel(F f, const T* x, const T* y, T* out, BatchNormGeometry g) {
  const I n = static_cast<I>(elements_of(g)), inner = static_cast<I>(g.inner),
          channels = static_cast<I>(g.channels);
  const I whole = n / N, packs = (n + N - 1) / N;
  const I step = static_cast<I>(gridDim.x) * blockDim.x * Unroll;
  for (I p0 = static_cast<I>(blockIdx.x) * blockDim.x * Unroll + threadIdx.x; p0 < packs;
       p0 += step) {
    Pack<T, N> vx[Unroll], vy[Unroll];
#pragma unroll
    for (int u = 0; u < Unroll; ++u) {
      const I p = p0 + u * blockDim.x;
      if (p >= whole) continue;
      vx[u] = reinterpret_cast<const Pack<T, N>*>(x)[p];
      vy[u] = Arity == 2 ? reinterpret_cast<const Pack<T, N>*>(y)[p] : vx[u];
    }
#pragma unroll
    for (int u = 0; u < Unroll; ++u) {
      const I p = p0 + u * blockDim.x;
      if (p >= packs) continue;
      const PackChannels<I> pc(p * N, inner, channels);
      const auto k0 = f.at(pc.c0);
      if (p >= whole) {  // the tensor's last, partial pack
        for (I i = p * N; i < n; ++i)
          out[i] = f(f.at(i - p * N < pc.boundary ? pc.c0 : pc.c1), x[i], Arity == 2 ? y[i] : x[i]);
        continue;
      }
      Pack<T, N> r;
      if (pc.boundary >= N) {
#pragma unroll
        for (int e = 0; e < N; ++e) r.v[e] = f(k0, vx[u].v[e], vy[u].v[e]);
      } else {
        const auto k1 = f.at(pc.c1);
#pragma unroll
        for (int e = 0; e < N; ++e)
          r.v[e] = f(pick(static_cast<I>(e) >= pc.boundary, k0, k1), vx[u].v[e], vy[u].v[e]);
      }
      reinterpret_cast<Pack<T, N>*>(out)[p] = r;
    }
  }
}

// Y = (x - mean) * a + bias, a = scale / std.
template <typename T, typename U>
struct Normalize {
  struct Coef {
    U mean, a, bias;
    friend __device__ Coef pick(bool second, const Coef& c0, const Coef& c1) {
      return {second ? c1.mean : c0.mean, second ? c1.a : c0.a, second ? c1.bias : c0.bias};
    }
  };
  const U *mean, *a, *bias;
  __device__ Coef at(int64_t c) const { return {mean[c], a[c], bias[c]}; }
  __device__ T operator()(const Coef& k, T x, T) const {
    return narrow<T>((U(widen(x)) - k.mean) * k.a + k.bias);
  }
};

// dX = A * dy - B * (x - mean) - C (coef: A, B and C of every channel).
template <typename T, typename U>
struct InputGrad {
  struct Coef {
    U mean, a, b, c;
    friend __device__ Coef pick(bool second, const Coef& c0, const Coef& c1) {
      return {second ? c1.mean : c0.mean, second ? c1.a : c0.a, second ? c1.b : c0.b,
              second ? c1.c : c0.c};
    }
  };
  const U *mean, *coef;
  int64_t channels;
  __device__ Coef at(int64_t c) const {
    return {mean[c], coef[c], coef[channels + c], coef[2 * channels + c]};
  }
  __device__ T operator()(const Coef& k, T dy, T x) const {
    return narrow<T>(k.a * U(widen(dy)) - k.b * (U(widen(x)) - k.mean) - k.c);
  }
};

// dX = A * dy, without batch statistics.
template <typename T, typename U>
struct InputGradFixedStats {
  const U* a;
  __device__ U at(int64_t c) const { return a[c]; }
  __device__ T operator()(U k, T dy, T) const { return narrow<T>(k * U(widen(dy))); }
};

bool fits_32_bits(int64_t n) { return n < (int64_t{1} << 31); }

// Launches map_channels_kernel over the tensor: packs when every operand is
// aligned for them and planes are at least a pack wide, 32-bit indices where
// they fit.
template <int Arity, typename T, typename F>
void launch_map_channels(const F& f, const T* x, const T* y, T* out, const BatchNormGeometry& g,
                         Stream s) {
  constexpr int N = pack_size<T>();
  const int64_t n = elements_of(g);
  if (n <= 0) return;
  const bool packed = g.inner >= N && aligned_for_packs<N>(x) && aligned_for_packs<N>(y) &&
                      aligned_for_packs<N>(out);
  const int64_t packs = packed ? (n + N - 1) / N : n;
  // Four packs a thread where that still makes 1024 blocks (a GPU's worth),
  // else one: small tensors need the threads more than the packs in flight.
  const bool unroll = packs >= 4 * 1024 * int64_t{kThreads};
  const unsigned blocks = grid_for(unroll ? (packs + 3) / 4 : packs);
  const bool narrow_index = fits_32_bits(n);
  if (packed && unroll && narrow_index)
    map_channels_kernel<N, 4, Arity, uint32_t><<<blocks, kThreads, 0, s>>>(f, x, y, out, g);
  else if (packed && narrow_index)
    map_channels_kernel<N, 1, Arity, uint32_t><<<blocks, kThreads, 0, s>>>(f, x, y, out, g);
  else if (packed)
    map_channels_kernel<N, 1, Arity, uint64_t><<<blocks, kThreads, 0, s>>>(f, x, y, out, g);
  else if (narrow_index)
    map_channels_kernel<1, 1, Arity, uint32_t><<<blocks, kThreads, 0, s>>>(f, x, y, out, g);
  else
    map_channels_kernel<1, 1, Arity, uint64_t><<<blocks, kThreads, 0, s>>>(f, x, y, out, g);
}

template <bool Grad, int N, bool Whole, typename T, typename U, typename Finish>
void launch_channel_sums_as(const T* a, const T* b, const U* mean, U* partials,
                            unsigned* counters, const Finish& finish, const BatchNormGeometry& g,
                            Stream s) {
  const int64_t splits = splits_of(g), per_plane = packs_per_plane(g.inner, N);
  const auto blocks = static_cast<unsigned>(g.channels * splits);
  if (fits_32_bits(elements_of(g) + kThreads * per_plane))
    channel_sums_kernel<Grad, N, Whole><<<blocks, kThreads, 0, s>>>(
        a, b, mean, partials, counters, finish, splits, static_cast<uint32_t>(per_plane), g);
  else
    channel_sums_kernel<Grad, N, Whole><<<blocks, kThreads, 0, s>>>(
        a, b, mean, partials, counters, finish, splits, static_cast<uint64_t>(per_plane), g);
}

// Launches channel_sums_kernel (partials: 2 * channels * splits_of(g)), then
// finish per channel: packs when the operands are aligned for them and planes
// at least a pack wide, whole ones when planes are a multiple of packs.
template <bool Grad, typename T, typename U, typename Finish>
void launch_channel_sums(const T* a, const T* b, const U* mean, U* partials, unsigned* counters,
                         const Finish& finish, const BatchNormGeometry& g, Stream s) {
  constexpr int N = pack_size<T>();
  const bool packed = g.inner >= N && aligned_for_packs<N>(a) && aligned_for_packs<N>(b);
  if (packed && g.inner % N == 0)
    launch_channel_sums_as<Grad, N, true>(a, b, mean, partials, counters, finish, g, s);
  else if (packed)
    launch_channel_sums_as<Grad, N, false>(a, b, mean, partials, counters, finish, g, s);
  else
    launch_channel_sums_as<Grad, 1, true>(a, b, mean, partials, counters, finish, g, s);
}

}  // namespace

int64_t batch_norm_scratch(const BatchNormGeometry& g) {
  return 2 * g.channels * splits_of(g) + 3 * g.channels;
}

template <typename T, typename U>
void batch_norm(const T* x, const U* scale, const U* bias, const U* running_mean,
                const U* running_var, T* y, U* mean_out, U* var_out, U* saved_mean,
                U* saved_inv_std, U* scratch, unsigned* counters, const BatchNormGeometry& g,
                Stream s) {
  if (g.channels <= 0) return;
  U* a = scratch;
  const ForwardFinish<T, U> finish{x,        scale,   running_mean, running_var, mean_out,
                                   var_out,  saved_mean, saved_inv_std, a};
  if (g.batch_stats)
    launch_channel_sums<false>(x, x, static_cast<const U*>(nullptr), scratch + 3 * g.channels,
                               counters, finish, g, s);
  else
    running_stats_kernel<T, U><<<grid_for(g.channels), kThreads, 0, s>>>(finish, g);
  launch_map_channels<1>(Normalize<T, U>{saved_mean, a, bias}, x, x, y, g, s);
}

template <typename T, typename U>
void batch_norm_grad(const T* x, const U* scale, const U* mean, const U* spread, const T* dy,
                     T* dx, U* dscale, U* dbias, U* scratch, unsigned* counters,
                     const BatchNormGeometry& g, Stream s) {
  if (g.channels <= 0) return;
  U* coef = scratch;
  launch_channel_sums<true>(dy, x, mean, scratch + 3 * g.channels, counters,
                            GradFinish<U>{scale, spread, dscale, dbias, coef}, g, s);
  if (!dx) return;
  if (g.batch_stats)
    launch_map_channels<2>(InputGrad<T, U>{mean, coef, g.channels}, dy, x, dx, g, s);
  else
    launch_map_channels<1>(InputGradFixedStats<T, U>{coef}, dy, dy, dx, g, s);
}

#define CTP_INSTANTIATE_BATCH_NORM(T, U)                                                      \
  template void batch_norm<T, U>(const T*, const U*, const U*, const U*, const U*, T*, U*, U*, \
                                 U*, U*, U*, unsigned*, const BatchNormGeometry&, Stream);     \
  template void batch_norm_grad<T, U>(const T*, const U*, const U*, const U*, const T*, T*,    \
                                      U*, U*, U*, unsigned*, const BatchNormGeometry&, Stream);

CTP_INSTANTIATE_BATCH_NORM(float, float)
CTP_INSTANTIATE_BATCH_NORM(double, double)
CTP_INSTANTIATE_BATCH_NORM(Half, float)
CTP_INSTANTIATE_BATCH_NORM(BFloat16, float)

}  // namespace ctp::cuda::launch
