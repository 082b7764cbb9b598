// The CUDA compute kernels behind ops/cuda/*_kernels.cc. Arithmetic follows
// the CPU kernels operation for operation, with products rounded before
// they are added (__fmul_rn / __dmul_rn: no fused multiply-add), and the
// reductions' sums taken in the CPU kernels' order (ops/common/sum_order.h), so GPU
// results match the CPU's closely (bit for bit in the element-wise ops and
// their gradients).
// FP16/BF16 elements are widened to float, computed as FP32, and each output
// rounded once (widen/narrow), which is what the CPU kernels do with them.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/cuda/device_kernels.h"
#include "ops/cuda/device_math.cuh"

namespace ctp::cuda::launch {
namespace {

using namespace detail;  // ops/cuda/device_math.cuh

template <typename T>
__global__ void fill_kernel(T* out, int64_t n, T value) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) out[i] = value;
}

template <typename T>
__global__ void binary_kernel(Binary op, const T* x, const T* y, T* out, BroadcastIndex index,
                              int64_t n) {
  for (int64_t o = first_index(); o < n; o += grid_stride()) {
    int64_t rest = o, xo = 0, yo = 0;
    for (int d = index.rank - 1; d >= 0; --d) {
      const int64_t c = rest % index.out_shape[d];
      rest /= index.out_shape[d];
      xo += c * index.x_strides[d];
      yo += c * index.y_strides[d];
    }
    out[o] = narrow<T>(apply(op, widen(x[xo]), widen(y[yo])));
  }
}

template <typename T>
__global__ void binary_grad_kernel(Binary op, bool for_y, const T* dout, const T* other, T* d,
                                   int64_t n_d, BroadcastIndex index, Compute<T> factor) {
  const int64_t* own = for_y ? index.y_strides : index.x_strides;
  const int64_t* theirs = for_y ? index.x_strides : index.y_strides;
  int64_t out_stride[kMaxDims];
  int64_t reduced_count = 1;
  {
    int64_t s = 1;
    for (int k = index.rank - 1; k >= 0; --k) {
      out_stride[k] = s;
      s *= index.out_shape[k];
      if (own[k] == 0 && index.out_shape[k] > 1) reduced_count *= index.out_shape[k];
    }
  }
  for (int64_t t = first_index(); t < n_d; t += grid_stride()) {
    int64_t coord[kMaxDims];
    int64_t rest = t;
    for (int k = index.rank - 1; k >= 0; --k) {
      const bool kept = !(own[k] == 0 && index.out_shape[k] > 1);
      const int64_t extent = kept && own[k] != 0 ? index.out_shape[k] : 1;
      coord[k] = rest % extent;
      rest /= extent;
    }
    Compute<T> acc = 0, run = 0;
    for (int64_t r = 0; r < reduced_count; ++r) {
      int64_t rr = r;
      for (int k = index.rank - 1; k >= 0; --k)
        if (own[k] == 0 && index.out_shape[k] > 1) {
          coord[k] = rr % index.out_shape[k];
          rr /= index.out_shape[k];
        }
      int64_t o = 0, j = 0;
      for (int k = 0; k < index.rank; ++k) {
        o += coord[k] * out_stride[k];
        j += coord[k] * theirs[k];
      }
      const Compute<T> g = widen(dout[o]);
      run = add_rn(run, op == Binary::Mul ? mul_rn(g, widen(other[j])) : g);
      if ((r + 1) % kSumRun == 0 || r + 1 == reduced_count) {
        acc = add_rn(acc, run);
        run = 0;
      }
    }
    d[t] = finished_sum<T>(op, for_y, acc, factor);
  }
}

// The contribution of dout's element o to a gradient: dout[o], or its product
// with the other operand, rounded as the CPU computes it.
template <typename T>
__device__ inline Compute<T> contribution(bool times_other, const T* dout, const T* other,
                                          int64_t o) {
  const Compute<T> g = widen(dout[o]);
  return times_other ? mul_rn(g, widen(other[o])) : g;
}

// The sum of one column's rows [first, first + count) of a [rows, cols] view
// (count <= kSumRun: one run), left to right. kAhead loads are issued before
// their adds, so a thread waits for memory once per kAhead rows. With
// kWriteX (an add or sub whose X has dout's layout) each element read is
// also written to dx as X's gradient, rounded as the dense gradient kernel
// rounds it, so one read of dout serves both gradients.
template <typename T, bool kWriteX = false>
__device__ inline Compute<T> column_run(bool times_other, const T* dout, const T* other,
                                        int64_t first, int64_t count, int64_t cols, int64_t col,
                                        Binary op = Binary::Add, T* dx = nullptr) {
  constexpr int kAhead = 32;
  Compute<T> run = 0;
  const auto take = [&](int64_t o, Compute<T> v) {
    run = add_rn(run, v);
    if constexpr (kWriteX)
      dx[o] = finished_sum<T>(op, false, add_rn(Compute<T>(0), v), Compute<T>(1));
  };
  int64_t r = 0;
  for (; r + kAhead <= count; r += kAhead) {
    Compute<T> v[kAhead];
#pragma unroll
    for (int u = 0; u < kAhead; ++u)
      v[u] = contribution(times_other, dout, other, (first + r + u) * cols + col);
#pragma unroll
    for (int u = 0; u < kAhead; ++u) take((first + r + u) * cols + col, v[u]);
  }
  for (; r < count; ++r) {
    const int64_t o = (first + r) * cols + col;
    take(o, contribution(times_other, dout, other, o));
  }
  return run;
}

// binary_grad where the summed dims lead and the kept ones trail
// contiguously (a bias's gradient: column sums of dout viewed as [rows,
// cols]), one thread per column adding its runs in order: for few rows, or
// when no workspace was given.
template <typename T>
__global__ void leading_sum_grad_kernel(Binary op, bool for_y, const T* dout, const T* other,
                                        T* d, int64_t rows, int64_t cols, Compute<T> factor) {
  const bool times_other = op == Binary::Mul;
  for (int64_t c = first_index(); c < cols; c += grid_stride()) {
    Compute<T> acc = 0;
    for (int64_t r = 0; r < rows; r += kSumRun) {
      const int64_t count = rows - r < kSumRun ? rows - r : kSumRun;
      acc = add_rn(acc, column_run(times_other, dout, other, r, count, cols, c));
    }
    d[c] = finished_sum<T>(op, for_y, acc, factor);
  }
}

// The same sums for many rows in two passes: one thread per (run, column)
// writes its run's sum to `runs` ([run][column]), then one thread per column
// adds its runs in order. A 4096-row column is 64 runs summed at once
// instead of 4096 dependent adds; the result is the same. kWriteX, op, dx:
// as column_run (X's gradient from the same read).
template <typename T, bool kWriteX = false>
__global__ void column_runs_kernel(bool times_other, const T* dout, const T* other,
                                   Compute<T>* runs, int64_t rows, int64_t cols,
                                   Binary op = Binary::Add, T* dx = nullptr) {
  const int64_t run_count = (rows + kSumRun - 1) / kSumRun;
  for (int64_t t = first_index(); t < run_count * cols; t += grid_stride()) {
    const int64_t k = t / cols, c = t - k * cols;
    const int64_t first = k * kSumRun;
    runs[t] = column_run<T, kWriteX>(times_other, dout, other, first,
                                     rows - first < kSumRun ? rows - first : kSumRun, cols, c,
                                     op, dx);
  }
}

template <typename T>
__global__ void add_runs_kernel(Binary op, bool for_y, const Compute<T>* runs, int64_t run_count,
                                T* d, int64_t cols, Compute<T> factor) {
  constexpr int kAhead = 64;  // a 4096-row column's runs: one round trip
  for (int64_t c = first_index(); c < cols; c += grid_stride()) {
    Compute<T> acc = 0;
    int64_t k = 0;
    for (; k + kAhead <= run_count; k += kAhead) {
      Compute<T> v[kAhead];
#pragma unroll
      for (int u = 0; u < kAhead; ++u) v[u] = runs[(k + u) * cols + c];
#pragma unroll
      for (int u = 0; u < kAhead; ++u) acc = add_rn(acc, v[u]);
    }
    for (; k < run_count; ++k) acc = add_rn(acc, runs[k * cols + c]);
    d[c] = finished_sum<T>(op, for_y, acc, factor);
  }
}

template <typename T>
__global__ void broadcast_scale_kernel(const T* src, T* out, Compute<T> factor,
                                       BroadcastIndex index, int64_t n) {
  for (int64_t o = first_index(); o < n; o += grid_stride()) {
    int64_t rest = o, j = 0;
    for (int d = index.rank - 1; d >= 0; --d) {
      j += (rest % index.out_shape[d]) * index.x_strides[d];
      rest /= index.out_shape[d];
    }
    out[o] = narrow<T>(mul_rn(widen(src[j]), factor));
  }
}

constexpr int kMaxSumInputs = 64;
template <typename T>
struct SumInputs {
  const T* p[kMaxSumInputs];
};

template <typename T>
__global__ void sum_kernel(SumInputs<T> in, int count, T* out, int64_t n) {
  for (int64_t e = first_index(); e < n; e += grid_stride()) {
    Compute<T> acc = 0;
    for (int k = 0; k < count; ++k) acc = add_rn(acc, widen(in.p[k][e]));
    out[e] = narrow<T>(acc);
  }
}


template <typename T>
__global__ void softmax_xent_kernel(const T* x, const void* label, bool label64, bool soft,
                                    bool use_softmax, int64_t ignore_index, T* sm, T* loss,
                                    int64_t outer, int64_t classes, int64_t inner) {
  const int64_t rows = outer * inner;
  for (int64_t row = first_index(); row < rows; row += grid_stride()) {
    const int64_t o = row / inner, i = row % inner;
    const int64_t base = o * classes * inner + i;
    T max_value = x[base];
    T log_sum = 0;
    if (use_softmax) {
      for (int64_t c = 1; c < classes; ++c) max_value = max(max_value, x[base + c * inner]);
      T total = 0;
      for (int64_t c = 0; c < classes; ++c) total += exp(x[base + c * inner] - max_value);
      log_sum = log(total);
    }
    T row_loss = 0;
    const int64_t hard = soft ? 0 : label_at(label, label64, row);
    for (int64_t c = 0; c < classes; ++c) {
      const int64_t at = base + c * inner;
      const T log_p = use_softmax ? x[at] - max_value - log_sum : log(x[at]);
      sm[at] = use_softmax ? exp(log_p) : x[at];
      if (soft) row_loss -= static_cast<const T*>(label)[at] * log_p;
      else if (c == hard) row_loss = -log_p;
    }
    if (!soft && (hard < 0 || hard >= classes))
      row_loss = hard == ignore_index ? T(0) : T(NAN);  // host validation reports these
    loss[row] = row_loss;
  }
}

template <typename T>
__global__ void softmax_xent_grad_kernel(const T* sm, const void* label, bool label64, bool soft,
                                         bool use_softmax, int64_t ignore_index, const T* g, T* d,
                                         int64_t outer, int64_t classes, int64_t inner) {
  const int64_t n = outer * classes * inner;
  for (int64_t at = first_index(); at < n; at += grid_stride()) {
    const int64_t i = at % inner;
    const int64_t c = (at / inner) % classes;
    const int64_t o = at / (inner * classes);
    const int64_t row = o * inner + i;
    T target;
    if (soft) {
      target = static_cast<const T*>(label)[at];
    } else {
      const int64_t hard = label_at(label, label64, row);
      if (hard == ignore_index || hard < 0 || hard >= classes) {
        d[at] = 0;
        continue;
      }
      target = T(c == hard ? 1 : 0);
    }
    if (use_softmax) d[at] = mul_rn(sm[at] - target, g[row]);
    else d[at] = target == T(0) ? T(0) : mul_rn(-target / sm[at], g[row]);
  }
}

constexpr unsigned kReduceThreads = 1024;

template <typename T>
__global__ void mean_kernel(const T* x, T* out, int64_t n) {
  __shared__ Compute<T> partial[kReduceThreads];
  Compute<T> acc = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) acc += widen(x[i]);
  partial[threadIdx.x] = acc;
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[0] = narrow<T>(n ? partial[0] / static_cast<Compute<T>>(n) : 0);
}

template <typename T>
__global__ void mean_grad_kernel(const T* dout, T* dx, int64_t n) {
  const T value = narrow<T>(widen(dout[0]) / static_cast<Compute<T>>(n ? n : 1));
  for (int64_t i = first_index(); i < n; i += grid_stride()) dx[i] = value;
}

}  // namespace

template <typename T>
void fill(T* out, int64_t n, double value, Stream s) {
  if (n > 0) fill_kernel<T><<<grid_for(n), kThreads, 0, s>>>(out, n, static_cast<T>(value));
}

void fill_bits16(uint16_t* out, int64_t n, uint16_t bits, Stream s) {
  if (n > 0) fill_kernel<uint16_t><<<grid_for(n), kThreads, 0, s>>>(out, n, bits);
}

// The period of an operand over the flat output when it is broadcast only
// over leading dims and laid out like the output in the trailing ones (its
// element count), else 0.
static int64_t trailing_period(const int64_t* strides, const BroadcastIndex& index) {
  int64_t period = 1, out_stride = 1;
  bool broadcast_seen = false;
  for (int k = index.rank - 1; k >= 0; --k) {
    const int64_t extent = index.out_shape[k];
    if (extent != 1) {
      if (strides[k] == 0) {
        broadcast_seen = true;
      } else {
        if (broadcast_seen || strides[k] != out_stride) return 0;
        period *= extent;
      }
    }
    out_stride *= extent;
  }
  return period;
}

// Whether an operand is broadcast over leading and trailing dims only, its
// own dims (laid out as in the output) in between: then its element for
// output o is (o / inner) % mid. A full operand (no broadcast dim) is not.
static bool middle_run(const int64_t* strides, const BroadcastIndex& index, int64_t& inner,
                       int64_t& mid) {
  inner = 1;
  mid = 1;
  int k = index.rank - 1;
  for (; k >= 0 && (strides[k] == 0 || index.out_shape[k] == 1); --k) inner *= index.out_shape[k];
  int64_t own_stride = 1;
  for (; k >= 0 && index.out_shape[k] != 1 && strides[k] != 0; --k) {
    if (strides[k] != own_stride) return false;
    own_stride *= index.out_shape[k];
  }
  mid = own_stride;
  for (; k >= 0; --k)
    if (strides[k] != 0 && index.out_shape[k] != 1) return false;
  return inner > 1;
}

template <typename T>
void binary(Binary op, const T* x, const T* y, T* out, const BroadcastIndex& index, Stream s) {
  int64_t n = 1;
  for (int d = 0; d < index.rank; ++d) n *= index.out_shape[d];
  if (n <= 0) return;
  const int64_t x_period = trailing_period(index.x_strides, index);
  const int64_t y_period = trailing_period(index.y_strides, index);
  // Below 2^31 elements, so an index plus the grid stride still fits 32 bits.
  if (x_period > 0 && y_period > 0 && n <= std::numeric_limits<int32_t>::max()) {
    periodic_binary(op, x, y, out, n, x_period, y_period, s);
    return;
  }
  // One full operand and one with its dims in the middle (a channel bias).
  int64_t inner = 1, mid = 1;
  if (n <= std::numeric_limits<int32_t>::max()) {
    if (x_period == n && middle_run(index.y_strides, index, inner, mid)) {
      middle_broadcast_binary(op, x, y, out, n, inner, mid, true, s);
      return;
    }
    if (y_period == n && middle_run(index.x_strides, index, inner, mid)) {
      middle_broadcast_binary(op, x, y, out, n, inner, mid, false, s);
      return;
    }
  }
  binary_kernel<T><<<grid_for(n), kThreads, 0, s>>>(op, x, y, out, index, n);
}

// Whether binary_grad's sums can run as leading_sum_grad_kernel: every
// summed dim (the gradient's stride 0, extent > 1) comes before every kept
// one, the kept dims are laid out as in the output, and a product's other
// operand has the output's full shape. Sets the [rows, cols] view of dout.
// The column sums of dout viewed as [rows, cols] (rows > kSumRun) into d, in
// the two passes of column_runs_kernel and add_runs_kernel through
// `workspace`; with dx, an add or sub's X gradient from the same read.
template <typename T>
void two_pass_column_sums(Binary op, bool for_y, const T* dout, const T* other, T* d,
                          int64_t rows, int64_t cols, Compute<T> factor, void* workspace,
                          Stream s, T* dx = nullptr) {
  auto* runs = static_cast<Compute<T>*>(workspace);
  const int64_t run_count = (rows + kSumRun - 1) / kSumRun;
  if (dx)
    column_runs_kernel<T, true><<<grid_for(run_count * cols), kThreads, 0, s>>>(
        false, dout, other, runs, rows, cols, op, dx);
  else
    column_runs_kernel<T><<<grid_for(run_count * cols), kThreads, 0, s>>>(
        op == Binary::Mul, dout, other, runs, rows, cols);
  // 64-thread blocks: a few thousand columns still spread over many SMs.
  add_runs_kernel<T><<<static_cast<unsigned>(std::min<int64_t>((cols + 63) / 64, 65535LL * 16)),
                       64, 0, s>>>(op, for_y, runs, run_count, d, cols, factor);
}

static bool leading_sum_layout(Binary op, bool for_y, int64_t n_d, const BroadcastIndex& index,
                        int64_t& rows, int64_t& cols) {
  const int64_t* own = for_y ? index.y_strides : index.x_strides;
  const int64_t* theirs = for_y ? index.x_strides : index.y_strides;
  int64_t out_stride[kMaxDims];
  int64_t stride = 1;
  for (int k = index.rank - 1; k >= 0; --k) {
    out_stride[k] = stride;
    stride *= index.out_shape[k];
  }
  rows = 1;
  cols = 1;
  bool kept_seen = false;
  for (int k = 0; k < index.rank; ++k) {
    if (index.out_shape[k] == 1) continue;
    if (op == Binary::Mul && theirs[k] != out_stride[k]) return false;
    if (own[k] == 0) {
      if (kept_seen) return false;
      rows *= index.out_shape[k];
    } else {
      if (own[k] != out_stride[k]) return false;
      kept_seen = true;
      cols *= index.out_shape[k];
    }
  }
  return cols == n_d;
}

template <typename T>
std::size_t binary_grad_workspace(Binary op, bool for_y, int64_t n_d, const BroadcastIndex& index) {
  int64_t rows = 0, cols = 0;
  if (n_d <= 0 || !leading_sum_layout(op, for_y, n_d, index, rows, cols) || rows <= kSumRun)
    return 0;
  const int64_t run_count = (rows + kSumRun - 1) / kSumRun;
  return static_cast<std::size_t>(run_count * cols) * sizeof(Compute<T>);
}

template <typename T>
void binary_grad(Binary op, bool for_y, const T* dout, const T* other, T* d, int64_t n_d,
                 const BroadcastIndex& index, Stream s, void* workspace, double factor) {
  if (n_d <= 0) return;
  const Compute<T> f = static_cast<Compute<T>>(factor);
  int64_t rows = 0, cols = 0;
  if (leading_sum_layout(op, for_y, n_d, index, rows, cols)) {
    if (rows == 1) {
      packed_dense_grad(op, for_y, dout, other, d, cols, factor, s);
      return;
    }
    if (rows > kSumRun && workspace) {
      two_pass_column_sums(op, for_y, dout, other, d, rows, cols, f, workspace, s);
      return;
    }
    // Narrow blocks when columns are few, so their loads spread over more SMs.
    const unsigned threads = cols >= 64 * kThreads ? kThreads : 64;
    int64_t blocks = (cols + threads - 1) / threads;
    if (blocks > 65535LL * 16) blocks = 65535LL * 16;
    leading_sum_grad_kernel<T><<<static_cast<unsigned>(blocks), threads, 0, s>>>(
        op, for_y, dout, other, d, rows, cols, f);
    return;
  }
  binary_grad_kernel<T><<<grid_for(n_d), kThreads, 0, s>>>(op, for_y, dout, other, d, n_d, index, f);
}

template <typename T>
bool add_grads_in_one_pass(Binary op, const T* dout, T* dx, T* dy, int64_t n_y,
                           const BroadcastIndex& index, Stream s, void* workspace) {
  int64_t rows = 0, cols = 0, x_rows = 0, x_cols = 0;
  if (op == Binary::Mul || !workspace || n_y <= 0 ||
      !leading_sum_layout(op, true, n_y, index, rows, cols) || rows <= kSumRun ||
      !leading_sum_layout(op, false, rows * cols, index, x_rows, x_cols) || x_rows != 1)
    return false;
  two_pass_column_sums(op, true, dout, dout, dy, rows, cols, Compute<T>(1), workspace, s, dx);
  return true;
}

template <typename T>
void broadcast_scale(const T* src, T* out, double factor, const BroadcastIndex& index, Stream s) {
  int64_t n = 1;
  for (int d = 0; d < index.rank; ++d) n *= index.out_shape[d];
  if (n > 0)
    broadcast_scale_kernel<T><<<grid_for(n), kThreads, 0, s>>>(
        src, out, static_cast<Compute<T>>(factor), index, n);
}

template <typename T>
void sum(const T* const* inputs, int count, T* out, int64_t n, Stream s) {
  SumInputs<T> in{};
  for (int k = 0; k < count && k < kMaxSumInputs; ++k) in.p[k] = inputs[k];
  if (n > 0) sum_kernel<T><<<grid_for(n), kThreads, 0, s>>>(in, count, out, n);
}

template <typename T>
void softmax_cross_entropy(const T* logits, const void* label, bool label64, bool soft,
                           bool use_softmax, int64_t ignore_index, T* softmax, T* loss,
                           int64_t outer, int64_t classes, int64_t inner, Stream s) {
  const int64_t rows = outer * inner;
  if (rows > 0)
    softmax_xent_kernel<T><<<grid_for(rows), kThreads, 0, s>>>(
        logits, label, label64, soft, use_softmax, ignore_index, softmax, loss, outer, classes,
        inner);
}

template <typename T>
void softmax_cross_entropy_grad(const T* softmax, const void* label, bool label64, bool soft,
                                bool use_softmax, int64_t ignore_index, const T* dloss, T* dx,
                                int64_t outer, int64_t classes, int64_t inner, Stream s) {
  const int64_t n = outer * classes * inner;
  if (n > 0)
    softmax_xent_grad_kernel<T><<<grid_for(n), kThreads, 0, s>>>(
        softmax, label, label64, soft, use_softmax, ignore_index, dloss, dx, outer, classes, inner);
}

template <typename T>
void mean(const T* x, T* out, int64_t n, Stream s) {
  mean_kernel<T><<<1, kReduceThreads, 0, s>>>(x, out, n);
}

template <typename T>
void mean_grad(const T* dout, T* dx, int64_t n, Stream s) {
  if (n > 0) mean_grad_kernel<T><<<grid_for(n), kThreads, 0, s>>>(dout, dx, n);
}

// The kernels mixed precision runs in FP16/BF16 as well.
#define CTP_INSTANTIATE_MIXED_PRECISION_KERNELS(T)                                              \
  template void binary<T>(Binary, const T*, const T*, T*, const BroadcastIndex&, Stream);      \
  template void binary_grad<T>(Binary, bool, const T*, const T*, T*, int64_t,                  \
                               const BroadcastIndex&, Stream, void*, double);                  \
  template std::size_t binary_grad_workspace<T>(Binary, bool, int64_t, const BroadcastIndex&); \
  template bool add_grads_in_one_pass<T>(Binary, const T*, T*, T*, int64_t,                    \
                                         const BroadcastIndex&, Stream, void*);                \
  template void broadcast_scale<T>(const T*, T*, double, const BroadcastIndex&, Stream);       \
  template void sum<T>(const T* const*, int, T*, int64_t, Stream);                             \
  template void mean<T>(const T*, T*, int64_t, Stream);                                        \
  template void mean_grad<T>(const T*, T*, int64_t, Stream);

#define CTP_INSTANTIATE_FLOAT_KERNELS(T)                                                        \
  CTP_INSTANTIATE_MIXED_PRECISION_KERNELS(T)                                                    \
  template void softmax_cross_entropy<T>(const T*, const void*, bool, bool, bool, int64_t, T*, \
                                         T*, int64_t, int64_t, int64_t, Stream);               \
  template void softmax_cross_entropy_grad<T>(const T*, const void*, bool, bool, bool, int64_t, \
                                              const T*, T*, int64_t, int64_t, int64_t, Stream);

CTP_INSTANTIATE_FLOAT_KERNELS(float)
CTP_INSTANTIATE_FLOAT_KERNELS(double)
CTP_INSTANTIATE_MIXED_PRECISION_KERNELS(Half)
CTP_INSTANTIATE_MIXED_PRECISION_KERNELS(BFloat16)

template void fill<float>(float*, int64_t, double, Stream);
template void fill<double>(double*, int64_t, double, Stream);
template void fill<int32_t>(int32_t*, int64_t, double, Stream);
template void fill<int64_t>(int64_t*, int64_t, double, Stream);
template void fill<uint8_t>(uint8_t*, int64_t, double, Stream);

}  // namespace ctp::cuda::launch
