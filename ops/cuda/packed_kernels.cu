// The element-wise kernels that stream whole tensors once (relu, relu_grad,
// cast, scale, sgd, the forward adds of a bias or a residual, and the gradients
// with the output's layout). They are bound
// by memory, and a thread moving one 2-byte element per load left an H200 at
// about a quarter of its bandwidth (bench/RESULTS.md, sixth round), so each
// thread loads and stores packs of 16 bytes (8 FP16/BF16, 4 FP32, 2 FP64
// elements) when every operand is aligned for them; cudaMalloc'd tensors
// are, and coalesce_tensor aligns its views to 256 bytes. The arithmetic per
// element is the element kernels' own, so results are unchanged.
//
// The multi-tensor forms (multi_cast, multi_scale, multi_sgd) take many tensors per
// launch: a mixed-precision step casts and updates each parameter, hundreds
// of launches of a few microseconds each, many on bias-sized tensors.
#include <algorithm>
#include <cstdint>

#include "ops/cuda/device_math.cuh"
#include "ops/cuda/multi_tensor.cuh"
#include "ops/cuda/pack.cuh"

namespace ctp::cuda::launch {
namespace {

using namespace detail;  // ops/cuda/device_math.cuh

// Element i's result: f(a[i]) (Arity 1) or f(a[i], b[i]) (Arity 2).
template <int Arity, typename A, typename B, typename F>
__device__ inline auto apply_at(const F& f, const A& a, const B& b) {
  if constexpr (Arity == 1) return f(a);
  else return f(a, b);
}

// Elements [begin, end) of out = f(a[, b]) by the threads `thread` of
// `threads`: packs of N (begin a multiple of N, operands aligned for packs),
// then the elements past the last whole pack one at a time.
template <int N, int Arity, typename A, typename B, typename Out, typename F>
__device__ inline void map_range(const F& f, const A* a, const B* b, Out* out, int64_t begin,
                                 int64_t end, int64_t thread, int64_t threads) {
  const int64_t packs_end = end / N;
  for (int64_t p = begin / N + thread; p < packs_end; p += threads) {
    const Pack<A, N> x = reinterpret_cast<const Pack<A, N>*>(a)[p];
    Pack<B, N> y;
    if constexpr (Arity == 2) y = reinterpret_cast<const Pack<B, N>*>(b)[p];
    Pack<Out, N> r;
#pragma unroll
    for (int u = 0; u < N; ++u) r.v[u] = apply_at<Arity>(f, x.v[u], y.v[u]);
    reinterpret_cast<Pack<Out, N>*>(out)[p] = r;
  }
  const int64_t tail = begin > packs_end * N ? begin : packs_end * N;
  for (int64_t i = tail + thread; i < end; i += threads)
    out[i] = apply_at<Arity>(f, a[i], Arity == 2 ? b[i] : B{});
}

// out[i] = f(a[i]) or f(a[i], b[i]) over the whole grid.
template <int N, int Arity, typename A, typename B, typename Out, typename F>
__global__ void map_kernel(F f, const A* a, const B* b, Out* out, int64_t n) {
  map_range<N, Arity>(f, a, b, out, 0, n, first_index(), grid_stride());
}

template <typename A, typename Out, typename F>
void map1(F f, const A* a, Out* out, int64_t n, Stream s) {
  if (n <= 0) return;
  constexpr int N = pack_size<A, Out>();
  if (aligned_for_packs<N>(a) && aligned_for_packs<N>(out))
    map_kernel<N, 1, A, A><<<grid_for((n + N - 1) / N), kThreads, 0, s>>>(f, a, a, out, n);
  else
    map_kernel<1, 1, A, A><<<grid_for(n), kThreads, 0, s>>>(f, a, a, out, n);
}

template <typename A, typename B, typename Out, typename F>
void map2(F f, const A* a, const B* b, Out* out, int64_t n, Stream s) {
  if (n <= 0) return;
  constexpr int N = pack_size<A, B, Out>();
  if (aligned_for_packs<N>(a) && aligned_for_packs<N>(b) && aligned_for_packs<N>(out))
    map_kernel<N, 2><<<grid_for((n + N - 1) / N), kThreads, 0, s>>>(f, a, b, out, n);
  else
    map_kernel<1, 2><<<grid_for(n), kThreads, 0, s>>>(f, a, b, out, n);
}

// Doubles pass through float on their way to 16 bits, as on the CPU.
template <typename From, typename To>
struct CastOp {
  __device__ To operator()(From x) const { return narrow<To>(static_cast<Compute<To>>(widen(x))); }
};

template <typename T>
struct ReluOp {
  __device__ T operator()(T x) const { return widen(x) > Compute<T>(0) ? x : narrow<T>(0); }
};

template <typename T>
struct ReluGradOp {
  __device__ T operator()(T g, T gate) const {
    return widen(gate) > Compute<T>(0) ? g : narrow<T>(0);
  }
};

// The learning rate lives on the GPU (it may be scheduled); every element
// reads the same word, which stays in L1.
template <typename T>
struct SgdOp {
  Scalar lr;
  __device__ T operator()(T p, T g) const { return p - mul_rn(static_cast<T>(load(lr)), g); }
};

template <typename T>
struct ScaleOp {
  Compute<T> factor, bias;
  bool bias_after_scale;
  __device__ T operator()(T x) const {
    const Compute<T> v = widen(x);
    return narrow<T>(bias_after_scale ? add_rn(mul_rn(factor, v), bias)
                                      : mul_rn(factor, add_rn(v, bias)));
  }
};

template <typename T>
struct DenseGradOp {
  Binary op;
  bool for_y;
  Compute<T> factor;
  __device__ T finish(Compute<T> v) const {
    return finished_sum<T>(op, for_y, add_rn(Compute<T>(0), v), factor);
  }
  __device__ T operator()(T g) const { return finish(widen(g)); }
  __device__ T operator()(T g, T other) const { return finish(mul_rn(widen(g), widen(other))); }
};

// A pack of N outputs lies within one period of each operand when the
// periods are multiples of N, so each operand's pack is one aligned load
// (N = 1: one element per step, for any period and alignment).
template <int N, typename T>
__global__ void periodic_binary_pack_kernel(Binary op, const T* x, const T* y, T* out, uint32_t n,
                                            uint32_t x_period, uint32_t y_period) {
  const uint32_t packs = n / N;
  const uint32_t stride = gridDim.x * blockDim.x;
  for (uint32_t p = blockIdx.x * blockDim.x + threadIdx.x; p < packs; p += stride) {
    const uint32_t o = p * N;
    const Pack<T, N> a = *reinterpret_cast<const Pack<T, N>*>(x + (x_period == n ? o : o % x_period));
    const Pack<T, N> b = *reinterpret_cast<const Pack<T, N>*>(y + (y_period == n ? o : o % y_period));
    Pack<T, N> r;
#pragma unroll
    for (int u = 0; u < N; ++u) r.v[u] = narrow<T>(apply(op, widen(a.v[u]), widen(b.v[u])));
    reinterpret_cast<Pack<T, N>*>(out)[p] = r;
  }
  for (uint32_t o = packs * N + blockIdx.x * blockDim.x + threadIdx.x; o < n; o += stride) {
    const uint32_t xo = x_period == n ? o : o % x_period;
    const uint32_t yo = y_period == n ? o : o % y_period;
    out[o] = narrow<T>(apply(op, widen(x[xo]), widen(y[yo])));
  }
}

// out = op(x, y) with the broadcast operand read at (o / inner) % mid; the
// operands keep their order (op may not commute).
template <int N, typename T>
__global__ void middle_broadcast_pack_kernel(Binary op, const T* full, const T* small, T* out,
                                             uint32_t n, uint32_t inner, uint32_t mid,
                                             bool small_is_y) {
  const uint32_t packs = n / N;
  const uint32_t stride = gridDim.x * blockDim.x;
  for (uint32_t p = blockIdx.x * blockDim.x + threadIdx.x; p < packs; p += stride) {
    const uint32_t o = p * N;
    const Pack<T, N> a = *reinterpret_cast<const Pack<T, N>*>(full + o);
    const Compute<T> b = widen(small[(o / inner) % mid]);
    Pack<T, N> r;
#pragma unroll
    for (int u = 0; u < N; ++u)
      r.v[u] = narrow<T>(small_is_y ? apply(op, widen(a.v[u]), b) : apply(op, b, widen(a.v[u])));
    reinterpret_cast<Pack<T, N>*>(out)[p] = r;
  }
  for (uint32_t o = packs * N + blockIdx.x * blockDim.x + threadIdx.x; o < n; o += stride) {
    const Compute<T> a = widen(full[o]), b = widen(small[(o / inner) % mid]);
    out[o] = narrow<T>(small_is_y ? apply(op, a, b) : apply(op, b, a));
  }
}

constexpr int kTasksPerLaunch = 96;

// Block b runs its chunk of one task (multi_tensor.cuh): f over one operand
// (Arity 1: out = f(a)) or two (out = f(a, b)), in packs when the task's
// operands are aligned for them.
template <int N, int Arity, typename A, typename B, typename Out, typename F>
__global__ void multi_map_kernel(F f, ChunkTable<TensorTask, kTasksPerLaunch> table) {
  const int t = table.task_of_block();
  const TensorTask& task = table.tasks[t];
  const A* a = static_cast<const A*>(task.a);
  // One operand: b is a again (never read), so every pointer is valid.
  const B* b = Arity == 2 ? static_cast<const B*>(task.b) : reinterpret_cast<const B*>(a);
  Out* out = static_cast<Out*>(task.out);
  int64_t begin = 0, end = 0;
  table.chunk_of_block(t, begin, end);
  if (aligned_for_packs<N>(a) && aligned_for_packs<N>(b) && aligned_for_packs<N>(out))
    map_range<N, Arity>(f, a, b, out, begin, end, threadIdx.x, blockDim.x);
  else
    map_range<1, Arity>(f, a, b, out, begin, end, threadIdx.x, blockDim.x);
}

// Launches f over every task, kTasksPerLaunch at a time.
template <int Arity, typename A, typename B, typename Out, typename F>
void multi_map(F f, const TensorTask* tasks, std::size_t count, Stream s) {
  constexpr int N = Arity == 1 ? pack_size<A, Out>() : pack_size<A, B, Out>();
  for_each_chunk_table<kTasksPerLaunch>(tasks, count, [&](const auto& table) {
    if (table.blocks() > 0)
      multi_map_kernel<N, Arity, A, B, Out><<<table.blocks(), kThreads, 0, s>>>(f, table);
  });
}

}  // namespace

namespace detail {

template <typename T>
void periodic_binary(Binary op, const T* x, const T* y, T* out, int64_t n, int64_t x_period,
                     int64_t y_period, Stream s) {
  constexpr int N = pack_size<T>();
  const auto n32 = static_cast<uint32_t>(n);
  const auto xp = static_cast<uint32_t>(x_period), yp = static_cast<uint32_t>(y_period);
  if (x_period % N == 0 && y_period % N == 0 && aligned_for_packs<N>(x) &&
      aligned_for_packs<N>(y) && aligned_for_packs<N>(out))
    periodic_binary_pack_kernel<N, T><<<grid_for((n + N - 1) / N), kThreads, 0, s>>>(
        op, x, y, out, n32, xp, yp);
  else
    periodic_binary_pack_kernel<1, T><<<grid_for(n), kThreads, 0, s>>>(op, x, y, out, n32, xp, yp);
}

template <typename T>
void middle_broadcast_binary(Binary op, const T* x, const T* y, T* out, int64_t n,
                             int64_t inner, int64_t mid, bool y_is_broadcast, Stream s) {
  constexpr int N = pack_size<T>();
  const T* full = y_is_broadcast ? x : y;
  const T* small = y_is_broadcast ? y : x;
  const auto n32 = static_cast<uint32_t>(n), in32 = static_cast<uint32_t>(inner),
             mid32 = static_cast<uint32_t>(mid);
  if (inner % N == 0 && aligned_for_packs<N>(full) && aligned_for_packs<N>(out))
    middle_broadcast_pack_kernel<N, T><<<grid_for((n + N - 1) / N), kThreads, 0, s>>>(
        op, full, small, out, n32, in32, mid32, y_is_broadcast);
  else
    middle_broadcast_pack_kernel<1, T><<<grid_for(n), kThreads, 0, s>>>(
        op, full, small, out, n32, in32, mid32, y_is_broadcast);
}

template <typename T>
void packed_dense_grad(Binary op, bool for_y, const T* dout, const T* other, T* d, int64_t n,
                       double factor, Stream s) {
  const DenseGradOp<T> f{op, for_y, static_cast<Compute<T>>(factor)};
  if (op == Binary::Mul) map2(f, dout, other, d, n, s);
  else map1(f, dout, d, n, s);
}

}  // namespace detail

template <typename From, typename To>
void cast(const From* x, To* out, int64_t n, Stream s) {
  map1(CastOp<From, To>{}, x, out, n, s);
}

template <typename T>
void relu(const T* x, T* out, int64_t n, Stream s) {
  map1(ReluOp<T>{}, x, out, n, s);
}

template <typename T>
void relu_grad(const T* dout, const T* gate, T* d, int64_t n, Stream s) {
  map2(ReluGradOp<T>{}, dout, gate, d, n, s);
}

template <typename T>
void scale(const T* x, T* out, int64_t n, double factor, double bias, bool bias_after_scale,
           Stream s) {
  map1(ScaleOp<T>{static_cast<Compute<T>>(factor), static_cast<Compute<T>>(bias), bias_after_scale},
       x, out, n, s);
}

template <typename T>
void sgd(const T* param, const T* grad, Scalar lr, T* param_out, int64_t n, Stream s) {
  map2(SgdOp<T>{lr}, param, grad, param_out, n, s);
}

template <typename From, typename To>
void multi_cast(const TensorTask* tasks, std::size_t count, Stream s) {
  multi_map<1, From, From, To>(CastOp<From, To>{}, tasks, count, s);
}

template <typename T>
void multi_scale(const TensorTask* tasks, std::size_t count, double factor, double bias,
                 bool bias_after_scale, Stream s) {
  multi_map<1, T, T, T>(
      ScaleOp<T>{static_cast<Compute<T>>(factor), static_cast<Compute<T>>(bias), bias_after_scale},
      tasks, count, s);
}

template <typename T>
void multi_sgd(const TensorTask* tasks, std::size_t count, Scalar lr, Stream s) {
  multi_map<2, T, T, T>(SgdOp<T>{lr}, tasks, count, s);
}

#define CTP_INSTANTIATE_PACKED_KERNELS(T)                                                  \
  template void detail::periodic_binary<T>(Binary, const T*, const T*, T*, int64_t, int64_t, \
                                           int64_t, Stream);                              \
  template void detail::middle_broadcast_binary<T>(Binary, const T*, const T*, T*, int64_t, \
                                                   int64_t, int64_t, bool, Stream);          \
  template void detail::packed_dense_grad<T>(Binary, bool, const T*, const T*, T*, int64_t, \
                                             double, Stream);                             \
  template void relu<T>(const T*, T*, int64_t, Stream);                                   \
  template void relu_grad<T>(const T*, const T*, T*, int64_t, Stream);                    \
  template void scale<T>(const T*, T*, int64_t, double, double, bool, Stream);            \
  template void multi_scale<T>(const TensorTask*, std::size_t, double, double, bool, Stream); \
  template void cast<T, float>(const T*, float*, int64_t, Stream);                        \
  template void cast<T, double>(const T*, double*, int64_t, Stream);                      \
  template void cast<T, Half>(const T*, Half*, int64_t, Stream);                          \
  template void cast<T, BFloat16>(const T*, BFloat16*, int64_t, Stream);                  \
  template void multi_cast<T, float>(const TensorTask*, std::size_t, Stream);              \
  template void multi_cast<T, double>(const TensorTask*, std::size_t, Stream);             \
  template void multi_cast<T, Half>(const TensorTask*, std::size_t, Stream);               \
  template void multi_cast<T, BFloat16>(const TensorTask*, std::size_t, Stream);
CTP_INSTANTIATE_PACKED_KERNELS(float)
CTP_INSTANTIATE_PACKED_KERNELS(double)
CTP_INSTANTIATE_PACKED_KERNELS(Half)
CTP_INSTANTIATE_PACKED_KERNELS(BFloat16)
template void sgd<float>(const float*, const float*, Scalar, float*, int64_t, Stream);
template void sgd<double>(const double*, const double*, Scalar, double*, int64_t, Stream);
template void multi_sgd<float>(const TensorTask*, std::size_t, Scalar, Stream);
template void multi_sgd<double>(const TensorTask*, std::size_t, Scalar, Stream);

}  // namespace ctp::cuda::launch
