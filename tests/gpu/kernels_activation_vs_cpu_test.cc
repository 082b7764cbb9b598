// The CUDA kernels of tanh, sigmoid, sqrt, square, gelu, clip, dropout and
// elementwise_div (forward and grad) against the CPU kernels, in FP32 and
// in FP16/BF16. The transcendental functions differ between the C library
// and CUDA by an ulp or two (and nvcc may fuse a multiply-add), so their
// tolerance is a few FP32 ulps; clip, square, dropout and division are
// exact.
#include "tests/gpu/kernels_vs_cpu_util.h"

namespace ctp {
namespace {

using gpu_testing::expect_same;
using gpu_testing::random_fp32;
using gpu_testing::random_half;

// Each activation and its grad on one program: Out and X@GRAD compared.
ProgramBuilder activations_program() {
  ProgramBuilder pb;
  for (const char* type : {"tanh", "sigmoid", "sqrt", "square", "gelu"}) {
    const std::string t = type;
    const std::string in = t == "sqrt" ? "pos" : "x";
    const bool reads_out = t == "tanh" || t == "sigmoid" || t == "sqrt";
    pb.op(t).in("X", in).out("Out", t + "_out");
    pb.op(t + "_grad")
        .in(reads_out ? "Out" : "X", reads_out ? t + "_out" : in)
        .in("Out@GRAD", "g")
        .out("X@GRAD", t + "_dx");
  }
  pb.op("gelu").in("X", "x").out("Out", "gelu_tanh_out").attr("approximate", true);
  pb.op("gelu_grad")
      .in("X", "x")
      .in("Out@GRAD", "g")
      .out("X@GRAD", "gelu_tanh_dx")
      .attr("approximate", true);
  return pb;
}

std::vector<std::string> activation_outputs() {
  std::vector<std::string> names;
  for (const char* t : {"tanh", "sigmoid", "sqrt", "square", "gelu", "gelu_tanh"}) {
    names.push_back(std::string(t) + "_out");
    names.push_back(std::string(t) + "_dx");
  }
  return names;
}

TEST(GpuActivationKernels, ActivationsAndGradsInFp32) {
  CTP_REQUIRE_GPUS(1);
  Tensor pos = random_fp32({6, 50}, 2);
  for (int64_t i = 0; i < pos.numel(); ++i)
    pos.data<float>()[i] = 0.1f + std::abs(pos.data<float>()[i]);
  expect_same(activations_program().build(),
              {{"x", random_fp32({6, 50}, 1)}, {"pos", pos}, {"g", random_fp32({6, 50}, 3)}},
              activation_outputs(), 4e-7, 1e-7);
}

TEST(GpuActivationKernels, ActivationsIn16Bits) {
  CTP_REQUIRE_GPUS(1);
  for (DataType dt : {DataType::FP16, DataType::BF16}) {
    SCOPED_TRACE(std::string(to_string(dt)));
    // Both compute in float and round once: an ulp of the 16-bit type apart
    // at most, where the float results straddle a rounding boundary.
    const double ulp = dt == DataType::FP16 ? 0x1p-10 : 0x1p-7;
    Tensor pos = random_half(dt, {6, 50}, 2, 0.1);
    for (int64_t i = 0; i < pos.numel(); ++i) pos.data<uint16_t>()[i] &= 0x7fff;  // |x|
    expect_same(
        activations_program().build(),
        {{"x", random_half(dt, {6, 50}, 1)}, {"pos", pos}, {"g", random_half(dt, {6, 50}, 3)}},
        activation_outputs(), ulp, ulp);
  }
}

TEST(GpuActivationKernels, ClipWithAttributesAndTensorBounds) {
  CTP_REQUIRE_GPUS(1);
  ProgramBuilder pb;
  pb.op("clip").in("X", "x").out("Out", "a").attr("min", -0.3f).attr("max", 0.6f);
  pb.op("clip_grad")
      .in("X", "x")
      .in("Out@GRAD", "g")
      .out("X@GRAD", "da")
      .attr("min", -0.3f)
      .attr("max", 0.6f);
  pb.op("clip")
      .in("X", "x")
      .in("Min", "lo")
      .in("Max", "hi")
      .out("Out", "b")
      .attr("min", -9.f)
      .attr("max", 9.f);
  pb.op("clip_grad")
      .in("X", "x")
      .in("Min", "lo")
      .in("Max", "hi")
      .in("Out@GRAD", "g")
      .out("X@GRAD", "db")
      .attr("min", -9.f)
      .attr("max", 9.f);
  Tensor lo(DataType::FP32, {1}), hi(DataType::FP32, {1});
  lo.data<float>()[0] = -0.5f;
  hi.data<float>()[0] = 0.25f;
  expect_same(
      pb.build(),
      {{"x", random_fp32({5, 40}, 4)}, {"g", random_fp32({5, 40}, 5)}, {"lo", lo}, {"hi", hi}},
      {"a", "da", "b", "db"}, 0, 0);
}

// One seed, one mask: the GPU draws what the CPU draws, in both modes, in
// FP32 and 16 bits, and the gradients pass through the same mask.
TEST(GpuActivationKernels, SeededDropoutMatchesTheCpuMask) {
  CTP_REQUIRE_GPUS(1);
  for (const char* mode : {"downgrade_in_infer", "upscale_in_train"}) {
    for (DataType dt : {DataType::FP32, DataType::FP16, DataType::BF16}) {
      SCOPED_TRACE(std::string(mode) + " " + std::string(to_string(dt)));
      ProgramBuilder pb;
      pb.op("dropout")
          .in("X", "x")
          .out("Out", "out")
          .out("Mask", "mask")
          .attr("dropout_prob", 0.35f)
          .attr("fix_seed", true)
          .attr("seed", 1234)
          .attr("dropout_implementation", std::string(mode));
      pb.op("dropout_grad")
          .in("Mask", "mask")
          .in("Out@GRAD", "g")
          .out("X@GRAD", "dx")
          .attr("dropout_prob", 0.35f)
          .attr("dropout_implementation", std::string(mode));
      pb.op("dropout")
          .in("X", "x")
          .out("Out", "test_out")
          .attr("dropout_prob", 0.35f)
          .attr("is_test", true)
          .attr("dropout_implementation", std::string(mode));
      const bool half = dt != DataType::FP32;
      expect_same(pb.build(),
                  {{"x", half ? random_half(dt, {7, 300}, 6) : random_fp32({7, 300}, 6)},
                   {"g", half ? random_half(dt, {7, 300}, 7) : random_fp32({7, 300}, 7)}},
                  {"out", "mask", "dx", "test_out"}, 0, 0);
    }
  }
}

TEST(GpuActivationKernels, ElementwiseDivWithAxisAndGrads) {
  CTP_REQUIRE_GPUS(1);
  struct Case {
    std::vector<int64_t> x, y;
    int axis;
  };
  for (const Case& c : std::vector<Case>{{{2, 3, 4}, {3}, 1},
                                         {{2, 3, 4}, {2, 3, 4}, -1},
                                         {{4}, {2, 3, 4}, -1},
                                         {{300, 70}, {70}, -1}}) {
    SCOPED_TRACE(::testing::PrintToString(c.x) + " / " + ::testing::PrintToString(c.y));
    std::vector<int64_t> out_shape = c.x.size() >= c.y.size() ? c.x : c.y;
    ProgramBuilder pb;
    pb.op("elementwise_div").in("X", "x").in("Y", "y").out("Out", "out").attr("axis", c.axis);
    pb.op("elementwise_div_grad")
        .in("X", "x")
        .in("Y", "y")
        .in("Out", "out")
        .in("Out@GRAD", "g")
        .out("X@GRAD", "dx")
        .out("Y@GRAD", "dy")
        .attr("axis", c.axis);
    // The quotients and per-element terms are exact (IEEE division on both);
    // the broadcast sums add in one order on both: bit for bit.
    expect_same(pb.build(),
                {{"x", random_fp32(c.x, 8)},
                 {"y", random_fp32(c.y, 9, 0.3)},
                 {"g", random_fp32(out_shape, 10)}},
                {"out", "dx", "dy"}, 0, 0);
  }
}

}  // namespace
}  // namespace ctp
