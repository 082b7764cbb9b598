// The element-wise kernels that stream whole tensors once (relu, relu_grad,
// cast, sgd, the forward adds of a bias or a residual, and the gradients
// with the output's layout). They are bound
// by memory, and a thread moving one 2-byte element per load left an H200 at
// about a quarter of its bandwidth (bench/RESULTS.md, sixth round), so each
// thread loads and stores packs of 16 bytes (8 FP16/BF16, 4 FP32, 2 FP64
// elements) when every operand is aligned for them; cudaMalloc'd tensors
// are, and coalesce_tensor aligns its views to 256 bytes. The arithmetic per
// element is the element kernels' own, so results are unchanged.
#include <algorithm>
#include <cstdint>

#include "ops/cuda/device_math.cuh"

namespace ctp::cuda::launch {
namespace {

using namespace detail;  // ops/cuda/device_math.cuh

template <typename T, int N>
struct alignas(sizeof(T) * N) Pack {
  T v[N];
};

// Elements per pack of an op over these element types: 16 bytes of the widest.
template <typename... T>
constexpr int pack_size() {
  return 16 / static_cast<int>(std::max({sizeof(T)...}));
}

template <int N, typename T>
bool aligned_for_packs(const T* p) {
  return reinterpret_cast<uintptr_t>(p) % (sizeof(T) * N) == 0;
}

// out[i] = f(a[i]), N elements per step of a thread; the last n % N elements
// one at a time.
template <int N, typename A, typename Out, typename F>
__global__ void map1_kernel(F f, const A* a, Out* out, int64_t n) {
  const int64_t packs = n / N;
  const auto* ap = reinterpret_cast<const Pack<A, N>*>(a);
  auto* op = reinterpret_cast<Pack<Out, N>*>(out);
  for (int64_t p = first_index(); p < packs; p += grid_stride()) {
    const Pack<A, N> x = ap[p];
    Pack<Out, N> r;
#pragma unroll
    for (int u = 0; u < N; ++u) r.v[u] = f(x.v[u]);
    op[p] = r;
  }
  for (int64_t i = packs * N + first_index(); i < n; i += grid_stride()) out[i] = f(a[i]);
}

// out[i] = f(a[i], b[i]), as map1_kernel.
template <int N, typename A, typename B, typename Out, typename F>
__global__ void map2_kernel(F f, const A* a, const B* b, Out* out, int64_t n) {
  const int64_t packs = n / N;
  const auto* ap = reinterpret_cast<const Pack<A, N>*>(a);
  const auto* bp = reinterpret_cast<const Pack<B, N>*>(b);
  auto* op = reinterpret_cast<Pack<Out, N>*>(out);
  for (int64_t p = first_index(); p < packs; p += grid_stride()) {
    const Pack<A, N> x = ap[p];
    const Pack<B, N> y = bp[p];
    Pack<Out, N> r;
#pragma unroll
    for (int u = 0; u < N; ++u) r.v[u] = f(x.v[u], y.v[u]);
    op[p] = r;
  }
  for (int64_t i = packs * N + first_index(); i < n; i += grid_stride()) out[i] = f(a[i], b[i]);
}

template <typename A, typename Out, typename F>
void map1(F f, const A* a, Out* out, int64_t n, Stream s) {
  if (n <= 0) return;
  constexpr int N = pack_size<A, Out>();
  if (aligned_for_packs<N>(a) && aligned_for_packs<N>(out))
    map1_kernel<N><<<grid_for((n + N - 1) / N), kThreads, 0, s>>>(f, a, out, n);
  else
    map1_kernel<1><<<grid_for(n), kThreads, 0, s>>>(f, a, out, n);
}

template <typename A, typename B, typename Out, typename F>
void map2(F f, const A* a, const B* b, Out* out, int64_t n, Stream s) {
  if (n <= 0) return;
  constexpr int N = pack_size<A, B, Out>();
  if (aligned_for_packs<N>(a) && aligned_for_packs<N>(b) && aligned_for_packs<N>(out))
    map2_kernel<N><<<grid_for((n + N - 1) / N), kThreads, 0, s>>>(f, a, b, out, n);
  else
    map2_kernel<1><<<grid_for(n), kThreads, 0, s>>>(f, a, b, out, n);
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
void sgd(const T* param, const T* grad, Scalar lr, T* param_out, int64_t n, Stream s) {
  map2(SgdOp<T>{lr}, param, grad, param_out, n, s);
}

#define CTP_INSTANTIATE_PACKED_KERNELS(T)                                                  \
  template void detail::periodic_binary<T>(Binary, const T*, const T*, T*, int64_t, int64_t, \
                                           int64_t, Stream);                              \
  template void detail::packed_dense_grad<T>(Binary, bool, const T*, const T*, T*, int64_t, \
                                             double, Stream);                             \
  template void relu<T>(const T*, T*, int64_t, Stream);                                   \
  template void relu_grad<T>(const T*, const T*, T*, int64_t, Stream);                    \
  template void cast<T, float>(const T*, float*, int64_t, Stream);                        \
  template void cast<T, double>(const T*, double*, int64_t, Stream);                      \
  template void cast<T, Half>(const T*, Half*, int64_t, Stream);                          \
  template void cast<T, BFloat16>(const T*, BFloat16*, int64_t, Stream);
CTP_INSTANTIATE_PACKED_KERNELS(float)
CTP_INSTANTIATE_PACKED_KERNELS(double)
CTP_INSTANTIATE_PACKED_KERNELS(Half)
CTP_INSTANTIATE_PACKED_KERNELS(BFloat16)
template void sgd<float>(const float*, const float*, Scalar, float*, int64_t, Stream);
template void sgd<double>(const double*, const double*, Scalar, double*, int64_t, Stream);

}  // namespace ctp::cuda::launch
