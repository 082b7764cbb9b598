// Launchers of the CUDA compute kernels (device_kernels.cu). Plain types
// only, so the op logic (*.cc, host compiler) and the device code (nvcc)
// share nothing but this header. T is float or double, or one of the 16-bit
// storage types below where the launcher says so.
#pragma once
#include <cstddef>
#include <cstdint>

#include "ops/common/sum_order.h"

struct CUstream_st;

namespace ctp::cuda::launch {

using Stream = CUstream_st*;
constexpr int kMaxDims = 8;

// FP16 (IEEE binary16) and BF16 elements as stored. Kernels on them compute
// in float and round each output once to nearest even, as the CPU kernels
// (ops/cpu/float16_compute.h) do, so both give the same results. binary,
// binary_grad, broadcast_scale, relu, relu_grad, scale, sum, mean and
// mean_grad take them; the loss and optimizer kernels stay FP32/FP64 (mixed
// precision keeps FP32 master weights).
struct Half {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

// Paddle's broadcasting as index maps over the output's dims: element
// strides of X and Y, 0 where they broadcast.
struct BroadcastIndex {
  int rank = 0;
  int64_t out_shape[kMaxDims] = {};
  int64_t x_strides[kMaxDims] = {};
  int64_t y_strides[kMaxDims] = {};
};

// Div reaches binary() only: its gradient is div_grad_terms
// (activation_launch.h) summed as Add's.
enum class Binary { Add, Sub, Mul, Div };

// A one-element scalar operand read on the GPU (learning rates, beta powers).
struct Scalar {
  const void* data = nullptr;
  bool fp64 = false;
};

template <typename T> void fill(T* out, int64_t n, double value, Stream s);
// Every 16-bit element of `out` set to `bits` (an FP16/BF16 constant).
void fill_bits16(uint16_t* out, int64_t n, uint16_t bits, Stream s);
// out[i] = X's element converted (From, To: float, double, Half, BFloat16;
// doubles pass through float on their way to 16 bits, as on the CPU).
template <typename From, typename To> void cast(const From* x, To* out, int64_t n, Stream s);
template <typename T>
void binary(Binary op, const T* x, const T* y, T* out, const BroadcastIndex& index, Stream s);
// The gradient of X (for_y false) or Y: the sum over the output elements that
// read each element, in the order of ops/common/sum_order.h (as the CPU kernel
// sums), times `factor` (reduce_mean's 1/count). Long column sums take their
// runs in parallel through `workspace`, device memory of at least
// binary_grad_workspace() bytes used on stream `s` (without it, when that
// is 0 or `workspace` is null, one thread adds a column's runs: the same
// result, slower).
template <typename T>
void binary_grad(Binary op, bool for_y, const T* dout, const T* other, T* d, int64_t n_d,
                 const BroadcastIndex& index, Stream s, void* workspace, double factor = 1.0);
template <typename T>
std::size_t binary_grad_workspace(Binary op, bool for_y, int64_t n_d, const BroadcastIndex& index);
// Both gradients of an add or sub whose X has the output's layout and whose
// Y is summed over leading dims (a bias) in many rows: one pass over dout
// gives X's gradient and Y's run sums (workspace: binary_grad_workspace for
// Y), with binary_grad's bits. False, doing nothing, for any other layout.
template <typename T>
bool add_grads_in_one_pass(Binary op, const T* dout, T* dx, T* dy, int64_t n_y,
                           const BroadcastIndex& index, Stream s, void* workspace);
// out[o] = src[j(o)] * factor over index.out_shape, j from index.x_strides
// (a broadcast copy: reduce_mean_grad).
template <typename T>
void broadcast_scale(const T* src, T* out, double factor, const BroadcastIndex& index, Stream s);
template <typename T> void relu(const T* x, T* out, int64_t n, Stream s);
template <typename T> void relu_grad(const T* dout, const T* gate, T* d, int64_t n, Stream s);
template <typename T>
void scale(const T* x, T* out, int64_t n, double factor, double bias, bool bias_after_scale,
           Stream s);
// out = sum of `count` inputs; `out` may be one of them.
template <typename T> void sum(const T* const* inputs, int count, T* out, int64_t n, Stream s);

// Logits viewed as [outer, classes, inner]; hard labels INT64 (label64) or
// INT32, soft labels T with the logits' layout.
template <typename T>
void softmax_cross_entropy(const T* logits, const void* label, bool label64, bool soft,
                           bool use_softmax, int64_t ignore_index, T* softmax, T* loss,
                           int64_t outer, int64_t classes, int64_t inner, Stream s);
template <typename T>
void softmax_cross_entropy_grad(const T* softmax, const void* label, bool label64, bool soft,
                                bool use_softmax, int64_t ignore_index, const T* dloss, T* dx,
                                int64_t outer, int64_t classes, int64_t inner, Stream s);

// softmax over X viewed as [outer, classes, inner] (softmax_kernels.cu);
// T also Half and BFloat16, computed in float. out may be x.
template <typename T>
void softmax(const T* x, T* out, int64_t outer, int64_t classes, int64_t inner, Stream s);
template <typename T>
void softmax_grad(const T* out, const T* dout, T* dx, int64_t outer, int64_t classes,
                  int64_t inner, Stream s);
// cross_entropy2 on `rows` rows of `classes` probabilities, hard labels as
// above; an out-of-range label that is not ignore_index gives a NaN loss
// (the host checks labels it holds).
template <typename T>
void cross_entropy2(const T* x, const void* label, bool label64, int64_t ignore_index, T* y,
                    T* match_x, int64_t rows, int64_t classes, Stream s);
template <typename T>
void cross_entropy_grad2(const T* match_x, const void* label, bool label64, int64_t ignore_index,
                         const T* dy, T* dx, int64_t rows, int64_t classes, Stream s);

template <typename T> void mean(const T* x, T* out, int64_t n, Stream s);
template <typename T> void mean_grad(const T* dout, T* dx, int64_t n, Stream s);

template <typename T>
void sgd(const T* param, const T* grad, Scalar lr, T* param_out, int64_t n, Stream s);
// One parameter's momentum or Adam update (optimizer_kernels.cu): the
// state is momentum's velocity, or Adam's two moments and this parameter's
// beta powers, which Adam advances (times beta1, beta2; times 1 when
// advance_powers is false) after the update that reads them.
struct OptimizerTask {
  const void* param = nullptr;
  const void* grad = nullptr;
  const void* state[2] = {nullptr, nullptr};
  void* param_out = nullptr;
  void* state_out[2] = {nullptr, nullptr};
  Scalar beta_pow[2];
  void* beta_pow_out[2] = {nullptr, nullptr};  // null: not written
  int64_t n = 0;
};
template <typename T>
void momentum(const OptimizerTask& task, Scalar lr, double mu, bool nesterov, double l2_decay,
              double rescale, Stream s);
template <typename T>
void adam(const OptimizerTask& task, Scalar lr, double beta1, double beta2, double epsilon,
          bool advance_powers, Stream s);
// AdamW: Adam's step after the decay p *= 1 - lr lr_ratio coeff (coeff 0:
// none), with the learning rate lr lr_ratio.
template <typename T>
void adamw(const OptimizerTask& task, Scalar lr, double lr_ratio, double coeff, double beta1,
           double beta2, double epsilon, bool advance_powers, Stream s);
// One parameter's RMSProp update; mean_grad(_out) only when centered.
struct RmspropTask {
  const void* param = nullptr;
  const void* grad = nullptr;
  const void* mean_square = nullptr;
  const void* moment = nullptr;
  const void* mean_grad = nullptr;
  void* param_out = nullptr;
  void* mean_square_out = nullptr;
  void* moment_out = nullptr;
  void* mean_grad_out = nullptr;  // null: not written
  int64_t n = 0;
};
template <typename T>
void rmsprop(const RmspropTask& task, Scalar lr, double rho, double epsilon, double momentum,
             bool centered, Stream s);
// Many parameters' updates in a few launches (same bits as one by one);
// tasks must not share memory, except a task's outputs with its own inputs.
template <typename T>
void multi_momentum(const OptimizerTask* tasks, std::size_t count, Scalar lr, double mu,
                    bool nesterov, double l2_decay, double rescale, Stream s);
template <typename T>
void multi_adam(const OptimizerTask* tasks, std::size_t count, Scalar lr, double beta1,
                double beta2, double epsilon, bool advance_powers, Stream s);
// Many tensors' element-wise updates in a few launches (a launch costs a few
// microseconds however small the tensor): task k is out[i] = f(a[i]) for
// cast and scale, f(a[i], b[i]) for sgd, i < n. Each element gets the arithmetic of
// the one-tensor launcher above, so the bits are the same. Tasks must not
// share memory, except a task's output with its own input.
struct TensorTask {
  const void* a = nullptr;
  const void* b = nullptr;
  void* out = nullptr;
  int64_t n = 0;
};
template <typename From, typename To>
void multi_cast(const TensorTask* tasks, std::size_t count, Stream s);
template <typename T>
void multi_scale(const TensorTask* tasks, std::size_t count, double factor, double bias,
                 bool bias_after_scale, Stream s);
template <typename T>
void multi_sgd(const TensorTask* tasks, std::size_t count, Scalar lr, Stream s);

// out = in * factor (one element; in and out may alias).
void scalar_times(Scalar in, double factor, void* out, Stream s);

}  // namespace ctp::cuda::launch
