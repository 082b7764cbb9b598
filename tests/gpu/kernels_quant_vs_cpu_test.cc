// The CUDA kernels of the simulated-quantization ops against their CPU
// kernels (tests/gpu/kernels_vs_cpu_util.h). Both compute the formulas of
// ops/common/quant_math.h with the same roundings (products and a division
// rounded once each, no fused multiply-adds between them), so the levels
// and dequantized values agree exactly, halves and clamps included.
#include <gtest/gtest.h>

#include <cmath>

#include "program_ir/builder.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/gpu/kernels_vs_cpu_util.h"

namespace ctp {
namespace {

using gpu_testing::expect_same;
using gpu_testing::random_fp32;

Tensor one_value(DataType dtype, double v) {
  Tensor t(dtype, {1});
  if (dtype == DataType::FP32) t.data<float>()[0] = static_cast<float>(v);
  else t.data<double>()[0] = v;
  return t;
}

// Values on a grid of eighths times 1.5, so many land on exact halves of a
// level (scale 1.5 at 4 bits: a level is x * 7 / 1.5), some beyond the scale.
Tensor gridded(DataType dtype, std::vector<int64_t> shape, uint64_t seed) {
  const Tensor r = random_fp32(shape, seed);
  Tensor t(dtype, shape);
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double v = std::round(r.data<float>()[i] * 24.0) / 8.0;  // in [-3, 3]
    if (dtype == DataType::FP32) t.data<float>()[i] = static_cast<float>(v);
    else t.data<double>()[i] = v;
  }
  return t;
}

TEST(GpuKernels, FakeQuantizeOpsExactlyAsOnTheCpu) {
  CTP_REQUIRE_GPUS(1);
  for (DataType dtype : {DataType::FP32, DataType::FP64}) {
    for (int32_t round_type : {0, 1}) {
      ProgramBuilder pb;
      pb.op("fake_quantize_moving_average_abs_max").in("X", "x").in("InScale", "scale")
          .out("Out", "q").out("OutScale", "scale_out").attr("is_test", true)
          .attr("bit_length", int32_t{4}).attr("round_type", round_type);
      pb.op("fake_dequantize_max_abs").in("X", "q").in("Scale", "scale").out("Out", "dq")
          .attr("max_range", 7.0f);
      pb.op("fake_quantize_dequantize_moving_average_abs_max").in("X", "x")
          .in("InScale", "scale").out("Out", "qdq").out("OutScale", "scale")
          .attr("is_test", true).attr("round_type", round_type);
      pb.op("straight_through_estimator_grad").in("Out@GRAD", "x").out("X@GRAD", "dx");
      const Program program = pb.build();
      const std::vector<std::string> outputs = {"q", "scale_out", "dq", "qdq", "dx"};
      expect_same(program, {{"x", gridded(dtype, {37, 53}, 70)}, {"scale", one_value(dtype, 1.5)}},
                  outputs, 0, 0);
      // A zero scale takes Paddle's guard on both devices.
      expect_same(program, {{"x", gridded(dtype, {9, 8}, 71)}, {"scale", one_value(dtype, 0.0)}},
                  outputs, 0, 0);
    }
  }
}

}  // namespace
}  // namespace ctp
