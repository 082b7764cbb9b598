// The momentum, Adam, AdamW and RMSProp updates (AdamW and RMSProp one
// parameter per launch), for one parameter and for many at once
// (sgd's live with the packed element kernels). One step per element, the
// same expressions for both forms, so a batched update gives the bits of
// the updates run one by one. Adam's beta powers advance in a launch of
// their own after the updates that read them.
#include "ops/cuda/device_math.cuh"
#include "ops/cuda/multi_tensor.cuh"

namespace ctp::cuda::launch {
namespace {

using namespace detail;  // ops/cuda/device_math.cuh

template <typename T>
struct MomentumStep {
  T rate, mu, l2, rescale;
  bool nesterov;
  __device__ MomentumStep(Scalar lr, T mu, bool nesterov, T l2, T rescale)
      : rate(static_cast<T>(load(lr))), mu(mu), l2(l2), rescale(rescale), nesterov(nesterov) {}
  __device__ void operator()(const OptimizerTask& t, int64_t i) const {
    const T* p = static_cast<const T*>(t.param);
    const T* g = static_cast<const T*>(t.grad);
    const T* v = static_cast<const T*>(t.state[0]);
    const T gi = add_rn(mul_rn(g[i], rescale), mul_rn(l2, p[i]));
    const T vi = add_rn(mul_rn(v[i], mu), gi);
    static_cast<T*>(t.state_out[0])[i] = vi;
    static_cast<T*>(t.param_out)[i] =
        nesterov ? p[i] - mul_rn(add_rn(gi, mul_rn(vi, mu)), rate) : p[i] - mul_rn(rate, vi);
  }
};

template <typename T>
struct AdamStep {
  T b1, b2, lr_t, eps_t;
  // The bias corrections of this parameter's beta powers, as Paddle folds
  // them into the rate and epsilon.
  __device__ AdamStep(const OptimizerTask& t, Scalar lr, T b1, T b2, double epsilon) : b1(b1), b2(b2) {
    const double b1p = load(t.beta_pow[0]), b2p = load(t.beta_pow[1]);
    lr_t = static_cast<T>(load(lr) * sqrt(1.0 - b2p) / (1.0 - b1p));
    eps_t = static_cast<T>(epsilon * sqrt(1.0 - b2p));
  }
  __device__ void operator()(const OptimizerTask& t, int64_t i) const {
    const T* p = static_cast<const T*>(t.param);
    const T* g = static_cast<const T*>(t.grad);
    const T* a = static_cast<const T*>(t.state[0]);
    const T* b = static_cast<const T*>(t.state[1]);
    const T ai = add_rn(mul_rn(b1, a[i]), mul_rn(T(1) - b1, g[i]));
    const T bi = add_rn(mul_rn(b2, b[i]), mul_rn(mul_rn(T(1) - b2, g[i]), g[i]));
    static_cast<T*>(t.state_out[0])[i] = ai;
    static_cast<T*>(t.state_out[1])[i] = bi;
    static_cast<T*>(t.param_out)[i] = p[i] - mul_rn(lr_t, ai / (sqrt(bi) + eps_t));
  }
};

template <typename T>
__global__ void momentum_kernel(OptimizerTask t, Scalar lr, T mu, bool nesterov, T l2, T rescale) {
  const MomentumStep<T> step(lr, mu, nesterov, l2, rescale);
  for (int64_t i = first_index(); i < t.n; i += grid_stride()) step(t, i);
}

template <typename T>
__global__ void adam_kernel(OptimizerTask t, Scalar lr, T b1, T b2, double epsilon) {
  const AdamStep<T> step(t, lr, b1, b2, epsilon);
  for (int64_t i = first_index(); i < t.n; i += grid_stride()) step(t, i);
}

// AdamW (Paddle's functor): the parameter decays by 1 - lr lr_ratio coeff,
// then Adam's step with lr lr_ratio; `coeff` is 0 without decay.
template <typename T>
__global__ void adamw_kernel(OptimizerTask t, Scalar lr, double lr_ratio, double coeff, T b1,
                             T b2, double epsilon) {
  const double b1p = load(t.beta_pow[0]), b2p = load(t.beta_pow[1]);
  const double rate = load(lr) * lr_ratio;
  const T keep = static_cast<T>(1.0 - rate * coeff);
  const T lr_t = static_cast<T>(rate * sqrt(1.0 - b2p) / (1.0 - b1p));
  const T eps_t = static_cast<T>(epsilon * sqrt(1.0 - b2p));
  const T* p = static_cast<const T*>(t.param);
  const T* g = static_cast<const T*>(t.grad);
  const T* a = static_cast<const T*>(t.state[0]);
  const T* b = static_cast<const T*>(t.state[1]);
  for (int64_t i = first_index(); i < t.n; i += grid_stride()) {
    const T pi = coeff != 0.0 ? mul_rn(p[i], keep) : p[i];
    const T ai = add_rn(mul_rn(b1, a[i]), mul_rn(T(1) - b1, g[i]));
    const T bi = add_rn(mul_rn(b2, b[i]), mul_rn(mul_rn(T(1) - b2, g[i]), g[i]));
    static_cast<T*>(t.state_out[0])[i] = ai;
    static_cast<T*>(t.state_out[1])[i] = bi;
    static_cast<T*>(t.param_out)[i] = pi - mul_rn(lr_t, ai / (sqrt(bi) + eps_t));
  }
}

// RMSProp as Paddle computes it (epsilon inside the root; the mean gradient
// only when centered).
template <typename T>
__global__ void rmsprop_kernel(RmspropTask t, Scalar lr, T rho, T epsilon, T momentum,
                               bool centered) {
  const T rate = static_cast<T>(load(lr));
  const T* p = static_cast<const T*>(t.param);
  const T* g = static_cast<const T*>(t.grad);
  const T* ms = static_cast<const T*>(t.mean_square);
  const T* mom = static_cast<const T*>(t.moment);
  const T* mg = static_cast<const T*>(t.mean_grad);
  for (int64_t i = first_index(); i < t.n; i += grid_stride()) {
    const T gi = g[i];
    const T msi = add_rn(mul_rn(rho, ms[i]), mul_rn(mul_rn(T(1) - rho, gi), gi));
    T denominator = add_rn(msi, epsilon);
    if (centered) {
      const T mgi = add_rn(mul_rn(rho, mg[i]), mul_rn(T(1) - rho, gi));
      if (t.mean_grad_out) static_cast<T*>(t.mean_grad_out)[i] = mgi;
      denominator = add_rn(add_rn(msi, -mul_rn(mgi, mgi)), epsilon);
    }
    const T momi = add_rn(mul_rn(momentum, mom[i]), mul_rn(rate, gi) / sqrt(denominator));
    static_cast<T*>(t.mean_square_out)[i] = msi;
    static_cast<T*>(t.moment_out)[i] = momi;
    static_cast<T*>(t.param_out)[i] = p[i] - momi;
  }
}

__device__ void advance(Scalar in, double factor, void* out) {
  const double v = load(in) * factor;
  if (in.fp64) *static_cast<double*>(out) = v;
  else *static_cast<float*>(out) = static_cast<float>(v);
}

__global__ void scalar_times_kernel(Scalar in, double factor, void* out) { advance(in, factor, out); }

// Many parameters' updates per launch (multi_tensor.cuh).
constexpr int kUpdatesPerLaunch = 32;
using UpdateTable = ChunkTable<OptimizerTask, kUpdatesPerLaunch>;

template <typename Step>
__device__ void run_chunk(const Step& step, const UpdateTable& table, int k) {
  int64_t begin = 0, end = 0;
  table.chunk_of_block(k, begin, end);
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) step(table.tasks[k], i);
}

template <typename T>
__global__ void multi_momentum_kernel(UpdateTable table, Scalar lr, T mu, bool nesterov, T l2,
                                      T rescale) {
  const MomentumStep<T> step(lr, mu, nesterov, l2, rescale);
  run_chunk(step, table, table.task_of_block());
}

template <typename T>
__global__ void multi_adam_kernel(UpdateTable table, Scalar lr, T b1, T b2, double epsilon) {
  const int k = table.task_of_block();
  const AdamStep<T> step(table.tasks[k], lr, b1, b2, epsilon);
  run_chunk(step, table, k);
}

// Every task's beta powers times (beta1, beta2), one thread per power.
__global__ void multi_advance_kernel(UpdateTable table, double beta1, double beta2) {
  const int i = static_cast<int>(threadIdx.x);
  if (i >= 2 * table.count) return;
  const OptimizerTask& t = table.tasks[i / 2];
  if (t.beta_pow_out[i % 2]) advance(t.beta_pow[i % 2], i % 2 ? beta2 : beta1, t.beta_pow_out[i % 2]);
}

}  // namespace

template <typename T>
void momentum(const OptimizerTask& task, Scalar lr, double mu, bool nesterov, double l2_decay,
              double rescale, Stream s) {
  if (task.n > 0)
    momentum_kernel<T><<<grid_for(task.n), kThreads, 0, s>>>(
        task, lr, static_cast<T>(mu), nesterov, static_cast<T>(l2_decay), static_cast<T>(rescale));
}

template <typename T>
void adam(const OptimizerTask& task, Scalar lr, double beta1, double beta2, double epsilon,
          bool advance_powers, Stream s) {
  if (task.n > 0)
    adam_kernel<T><<<grid_for(task.n), kThreads, 0, s>>>(task, lr, static_cast<T>(beta1),
                                                          static_cast<T>(beta2), epsilon);
  for (int k = 0; k < 2; ++k)
    if (task.beta_pow_out[k])
      scalar_times(task.beta_pow[k], advance_powers ? (k ? beta2 : beta1) : 1.0,
                   task.beta_pow_out[k], s);
}

template <typename T>
void adamw(const OptimizerTask& task, Scalar lr, double lr_ratio, double coeff, double beta1,
           double beta2, double epsilon, bool advance_powers, Stream s) {
  if (task.n > 0)
    adamw_kernel<T><<<grid_for(task.n), kThreads, 0, s>>>(
        task, lr, lr_ratio, coeff, static_cast<T>(beta1), static_cast<T>(beta2), epsilon);
  for (int k = 0; k < 2; ++k)
    if (task.beta_pow_out[k])
      scalar_times(task.beta_pow[k], advance_powers ? (k ? beta2 : beta1) : 1.0,
                   task.beta_pow_out[k], s);
}

template <typename T>
void rmsprop(const RmspropTask& task, Scalar lr, double rho, double epsilon, double momentum,
             bool centered, Stream s) {
  if (task.n > 0)
    rmsprop_kernel<T><<<grid_for(task.n), kThreads, 0, s>>>(
        task, lr, static_cast<T>(rho), static_cast<T>(epsilon), static_cast<T>(momentum),
        centered);
}

template <typename T>
void multi_momentum(const OptimizerTask* tasks, std::size_t count, Scalar lr, double mu,
                    bool nesterov, double l2_decay, double rescale, Stream s) {
  for_each_chunk_table<kUpdatesPerLaunch>(tasks, count, [&](const UpdateTable& table) {
    if (table.blocks() > 0)
      multi_momentum_kernel<T><<<table.blocks(), kThreads, 0, s>>>(
          table, lr, static_cast<T>(mu), nesterov, static_cast<T>(l2_decay),
          static_cast<T>(rescale));
  });
}

template <typename T>
void multi_adam(const OptimizerTask* tasks, std::size_t count, Scalar lr, double beta1,
                double beta2, double epsilon, bool advance_powers, Stream s) {
  // Every update reads its powers before any advances: all updates first.
  for_each_chunk_table<kUpdatesPerLaunch>(tasks, count, [&](const UpdateTable& table) {
    if (table.blocks() > 0)
      multi_adam_kernel<T><<<table.blocks(), kThreads, 0, s>>>(
          table, lr, static_cast<T>(beta1), static_cast<T>(beta2), epsilon);
  });
  for_each_chunk_table<kUpdatesPerLaunch>(tasks, count, [&](const UpdateTable& table) {
    multi_advance_kernel<<<1, 2 * kUpdatesPerLaunch, 0, s>>>(
        table, advance_powers ? beta1 : 1.0, advance_powers ? beta2 : 1.0);
  });
}

void scalar_times(Scalar in, double factor, void* out, Stream s) {
  scalar_times_kernel<<<1, 1, 0, s>>>(in, factor, out);
}

#define CTP_INSTANTIATE_OPTIMIZER_KERNELS(T)                                                   \
  template void momentum<T>(const OptimizerTask&, Scalar, double, bool, double, double, Stream); \
  template void adam<T>(const OptimizerTask&, Scalar, double, double, double, bool, Stream);    \
  template void adamw<T>(const OptimizerTask&, Scalar, double, double, double, double, double,  \
                         bool, Stream);                                                         \
  template void rmsprop<T>(const RmspropTask&, Scalar, double, double, double, bool, Stream);  \
  template void multi_momentum<T>(const OptimizerTask*, std::size_t, Scalar, double, bool,     \
                                  double, double, Stream);                                      \
  template void multi_adam<T>(const OptimizerTask*, std::size_t, Scalar, double, double, double, \
                              bool, Stream);
CTP_INSTANTIATE_OPTIMIZER_KERNELS(float)
CTP_INSTANTIATE_OPTIMIZER_KERNELS(double)

}  // namespace ctp::cuda::launch
