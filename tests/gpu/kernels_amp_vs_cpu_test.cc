// The CUDA kernels of check_finite_and_unscale and update_loss_scaling
// against their CPU kernels (tests/gpu/kernels_vs_cpu_util.h), over several
// steps of one program, as a training loop runs them: the unscaled
// gradients (the reciprocal rounded to the gradient's type, then one
// rounded product, on both), the flag, the zeroed gradients of an
// overflowing step, and the scale and step counters, all exactly.
#include <gtest/gtest.h>

#include <limits>

#include "program_ir/builder.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/gpu/kernels_vs_cpu_util.h"

namespace ctp {
namespace {

using gpu_testing::expect_same;
using gpu_testing::random_fp32;

// g0 (FP32) and g1 (FP64) unscaled in place, then the dynamic update:
// up x2 after 2 finite steps, down x0.5 after 2 overflowing ones.
Program loss_scaling_program() {
  ProgramBuilder pb;
  const std::vector<std::string> grads = {"g0", "g1"};
  pb.op("check_finite_and_unscale").in("X", grads).in("Scale", "scale")
      .out("Out", grads).out("FoundInfinite", "found");
  pb.op("update_loss_scaling").in("X", grads).in("FoundInfinite", "found")
      .in("PrevLossScaling", "scale").in("InGoodSteps", "good").in("InBadSteps", "bad")
      .out("Out", grads).out("LossScaling", "scale")
      .out("OutGoodSteps", "good").out("OutBadSteps", "bad")
      .attr("incr_every_n_steps", int32_t{2}).attr("decr_every_n_nan_or_inf", int32_t{2})
      .attr("incr_ratio", 2.0f).attr("decr_ratio", 0.5f);
  return pb.build();
}

std::map<std::string, Tensor> state(Tensor g0, float scale) {
  Tensor s(DataType::FP32, {1});
  s.data<float>()[0] = scale;
  Tensor g1(DataType::FP64, {5});
  for (int i = 0; i < 5; ++i) g1.data<double>()[i] = 1000.0 * (i - 2) + 0.3;
  return {{"g0", std::move(g0)}, {"g1", std::move(g1)}, {"scale", s},
          {"good", Tensor(DataType::INT32, {1})}, {"bad", Tensor(DataType::INT32, {1})}};
}

TEST(GpuKernels, LossScalingExactlyAsOnTheCpu) {
  CTP_REQUIRE_GPUS(1);
  const Program program = loss_scaling_program();
  const std::vector<std::string> outputs = {"g0", "g1", "found", "scale", "good", "bad"};
  // Finite: 3 steps unscale three times (by 3, 3, then 6) and the scale grows once.
  expect_same(program, state(random_fp32({3000}, 40), 3.0f), outputs, 0, 0, 3);
  // An Inf and a NaN: every step overflows; the scale halves after the second.
  Tensor bad = random_fp32({3000}, 41);
  bad.data<float>()[17] = std::numeric_limits<float>::infinity();
  bad.data<float>()[2999] = std::numeric_limits<float>::quiet_NaN();
  expect_same(program, state(bad, 1024.0f), outputs, 0, 0, 1);
  expect_same(program, state(bad, 1024.0f), outputs, 0, 0, 2);
}

}  // namespace
}  // namespace ctp
