// CUDA kernels of check_finite_and_unscale and update_loss_scaling under the
// rules of ops/schema/meta_amp.h; the launchers are
// ops/cuda/amp_device_kernels.h. FoundInfinite and the loss-scaling state
// never leave the GPU, so a step needs no copy to the host for them.
#include <string>
#include <vector>

#include "ops/common/kernel_util.h"
#include "ops/cuda/amp_device_kernels.h"
#include "ops/cuda/cuda_kernel_util.h"
#include "ops/schema/meta_amp.h"

namespace ctp::cuda {
namespace {

launch::Stream stream_of(KernelContext& ctx) { return device_context(ctx).compute_stream(); }

// X's tensors on the GPU, as handles (an Out may be its X).
std::vector<Tensor> device_xs(KernelContext& ctx) {
  std::vector<Tensor> xs;
  for (std::size_t i = 0; i < ctx.input_count("X"); ++i) xs.push_back(device_input(ctx, "X", i));
  return xs;
}

std::vector<TensorMeta> metas_of(const std::vector<Tensor>& xs) {
  std::vector<TensorMeta> metas;
  for (const Tensor& x : xs) metas.push_back(meta_of(x));
  return metas;
}

void check_finite_and_unscale(KernelContext& ctx) {
  const std::vector<Tensor> xs = device_xs(ctx);
  const Tensor scale = device_input(ctx, "Scale");
  meta::check_finite_and_unscale(ctx, metas_of(xs), meta_of(scale));
  const launch::Scalar scale_value{scale.raw_data(), scale.dtype() == DataType::FP64};
  Tensor& found = device_output(ctx, "FoundInfinite", 0, DataType::BOOL, {1});
  bool* found_flag = found.data<bool>();
  launch::clear_flag(found_flag, stream_of(ctx));
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const Tensor& x = xs[i];
    dispatch_float(x.dtype(), ctx, "X", [&]<typename T>() {
      Tensor& out = device_output(ctx, "Out", i, x.dtype(), x.shape());
      launch::unscale_and_check<T>(x.data<T>(), out.data<T>(), x.numel(), scale_value,
                                   found_flag, stream_of(ctx));
    });
  }
}

bool stop_update(KernelContext& ctx, const meta::LossScalingAttrs& attrs) {
  if (!ctx.has_input("StopUpdate")) return attrs.stop_update;
  const Tensor& t = ctx.input("StopUpdate");
  const Tensor host = t.device().kind == DeviceKind::CPU ? t : device_context(ctx).to_host(t);
  return scalar_value(host) != 0.0;
}

void update_loss_scaling(KernelContext& ctx) {
  const std::vector<Tensor> xs = device_xs(ctx);
  const Tensor found = device_input(ctx, "FoundInfinite");
  const Tensor prev = device_input(ctx, "PrevLossScaling");
  const Tensor good_in = device_input(ctx, "InGoodSteps");
  const Tensor bad_in = device_input(ctx, "InBadSteps");
  meta::update_loss_scaling(ctx, metas_of(xs), meta_of(found), meta_of(prev), meta_of(good_in),
                            meta_of(bad_in));
  const meta::LossScalingAttrs attrs = meta::loss_scaling_attrs(ctx);
  const bool stop = stop_update(ctx, attrs);
  const bool* found_flag = found.data<bool>();
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const Tensor& x = xs[i];
    dispatch_float(x.dtype(), ctx, "X", [&]<typename T>() {
      Tensor& out = device_output(ctx, "Out", i, x.dtype(), x.shape());
      launch::zero_if_found<T>(x.data<T>(), out.data<T>(), x.numel(), found_flag,
                               stream_of(ctx));
    });
  }
  const LossScalingRule rule{attrs.incr_every_n_steps, attrs.decr_every_n_nan_or_inf,
                             attrs.incr_ratio, attrs.decr_ratio};
  dispatch_float(prev.dtype(), ctx, "PrevLossScaling", [&]<typename T>() {
    T* scale_out = device_output(ctx, "LossScaling", 0, prev.dtype(), prev.shape()).data<T>();
    int32_t* good_out =
        device_output(ctx, "OutGoodSteps", 0, DataType::INT32, good_in.shape()).data<int32_t>();
    int32_t* bad_out =
        device_output(ctx, "OutBadSteps", 0, DataType::INT32, bad_in.shape()).data<int32_t>();
    launch::update_loss_scaling_state<T>(found_flag, prev.data<T>(), good_in.data<int32_t>(),
                                         bad_in.data<int32_t>(), rule, stop, scale_out, good_out,
                                         bad_out, stream_of(ctx));
  });
}

}  // namespace

CTP_REGISTER_KERNEL(check_finite_and_unscale, CUDA, check_finite_and_unscale);
CTP_REGISTER_KERNEL(update_loss_scaling, CUDA, update_loss_scaling);

}  // namespace ctp::cuda
