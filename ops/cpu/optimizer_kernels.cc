// Optimizer updates as Paddle computes them: sgd, momentum, adam, adamw, lamb
// and rmsprop. Each
// writes its outputs in place when they are the same vars as the inputs (the
// usual case: ParamOut is Param).
#include <cmath>
#include <vector>

#include "ops/cpu/cpu_kernel_util.h"
#include "ops/schema/meta_optimizer.h"

namespace ctp::cpu {
namespace {

void check_like_param(KernelContext& ctx, const Tensor& param, const Tensor& other,
                      const char* slot) {
  meta::require_like_param(ctx, slot, meta_of(param), meta_of(other));
}

// The output tensor, sized like `like`; in place when it is the input itself.
template <typename T>
T* output_like(KernelContext& ctx, const char* slot, const Tensor& like) {
  Tensor& out = ctx.output(slot);
  out.resize(like.dtype(), like.shape());
  return out.data<T>();
}

void sgd(KernelContext& ctx) {
  const Tensor param = ctx.input("Param");
  const Tensor& grad = ctx.input("Grad");
  check_like_param(ctx, param, grad, "Grad");
  const double lr = scalar_value(ctx.input("LearningRate"));
  dispatch_float(param.dtype(), ctx, "Param", [&]<typename T>() {
    const T* p = param.data<T>();
    const T* g = grad.data<T>();
    T* out = output_like<T>(ctx, "ParamOut", param);
    const T rate = static_cast<T>(lr);
    for (int64_t i = 0, n = param.numel(); i < n; ++i) out[i] = p[i] - rate * g[i];
  });
}

void momentum(KernelContext& ctx) {
  const Tensor param = ctx.input("Param");
  const Tensor& grad = ctx.input("Grad");
  const Tensor velocity = ctx.input("Velocity");
  check_like_param(ctx, param, grad, "Grad");
  check_like_param(ctx, param, velocity, "Velocity");
  const double lr = scalar_value(ctx.input("LearningRate"));
  const meta::MomentumAttrs a = meta::momentum_attrs(ctx);
  const double mu = a.mu, decay = a.l2_decay, rescale = a.rescale_grad;
  const bool nesterov = a.use_nesterov;
  dispatch_float(param.dtype(), ctx, "Param", [&]<typename T>() {
    const T* p = param.data<T>();
    const T* g = grad.data<T>();
    const T* v = velocity.data<T>();
    T* p_out = output_like<T>(ctx, "ParamOut", param);
    T* v_out = output_like<T>(ctx, "VelocityOut", velocity);
    const T rate = static_cast<T>(lr), m = static_cast<T>(mu);
    const T l2 = static_cast<T>(decay), rs = static_cast<T>(rescale);
    for (int64_t i = 0, n = param.numel(); i < n; ++i) {
      const T gi = g[i] * rs + l2 * p[i];
      const T vi = v[i] * m + gi;
      v_out[i] = vi;
      p_out[i] = nesterov ? p[i] - (gi + vi * m) * rate : p[i] - rate * vi;
    }
  });
}

double attr_or_tensor(KernelContext& ctx, const char* tensor_slot, const char* attr,
                      double fallback) {
  return ctx.has_input(tensor_slot) ? scalar_value(ctx.input(tensor_slot))
                                    : ctx.float_attr(attr, fallback);
}

// What adam and lamb read: Param, Grad and the moments (checked to be
// alike) and the beta powers.
struct AdaptiveInputs {
  Tensor param, grad, m1, m2, beta1_pow, beta2_pow;
};

AdaptiveInputs adaptive_inputs(KernelContext& ctx) {
  // Handles, not references: the outputs are usually these vars themselves.
  AdaptiveInputs in{ctx.input("Param"),   ctx.input("Grad"),     ctx.input("Moment1"),
                    ctx.input("Moment2"), ctx.input("Beta1Pow"), ctx.input("Beta2Pow")};
  check_like_param(ctx, in.param, in.grad, "Grad");
  check_like_param(ctx, in.param, in.m1, "Moment1");
  check_like_param(ctx, in.param, in.m2, "Moment2");
  return in;
}

// Writes a one-element tensor of `like`'s dtype and shape.
void write_scalar(KernelContext& ctx, const char* slot, const Tensor& like, double value) {
  Tensor& out = ctx.output(slot);
  out.resize(like.dtype(), like.shape());
  fill(out, value);
}

// Paddle's CPU adam: with the beta powers of the steps so far,
//   lr_t = lr * sqrt(1 - beta2_pow) / (1 - beta1_pow)
//   m1 = beta1 m1 + (1 - beta1) g;  m2 = beta2 m2 + (1 - beta2) g^2
//   p -= lr_t * m1 / (sqrt(m2) + epsilon * sqrt(1 - beta2_pow))
// and then the powers advance by one factor of beta each. adamw first decays
// the parameter, p *= 1 - lr * decay (decay = lr_ratio * coeff), and runs
// the same step with lr * lr_ratio (Paddle's AdamW functor).
void adam_step(KernelContext& ctx, double lr_ratio, double decay) {
  const AdaptiveInputs in = adaptive_inputs(ctx);
  const Tensor &param = in.param, &grad = in.grad, &m1 = in.m1, &m2 = in.m2;
  const Tensor &beta1_pow_in = in.beta1_pow, &beta2_pow_in = in.beta2_pow;
  const double beta1 = attr_or_tensor(ctx, "Beta1Tensor", "beta1", 0.9);
  const double beta2 = attr_or_tensor(ctx, "Beta2Tensor", "beta2", 0.999);
  const double epsilon = attr_or_tensor(ctx, "EpsilonTensor", "epsilon", 1e-8);
  const double beta1_pow = scalar_value(beta1_pow_in);
  const double beta2_pow = scalar_value(beta2_pow_in);
  const double lr = scalar_value(ctx.input("LearningRate")) * lr_ratio;
  const bool skip = ctx.has_input("SkipUpdate") && scalar_value(ctx.input("SkipUpdate")) != 0.0;
  const bool global_pow = ctx.bool_attr("use_global_beta_pow", false);
  dispatch_float(param.dtype(), ctx, "Param", [&]<typename T>() {
    const T* p = param.data<T>();
    const T* g = grad.data<T>();
    const T* a = m1.data<T>();
    const T* b = m2.data<T>();
    T* p_out = output_like<T>(ctx, "ParamOut", param);
    T* a_out = output_like<T>(ctx, "Moment1Out", m1);
    T* b_out = output_like<T>(ctx, "Moment2Out", m2);
    const int64_t n = param.numel();
    if (skip) {  // outputs are the inputs unchanged
      for (int64_t i = 0; i < n; ++i) {
        p_out[i] = p[i];
        a_out[i] = a[i];
        b_out[i] = b[i];
      }
    } else {
      const T b1 = static_cast<T>(beta1), b2 = static_cast<T>(beta2);
      const T lr_t = static_cast<T>(lr * std::sqrt(1.0 - beta2_pow) / (1.0 - beta1_pow));
      const T eps_t = static_cast<T>(epsilon * std::sqrt(1.0 - beta2_pow));
      const T keep = static_cast<T>(1.0 - lr * decay);
      for (int64_t i = 0; i < n; ++i) {
        const T pi = decay != 0.0 ? p[i] * keep : p[i];
        const T ai = b1 * a[i] + (T(1) - b1) * g[i];
        const T bi = b2 * b[i] + (T(1) - b2) * g[i] * g[i];
        a_out[i] = ai;
        b_out[i] = bi;
        p_out[i] = pi - lr_t * (ai / (std::sqrt(bi) + eps_t));
      }
    }
  });
  const bool advance = !skip && !global_pow;
  if (ctx.has_output("Beta1PowOut"))
    write_scalar(ctx, "Beta1PowOut", beta1_pow_in, advance ? beta1_pow * beta1 : beta1_pow);
  if (ctx.has_output("Beta2PowOut"))
    write_scalar(ctx, "Beta2PowOut", beta2_pow_in, advance ? beta2_pow * beta2 : beta2_pow);
}

void adam(KernelContext& ctx) { adam_step(ctx, 1.0, 0.0); }

void adamw(KernelContext& ctx) {
  const double coeff = ctx.bool_attr("with_decay") ? ctx.float_attr("coeff") : 0.0;
  adam_step(ctx, ctx.float_attr("lr_ratio"), coeff);
}

// Paddle's rmsprop (epsilon inside the root):
//   ms = decay ms + (1 - decay) g^2
//   centered: mg = decay mg + (1 - decay) g;  mom = momentum mom + lr g / sqrt(ms - mg^2 + eps)
//   else:                                     mom = momentum mom + lr g / sqrt(ms + eps)
//   p -= mom
void rmsprop(KernelContext& ctx) {
  const Tensor param = ctx.input("Param");
  const Tensor& grad = ctx.input("Grad");
  const Tensor mean_square = ctx.input("MeanSquare");
  const Tensor moment = ctx.input("Moment");
  check_like_param(ctx, param, grad, "Grad");
  check_like_param(ctx, param, mean_square, "MeanSquare");
  check_like_param(ctx, param, moment, "Moment");
  const bool centered = ctx.bool_attr("centered");
  if (centered && !ctx.has_input("MeanGrad"))
    ctx.fail("centered rmsprop needs input MeanGrad");
  const Tensor mean_grad = centered ? ctx.input("MeanGrad") : Tensor();
  if (centered) check_like_param(ctx, param, mean_grad, "MeanGrad");
  const double lr = scalar_value(ctx.input("LearningRate"));
  const double decay = ctx.float_attr("decay"), eps = ctx.float_attr("epsilon");
  const double momentum = ctx.float_attr("momentum");
  dispatch_float(param.dtype(), ctx, "Param", [&]<typename T>() {
    const T* p = param.data<T>();
    const T* g = grad.data<T>();
    const T* ms = mean_square.data<T>();
    const T* mom = moment.data<T>();
    const T* mg = centered ? mean_grad.data<T>() : nullptr;
    T* p_out = output_like<T>(ctx, "ParamOut", param);
    T* ms_out = output_like<T>(ctx, "MeanSquareOut", mean_square);
    T* mom_out = output_like<T>(ctx, "MomentOut", moment);
    T* mg_out = centered && ctx.has_output("MeanGradOut")
                    ? output_like<T>(ctx, "MeanGradOut", mean_grad)
                    : nullptr;
    const T rho = static_cast<T>(decay), e = static_cast<T>(eps), m = static_cast<T>(momentum);
    const T rate = static_cast<T>(lr);
    for (int64_t i = 0, n = param.numel(); i < n; ++i) {
      const T msi = rho * ms[i] + (T(1) - rho) * g[i] * g[i];
      T denominator = msi + e;
      if (centered) {
        const T mgi = rho * mg[i] + (T(1) - rho) * g[i];
        if (mg_out) mg_out[i] = mgi;
        denominator = msi - mgi * mgi + e;
      }
      const T momi = m * mom[i] + rate * g[i] / std::sqrt(denominator);
      ms_out[i] = msi;
      mom_out[i] = momi;
      p_out[i] = p[i] - momi;
    }
  });
}

// Paddle's lamb: Adam's bias-corrected direction plus weight decay,
//   r = (m1 / (1 - beta1_pow)) / (sqrt(m2 / (1 - beta2_pow)) + epsilon) + weight_decay * p
// applied with the layer's trust ratio ||p|| / ||r|| (1 when either norm is
// 0, and when weight_decay is 0 unless always_adapt):  p -= lr * ratio * r.
void lamb(KernelContext& ctx) {
  const AdaptiveInputs in = adaptive_inputs(ctx);
  const Tensor &param = in.param, &grad = in.grad, &m1 = in.m1, &m2 = in.m2;
  const Tensor &beta1_pow_in = in.beta1_pow, &beta2_pow_in = in.beta2_pow;
  const double beta1 = ctx.float_attr("beta1", 0.9), beta2 = ctx.float_attr("beta2", 0.999);
  const double epsilon = ctx.float_attr("epsilon", 1e-6);
  const double weight_decay = ctx.float_attr("weight_decay", 0.01);
  const bool adapt = weight_decay > 0 || ctx.bool_attr("always_adapt", false);
  const double beta1_pow = scalar_value(beta1_pow_in), beta2_pow = scalar_value(beta2_pow_in);
  const double lr = scalar_value(ctx.input("LearningRate"));
  const bool skip = ctx.has_input("SkipUpdate") && scalar_value(ctx.input("SkipUpdate")) != 0.0;
  dispatch_float(param.dtype(), ctx, "Param", [&]<typename T>() {
    const T* p = param.data<T>();
    const T* g = grad.data<T>();
    const T* a = m1.data<T>();
    const T* b = m2.data<T>();
    const int64_t n = param.numel();
    std::vector<T> direction(static_cast<std::size_t>(n));
    std::vector<T> a_new(direction.size()), b_new(direction.size());
    const T b1 = static_cast<T>(beta1), b2 = static_cast<T>(beta2);
    double p_norm = 0, r_norm = 0;
    for (int64_t i = 0; i < n; ++i) {
      a_new[i] = b1 * a[i] + (T(1) - b1) * g[i];
      b_new[i] = b2 * b[i] + (T(1) - b2) * g[i] * g[i];
      const T m_hat = a_new[i] / static_cast<T>(1.0 - beta1_pow);
      const T v_hat = b_new[i] / static_cast<T>(1.0 - beta2_pow);
      direction[i] = m_hat / (std::sqrt(v_hat) + static_cast<T>(epsilon)) +
                     static_cast<T>(weight_decay) * p[i];
      p_norm += static_cast<double>(p[i]) * p[i];
      r_norm += static_cast<double>(direction[i]) * direction[i];
    }
    p_norm = std::sqrt(p_norm);
    r_norm = std::sqrt(r_norm);
    const double ratio = adapt && p_norm > 0 && r_norm > 0 ? p_norm / r_norm : 1.0;
    const T step = static_cast<T>(lr * ratio);
    T* p_out = output_like<T>(ctx, "ParamOut", param);
    T* a_out = output_like<T>(ctx, "Moment1Out", m1);
    T* b_out = output_like<T>(ctx, "Moment2Out", m2);
    for (int64_t i = 0; i < n; ++i) {
      a_out[i] = skip ? a[i] : a_new[i];
      b_out[i] = skip ? b[i] : b_new[i];
      p_out[i] = skip ? p[i] : p[i] - step * direction[i];
    }
  });
  if (ctx.has_output("Beta1PowOut"))
    write_scalar(ctx, "Beta1PowOut", beta1_pow_in, skip ? beta1_pow : beta1_pow * beta1);
  if (ctx.has_output("Beta2PowOut"))
    write_scalar(ctx, "Beta2PowOut", beta2_pow_in, skip ? beta2_pow : beta2_pow * beta2);
}

}  // namespace

CTP_REGISTER_KERNEL(lamb, CPU, lamb);
CTP_REGISTER_KERNEL(sgd, CPU, sgd);
CTP_REGISTER_KERNEL(momentum, CPU, momentum);
CTP_REGISTER_KERNEL(adam, CPU, adam);
CTP_REGISTER_KERNEL(adamw, CPU, adamw);
CTP_REGISTER_KERNEL(rmsprop, CPU, rmsprop);

}  // namespace ctp::cpu
