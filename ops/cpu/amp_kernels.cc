// check_finite_and_unscale and update_loss_scaling on the CPU, under the
// rules of ops/schema/meta_amp.h and the update of
// ops/common/loss_scaling_rule.h. X may be Out (Paddle's programs update the
// gradients in place).
#include <cmath>
#include <vector>

#include "ops/common/loss_scaling_rule.h"
#include "ops/cpu/cpu_kernel_util.h"
#include "ops/schema/meta_amp.h"

namespace ctp::cpu {
namespace {

std::vector<TensorMeta> x_metas(KernelContext& ctx) {
  std::vector<TensorMeta> xs;
  for (std::size_t i = 0; i < ctx.input_count("X"); ++i) xs.push_back(meta_of(ctx.input("X", i)));
  return xs;
}

// Out i = X i * (1 / scale), the reciprocal rounded to X's type first (as
// the CUDA kernel computes it); FoundInfinite when any element is Inf or NaN.
void check_finite_and_unscale(KernelContext& ctx) {
  const Tensor& scale = ctx.input("Scale");
  meta::check_finite_and_unscale(ctx, x_metas(ctx), meta_of(scale));
  const double scale_value = scalar_value(scale);
  bool found = false;
  for (std::size_t i = 0; i < ctx.input_count("X"); ++i) {
    const Tensor x = ctx.input("X", i);  // a handle: Out may be X
    Tensor& out = ctx.output("Out", i);
    dispatch_float(x.dtype(), ctx, "X", [&]<typename T>() {
      const T inverse = T(1) / static_cast<T>(scale_value);
      out.resize(x.dtype(), x.shape());
      const T* xp = x.data<T>();
      T* op = out.data<T>();
      for (int64_t j = 0; j < x.numel(); ++j) {
        if (!std::isfinite(xp[j])) found = true;
        op[j] = xp[j] * inverse;
      }
    });
  }
  Tensor& found_out = ctx.output("FoundInfinite");
  found_out.resize(DataType::BOOL, {1});
  found_out.data<bool>()[0] = found;
}

LossScalingRule rule_of(const meta::LossScalingAttrs& a) {
  return {a.incr_every_n_steps, a.decr_every_n_nan_or_inf, a.incr_ratio, a.decr_ratio};
}

void update_loss_scaling(KernelContext& ctx) {
  const Tensor& found_in = ctx.input("FoundInfinite");
  const Tensor& prev = ctx.input("PrevLossScaling");
  const Tensor& good_in = ctx.input("InGoodSteps");
  const Tensor& bad_in = ctx.input("InBadSteps");
  meta::update_loss_scaling(ctx, x_metas(ctx), meta_of(found_in), meta_of(prev),
                            meta_of(good_in), meta_of(bad_in));
  const meta::LossScalingAttrs attrs = meta::loss_scaling_attrs(ctx);
  const bool found = found_in.data<bool>()[0];
  for (std::size_t i = 0; i < ctx.input_count("X"); ++i) {
    const Tensor x = ctx.input("X", i);
    Tensor& out = ctx.output("Out", i);
    if (found) {
      out.resize(x.dtype(), x.shape());
      fill(out, 0.0);
    } else {
      copy_tensor(x, out);
    }
  }
  bool stop = attrs.stop_update;
  if (ctx.has_input("StopUpdate")) stop = scalar_value(ctx.input("StopUpdate")) != 0.0;
  LossScalingState state{scalar_value(prev), good_in.data<int32_t>()[0],
                         bad_in.data<int32_t>()[0]};
  dispatch_float(prev.dtype(), ctx, "PrevLossScaling", [&]<typename T>() {
    if (!stop) state = next_loss_scaling<T>(rule_of(attrs), found, state);
    const std::vector<int64_t> shape = prev.shape();
    Tensor& scale_out = ctx.output("LossScaling");
    scale_out.resize(prev.dtype(), shape);
    scale_out.data<T>()[0] = static_cast<T>(state.scale);
  });
  Tensor& good_out = ctx.output("OutGoodSteps");
  good_out.resize(DataType::INT32, std::vector<int64_t>(good_in.shape()));
  good_out.data<int32_t>()[0] = state.good_steps;
  Tensor& bad_out = ctx.output("OutBadSteps");
  bad_out.resize(DataType::INT32, std::vector<int64_t>(bad_in.shape()));
  bad_out.data<int32_t>()[0] = state.bad_steps;
}

}  // namespace

CTP_REGISTER_KERNEL(check_finite_and_unscale, CPU, check_finite_and_unscale);
CTP_REGISTER_KERNEL(update_loss_scaling, CPU, update_loss_scaling);

}  // namespace ctp::cpu
