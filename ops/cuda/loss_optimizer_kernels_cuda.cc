// CUDA kernels of softmax_with_cross_entropy, cross_entropy2 (+grads) and the
// optimizers sgd, momentum, adam, adamw and rmsprop, under the rules of ops/schema/meta_nn.h and
// meta_optimizer.h and with the CPU kernels' formulas. Scalars such
// as the learning rate and Adam's beta powers are read on the GPU, so a step
// never waits for the host.
#include <bit>
#include <initializer_list>
#include <tuple>

#include "ops/common/kernel_util.h"
#include "ops/cuda/batch_launch.h"
#include "ops/cuda/cuda_kernel_util.h"
#include "ops/cuda/device_kernels.h"
#include "ops/schema/meta_nn.h"
#include "ops/schema/meta_optimizer.h"

namespace ctp::cuda {
namespace {

launch::Stream stream_of(KernelContext& ctx) { return device_context(ctx).compute_stream(); }

// Hard labels that arrive from the host (fed data) are checked there, as the
// CPU kernel checks them; a label already on the GPU is not read back (an
// out-of-range one then yields a NaN loss rather than a host round trip).
const Tensor& checked_label(KernelContext& ctx, int64_t classes, int64_t ignore_index) {
  const Tensor& raw = ctx.input("Label");
  if (raw.device().kind == DeviceKind::CPU)
    for (int64_t row = 0; row < raw.numel(); ++row) {
      meta::hard_label_class(ctx, classes, ignore_index, row,
                             raw.dtype() == DataType::INT32 ? raw.data<int32_t>()[row]
                                                            : raw.data<int64_t>()[row]);
    }
  return device_input(ctx, "Label");
}
const Tensor& checked_label(KernelContext& ctx, const meta::SoftmaxCrossEntropyMeta& l) {
  if (l.soft_label) return device_input(ctx, "Label");
  return checked_label(ctx, l.classes, l.ignore_index);
}

void softmax_with_cross_entropy(KernelContext& ctx) {
  const Tensor logits = device_input(ctx, "Logits");
  const meta::SoftmaxCrossEntropyMeta l =
      meta::softmax_with_cross_entropy(ctx, meta_of(logits), meta_of(ctx.input("Label")));
  const Tensor label = checked_label(ctx, l);
  dispatch_float(logits.dtype(), ctx, "Logits", [&]<typename T>() {
    Tensor& softmax = device_output(ctx, "Softmax", 0, logits.dtype(), logits.shape());
    Tensor& loss = device_output(ctx, "Loss", 0, logits.dtype(), l.loss_shape);
    launch::softmax_cross_entropy<T>(logits.data<T>(), label.raw_data(),
                                     label.dtype() == DataType::INT64, l.soft_label,
                                     l.use_softmax, l.ignore_index, softmax.data<T>(),
                                     loss.data<T>(), l.outer, l.classes, l.inner,
                                     stream_of(ctx));
  });
}

void softmax_with_cross_entropy_grad(KernelContext& ctx) {
  const Tensor softmax = device_input(ctx, "Softmax");
  const Tensor dloss = device_input(ctx, "Loss@GRAD");
  const meta::SoftmaxCrossEntropyMeta l = meta::softmax_with_cross_entropy_grad(
      ctx, meta_of(softmax), meta_of(ctx.input("Label")), meta_of(dloss));
  const Tensor label = checked_label(ctx, l);
  dispatch_float(softmax.dtype(), ctx, "Softmax", [&]<typename T>() {
    Tensor& dx = device_output(ctx, "Logits@GRAD", 0, softmax.dtype(), softmax.shape());
    launch::softmax_cross_entropy_grad<T>(softmax.data<T>(), label.raw_data(),
                                          label.dtype() == DataType::INT64, l.soft_label,
                                          l.use_softmax, l.ignore_index, dloss.data<T>(),
                                          dx.data<T>(), l.outer, l.classes, l.inner,
                                          stream_of(ctx));
  });
}

void cross_entropy2(KernelContext& ctx) {
  const Tensor x = device_input(ctx, "X");
  const meta::CrossEntropy2Meta m =
      meta::cross_entropy2(ctx, meta_of(x), meta_of(ctx.input("Label")));
  const Tensor label = checked_label(ctx, m.classes, m.ignore_index);
  dispatch_float(x.dtype(), ctx, "X", [&]<typename T>() {
    Tensor& y = device_output(ctx, "Y", 0, x.dtype(), m.y_shape);
    Tensor& match_x = device_output(ctx, "MatchX", 0, x.dtype(), m.match_x_shape);
    device_output(ctx, "XShape", 0, x.dtype(), m.xshape_shape);  // no elements: its shape
    launch::cross_entropy2<T>(x.data<T>(), label.raw_data(), label.dtype() == DataType::INT64,
                              m.ignore_index, y.data<T>(), match_x.data<T>(), m.rows, m.classes,
                              stream_of(ctx));
  });
}

void cross_entropy_grad2(KernelContext& ctx) {
  const Tensor match_x = device_input(ctx, "MatchX");
  const Tensor dy = device_input(ctx, "Y@GRAD");
  const meta::CrossEntropy2Meta m =
      meta::cross_entropy_grad2(ctx, meta_of(ctx.input("XShape")), meta_of(ctx.input("Label")),
                                meta_of(match_x), meta_of(dy));
  const Tensor label = checked_label(ctx, m.classes, m.ignore_index);
  dispatch_float(dy.dtype(), ctx, "Y@GRAD", [&]<typename T>() {
    Tensor& dx = device_output(ctx, "X@GRAD", 0, dy.dtype(), m.x_shape);
    launch::cross_entropy_grad2<T>(match_x.data<T>(), label.raw_data(),
                                   label.dtype() == DataType::INT64, m.ignore_index,
                                   dy.data<T>(), dx.data<T>(), m.rows, m.classes, stream_of(ctx));
  });
}

void check_like_param(KernelContext& ctx, const Tensor& param, const Tensor& other,
                      const char* slot) {
  meta::require_like_param(ctx, slot, meta_of(param), meta_of(other));
}

launch::Scalar scalar_input(KernelContext& ctx, const char* slot) {
  const Tensor& t = device_input(ctx, slot);
  if (t.numel() < 1) ctx.fail(std::string(slot) + " is empty");
  if (t.dtype() != DataType::FP32 && t.dtype() != DataType::FP64)
    ctx.fail(std::string(slot) + " has dtype " + std::string(to_string(t.dtype())) +
             "; the GPU kernel reads FP32 or FP64");
  return {t.raw_data(), t.dtype() == DataType::FP64};
}

template <typename T>
T* output_like(KernelContext& ctx, const char* slot, const Tensor& like) {
  return device_output(ctx, slot, 0, like.dtype(), like.shape()).template data<T>();
}

// Updates of one element type and one learning rate share a launch.
using SgdKey = std::tuple<DataType, const void*, bool>;

BatchedTask<SgdKey> prepare_sgd(KernelContext& ctx) {
  const Tensor param = device_input(ctx, "Param");
  const Tensor grad = device_input(ctx, "Grad");
  check_like_param(ctx, param, grad, "Grad");
  const launch::Scalar lr = scalar_input(ctx, "LearningRate");
  BatchedTask<SgdKey> work{{param.dtype(), lr.data, lr.fp64}, {}};
  dispatch_float(param.dtype(), ctx, "Param", [&]<typename T>() {
    T* out = output_like<T>(ctx, "ParamOut", param);
    work.task = {param.data<T>(), grad.data<T>(), out, param.numel()};
  });
  work.bytes.reads(param.raw_data(), param.bytes())
      .reads(grad.raw_data(), grad.bytes())
      .writes(work.task.out, param.bytes());
  return work;
}

void launch_sgd(KernelContext& ctx, const SgdKey& key, const launch::TensorTask* tasks,
                std::size_t count) {
  const launch::Scalar lr{std::get<1>(key), std::get<2>(key)};
  dispatch_float(std::get<0>(key), ctx, "Param", [&]<typename T>() {
    if (count == 1)
      launch::sgd<T>(static_cast<const T*>(tasks->a), static_cast<const T*>(tasks->b), lr,
                     static_cast<T*>(tasks->out), tasks->n, stream_of(ctx));
    else
      launch::multi_sgd<T>(tasks, count, lr, stream_of(ctx));
  });
}

// A momentum or Adam update's tensors: Param, Grad and the state slots
// (input, output), shapes checked, outputs sized, and what it reads and
// writes recorded in `bytes`.
struct StateSlots {
  const char* in;
  const char* out;
};
launch::OptimizerTask update_task(KernelContext& ctx, std::initializer_list<StateSlots> states,
                                  TaskBytes& bytes) {
  const Tensor param = device_input(ctx, "Param");
  const Tensor grad = device_input(ctx, "Grad");
  check_like_param(ctx, param, grad, "Grad");
  launch::OptimizerTask t;
  t.param = param.raw_data();
  t.grad = grad.raw_data();
  t.n = param.numel();
  const std::size_t size = param.bytes();
  bytes.reads(t.param, size).reads(t.grad, size);
  std::size_t k = 0;
  for (const StateSlots& slots : states) {
    const Tensor state = device_input(ctx, slots.in);
    check_like_param(ctx, param, state, slots.in);
    dispatch_float(param.dtype(), ctx, "Param", [&]<typename T>() {
      t.state_out[k] = output_like<T>(ctx, slots.out, state);
    });
    t.state[k] = state.raw_data();
    bytes.reads(t.state[k], size).writes(t.state_out[k], size);
    ++k;
  }
  dispatch_float(param.dtype(), ctx, "Param", [&]<typename T>() {
    t.param_out = output_like<T>(ctx, "ParamOut", param);
  });
  bytes.writes(t.param_out, size);
  return t;
}

// Updates with one element type, learning rate and attributes share a
// launch (doubles by their bits).
using MomentumKey = std::tuple<DataType, const void*, bool, uint64_t, bool, uint64_t, uint64_t>;

BatchedTask<MomentumKey, launch::OptimizerTask> prepare_momentum(KernelContext& ctx) {
  TaskBytes bytes;
  const launch::OptimizerTask task = update_task(ctx, {{"Velocity", "VelocityOut"}}, bytes);
  const launch::Scalar lr = scalar_input(ctx, "LearningRate");
  const meta::MomentumAttrs a = meta::momentum_attrs(ctx);
  return {{ctx.input("Param").dtype(), lr.data, lr.fp64, std::bit_cast<uint64_t>(a.mu),
           a.use_nesterov, std::bit_cast<uint64_t>(a.l2_decay),
           std::bit_cast<uint64_t>(a.rescale_grad)},
          task,
          bytes};
}

void launch_momentum(KernelContext& ctx, const MomentumKey& key,
                     const launch::OptimizerTask* tasks, std::size_t count) {
  const launch::Scalar lr{std::get<1>(key), std::get<2>(key)};
  const auto mu = std::bit_cast<double>(std::get<3>(key));
  const bool nesterov = std::get<4>(key);
  const auto decay = std::bit_cast<double>(std::get<5>(key));
  const auto rescale = std::bit_cast<double>(std::get<6>(key));
  dispatch_float(std::get<0>(key), ctx, "Param", [&]<typename T>() {
    if (count == 1)
      launch::momentum<T>(*tasks, lr, mu, nesterov, decay, rescale, stream_of(ctx));
    else
      launch::multi_momentum<T>(tasks, count, lr, mu, nesterov, decay, rescale, stream_of(ctx));
  });
}

double attr_or_host_tensor(KernelContext& ctx, const char* slot, const char* attr,
                           double fallback) {
  if (!ctx.has_input(slot)) return ctx.float_attr(attr, fallback);
  return scalar_value(device_context(ctx).to_host(ctx.input(slot)));
}

// Adam's and AdamW's beta powers: read on the GPU, written when the op has
// the outputs.
void set_beta_powers(KernelContext& ctx, launch::OptimizerTask& t, TaskBytes& bytes) {
  const char* pow_in[2] = {"Beta1Pow", "Beta2Pow"};
  const char* pow_out[2] = {"Beta1PowOut", "Beta2PowOut"};
  for (int k = 0; k < 2; ++k) {
    t.beta_pow[k] = scalar_input(ctx, pow_in[k]);
    const Tensor& in = ctx.input(pow_in[k]);
    bytes.reads(in.raw_data(), in.bytes());
    if (!ctx.has_output(pow_out[k])) continue;
    Tensor& out = device_output(ctx, pow_out[k], 0, in.dtype(), in.shape());
    t.beta_pow_out[k] = out.raw_data();
    bytes.writes(out.raw_data(), out.bytes());
  }
}

using AdamKey = std::tuple<DataType, const void*, bool, uint64_t, uint64_t, uint64_t, bool>;

BatchedTask<AdamKey, launch::OptimizerTask> prepare_adam(KernelContext& ctx) {
  BatchedTask<AdamKey, launch::OptimizerTask> work;
  launch::OptimizerTask& t = work.task;
  t = update_task(ctx, {{"Moment1", "Moment1Out"}, {"Moment2", "Moment2Out"}}, work.bytes);
  const double beta1 = attr_or_host_tensor(ctx, "Beta1Tensor", "beta1", 0.9);
  const double beta2 = attr_or_host_tensor(ctx, "Beta2Tensor", "beta2", 0.999);
  const double epsilon = attr_or_host_tensor(ctx, "EpsilonTensor", "epsilon", 1e-8);
  if (ctx.has_input("SkipUpdate"))
    ctx.fail("SkipUpdate is not supported by the GPU kernel");
  const launch::Scalar lr = scalar_input(ctx, "LearningRate");
  // The powers advance after the update that read them (same stream).
  const bool advance = !ctx.bool_attr("use_global_beta_pow", false);
  work.key = {ctx.input("Param").dtype(), lr.data, lr.fp64, std::bit_cast<uint64_t>(beta1),
              std::bit_cast<uint64_t>(beta2), std::bit_cast<uint64_t>(epsilon), advance};
  set_beta_powers(ctx, t, work.bytes);
  return work;
}

void launch_adam(KernelContext& ctx, const AdamKey& key, const launch::OptimizerTask* tasks,
                 std::size_t count) {
  const launch::Scalar lr{std::get<1>(key), std::get<2>(key)};
  const auto beta1 = std::bit_cast<double>(std::get<3>(key));
  const auto beta2 = std::bit_cast<double>(std::get<4>(key));
  const auto epsilon = std::bit_cast<double>(std::get<5>(key));
  const bool advance = std::get<6>(key);
  dispatch_float(std::get<0>(key), ctx, "Param", [&]<typename T>() {
    if (count == 1)
      launch::adam<T>(*tasks, lr, beta1, beta2, epsilon, advance, stream_of(ctx));
    else
      launch::multi_adam<T>(tasks, count, lr, beta1, beta2, epsilon, advance, stream_of(ctx));
  });
}

// AdamW, one parameter per launch, with the CPU kernel's formula.
void adamw(KernelContext& ctx) {
  TaskBytes bytes;
  launch::OptimizerTask t =
      update_task(ctx, {{"Moment1", "Moment1Out"}, {"Moment2", "Moment2Out"}}, bytes);
  const double beta1 = attr_or_host_tensor(ctx, "Beta1Tensor", "beta1", 0.9);
  const double beta2 = attr_or_host_tensor(ctx, "Beta2Tensor", "beta2", 0.999);
  const double epsilon = attr_or_host_tensor(ctx, "EpsilonTensor", "epsilon", 1e-8);
  if (ctx.has_input("SkipUpdate")) ctx.fail("SkipUpdate is not supported by the GPU kernel");
  const launch::Scalar lr = scalar_input(ctx, "LearningRate");
  const bool advance = !ctx.bool_attr("use_global_beta_pow", false);
  const double coeff = ctx.bool_attr("with_decay") ? ctx.float_attr("coeff") : 0.0;
  const double lr_ratio = ctx.float_attr("lr_ratio");
  set_beta_powers(ctx, t, bytes);
  dispatch_float(ctx.input("Param").dtype(), ctx, "Param", [&]<typename T>() {
    launch::adamw<T>(t, lr, lr_ratio, coeff, beta1, beta2, epsilon, advance, stream_of(ctx));
  });
}

// RMSProp, one parameter per launch, with the CPU kernel's formula.
void rmsprop(KernelContext& ctx) {
  const Tensor param = device_input(ctx, "Param");
  const Tensor grad = device_input(ctx, "Grad");
  const Tensor mean_square = device_input(ctx, "MeanSquare");
  const Tensor moment = device_input(ctx, "Moment");
  check_like_param(ctx, param, grad, "Grad");
  check_like_param(ctx, param, mean_square, "MeanSquare");
  check_like_param(ctx, param, moment, "Moment");
  const bool centered = ctx.bool_attr("centered");
  if (centered && !ctx.has_input("MeanGrad")) ctx.fail("centered rmsprop needs input MeanGrad");
  const Tensor mean_grad = centered ? device_input(ctx, "MeanGrad") : Tensor();
  if (centered) check_like_param(ctx, param, mean_grad, "MeanGrad");
  const launch::Scalar lr = scalar_input(ctx, "LearningRate");
  dispatch_float(param.dtype(), ctx, "Param", [&]<typename T>() {
    launch::RmspropTask t;
    t.param = param.raw_data();
    t.grad = grad.raw_data();
    t.mean_square = mean_square.raw_data();
    t.moment = moment.raw_data();
    t.n = param.numel();
    t.param_out = output_like<T>(ctx, "ParamOut", param);
    t.mean_square_out = output_like<T>(ctx, "MeanSquareOut", mean_square);
    t.moment_out = output_like<T>(ctx, "MomentOut", moment);
    if (centered) {
      t.mean_grad = mean_grad.raw_data();
      if (ctx.has_output("MeanGradOut"))
        t.mean_grad_out = output_like<T>(ctx, "MeanGradOut", mean_grad);
    }
    launch::rmsprop<T>(t, lr, ctx.float_attr("decay"), ctx.float_attr("epsilon"),
                       ctx.float_attr("momentum"), centered, stream_of(ctx));
  });
}

}  // namespace

CTP_REGISTER_KERNEL(adamw, CUDA, adamw);
CTP_REGISTER_KERNEL(rmsprop, CUDA, rmsprop);
CTP_REGISTER_KERNEL(softmax_with_cross_entropy, CUDA, softmax_with_cross_entropy);
CTP_REGISTER_KERNEL(cross_entropy2, CUDA, cross_entropy2);
CTP_REGISTER_KERNEL(cross_entropy_grad2, CUDA, cross_entropy_grad2);
CTP_REGISTER_KERNEL(softmax_with_cross_entropy_grad, CUDA, softmax_with_cross_entropy_grad);
// A run of independent updates (one per parameter): one launch per element
// type, learning rate and attributes.
CTP_REGISTER_KERNEL(sgd, CUDA, (run_one<prepare_sgd, launch_sgd>));
CTP_REGISTER_BATCH_KERNEL(sgd, CUDA, (run_batch<prepare_sgd, launch_sgd>));
CTP_REGISTER_KERNEL(momentum, CUDA, (run_one<prepare_momentum, launch_momentum>));
CTP_REGISTER_BATCH_KERNEL(momentum, CUDA, (run_batch<prepare_momentum, launch_momentum>));
CTP_REGISTER_KERNEL(adam, CUDA, (run_one<prepare_adam, launch_adam>));
CTP_REGISTER_BATCH_KERNEL(adam, CUDA, (run_batch<prepare_adam, launch_adam>));

}  // namespace ctp::cuda
