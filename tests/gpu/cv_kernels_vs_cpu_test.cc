// The CUDA kernels of conv2d, depthwise_conv2d (cuDNN) and pool2d (own
// kernels) and their grads against the CPU kernels (kernels_vs_cpu_util.h;
// batch_norm's: batch_norm_vs_cpu_test.cc).
// Tolerances, |gpu - cpu| <= atol + rtol * |cpu|: cuDNN convolutions sum in
// their own order, FP32 rtol 1e-4 (atol 1e-5), FP16/BF16 rtol 2e-2 (atol 1e-2,
// one or two 16-bit ulps); pool2d adds in the CPU's order, FP32 rtol 1e-6
// (atol 1e-7), 16-bit rtol 1e-2 (atol 1e-3).
#include <gtest/gtest.h>

#include "program_ir/builder.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/gpu/kernels_vs_cpu_util.h"

namespace ctp {
namespace {

using namespace gpu_testing;  // random_fp32, random_half, expect_same (kernels_vs_cpu_util.h)
using Ints = std::vector<int32_t>;

// conv2d (or depthwise_conv2d) and its grad on x, w and the output's gradient g.
Program conv_program(const std::string& type, const std::vector<NamedAttribute>& attrs) {
  ProgramBuilder pb;
  OpBuilder fwd = pb.op(type).in("Input", "x").in("Filter", "w").out("Output", "y");
  OpBuilder grad = pb.op(type + "_grad").in("Input", "x").in("Filter", "w").in("Output@GRAD", "g")
                   .out("Input@GRAD", "dx").out("Filter@GRAD", "dw");
  for (const NamedAttribute& a : attrs) {
    fwd.attr(a.name, a.value);
    grad.attr(a.name, a.value);
  }
  return pb.build();
}

// The output shape the CPU kernel gives, for the gradient input.
Shape conv_output_shape(const std::string& type, const Tensor& x, const Tensor& w,
                        const std::vector<NamedAttribute>& attrs) {
  Scope s;
  s.var("x") = x;
  s.var("w") = w;
  test::run_op(s, test::make_op(type, {{"Input", {"x"}}, {"Filter", {"w"}}},
                                {{"Output", {"y"}}}, attrs));
  return s.get("y").shape();
}

void expect_conv_same(const std::string& type, Shape x_shape, Shape w_shape,
                      std::vector<NamedAttribute> attrs, uint64_t seed) {
  const Tensor x = random_fp32(std::move(x_shape), seed);
  const Tensor w = random_fp32(std::move(w_shape), seed + 1);
  const Tensor g = random_fp32(conv_output_shape(type, x, w, attrs), seed + 2);
  expect_same(conv_program(type, attrs), {{"x", x}, {"w", w}, {"g", g}}, {"y", "dx", "dw"},
              1e-4, 1e-5);
}

TEST(GpuCvKernels, Conv2dAndGradOnCudnn) {
  CTP_REQUIRE_GPUS(1);
  expect_conv_same("conv2d", {2, 4, 7, 6}, {6, 2, 3, 3},
                   {{"groups", Attribute(int32_t{2})}, {"strides", Attribute(Ints{2, 1})},
                    {"paddings", Attribute(Ints{1, 1})}, {"dilations", Attribute(Ints{1, 2})}},
                   90);
  // Asymmetric paddings go through a zero-padded copy of the input.
  expect_conv_same("conv2d", {1, 3, 6, 5}, {4, 3, 3, 2},
                   {{"paddings", Attribute(Ints{1, 0, 2, 1})}}, 93);
  expect_conv_same("conv2d", {2, 2, 5, 5}, {3, 2, 2, 2},
                   {{"strides", Attribute(Ints{2, 2})}, {"padding_algorithm", Attribute("SAME")}},
                   96);
  expect_conv_same("depthwise_conv2d", {2, 3, 6, 6}, {6, 1, 3, 3},
                   {{"groups", Attribute(int32_t{3})}, {"paddings", Attribute(Ints{1, 1})}}, 99);
}

// Each conv direction searches cuDNN's algorithms once per shape (three
// choices for conv2d and its two grads, none more on the next steps). FP32
// stays FP32 unless TF32 is allowed: a 576-term dot product in TF32 (10-bit
// mantissa products) misses rtol 1e-4 by far, and the FP32 run must meet it;
// with TF32 allowed (cuDNN may then pick a tensor-core algorithm) the result
// still agrees to TF32's rounding (2e-2).
TEST(GpuCvKernels, Conv2dSearchesOncePerShapeAndUsesTf32OnlyWhenAllowed) {
  CTP_REQUIRE_GPUS(1);
  const std::vector<NamedAttribute> attrs = {{"paddings", Attribute(Ints{1, 1})}};
  const Tensor x = random_fp32({4, 64, 16, 16}, 120);
  const Tensor w = random_fp32({64, 64, 3, 3}, 121);
  const Tensor g = random_fp32(conv_output_shape("conv2d", x, w, attrs), 122);
  const Program program = conv_program("conv2d", attrs);
  Outcome fp32;
  expect_same(program, {{"x", x}, {"w", w}, {"g", g}}, {"y", "dx", "dw"}, 1e-4, 1e-4, 3, &fp32);
  EXPECT_EQ(fp32.algorithm_choices, 3u);
  Outcome tf32;
  tf32.conv_tf32 = true;
  expect_same(program, {{"x", x}, {"w", w}, {"g", g}}, {"y", "dx", "dw"}, 2e-2, 2e-2, 2, &tf32);
  EXPECT_EQ(tf32.algorithm_choices, 3u);
}

TEST(GpuCvKernels, Conv2dIn16Bits) {
  CTP_REQUIRE_GPUS(1);
  for (DataType half : {DataType::FP16, DataType::BF16}) {
    SCOPED_TRACE(std::string(to_string(half)));
    ProgramBuilder pb;
    pb.op("conv2d").in("Input", "x").in("Filter", "w").out("Output", "y")
        .attr("paddings", Attribute(Ints{1, 1}));
    expect_same(pb.build(),
                {{"x", random_half(half, {2, 3, 5, 5}, 101)},
                 {"w", random_half(half, {4, 3, 3, 3}, 102)}},
                {"y"}, 2e-2, 1e-2);
  }
}

// FP16 and BF16 convolutions and their grads run on cuDNN's graph API: one
// execution plan per direction and shape, found on the first step and reused
// on the second (three plans per shape, no legacy algorithm choices), on
// grouped, strided, dilated, asymmetrically padded (through the padded copy)
// and depthwise convolutions.
TEST(GpuCvKernels, Conv2dAndGradIn16BitsOnGraphPlans) {
  CTP_REQUIRE_GPUS(1);
  struct Case {
    const char* type;
    Shape x, w;
    std::vector<NamedAttribute> attrs;
  };
  const std::vector<Case> cases = {
      {"conv2d", {2, 4, 7, 6}, {6, 2, 3, 3},
       {{"groups", Attribute(int32_t{2})}, {"strides", Attribute(Ints{2, 1})},
        {"paddings", Attribute(Ints{1, 1})}, {"dilations", Attribute(Ints{1, 2})}}},
      {"conv2d", {1, 3, 6, 5}, {4, 3, 3, 2}, {{"paddings", Attribute(Ints{1, 0, 2, 1})}}},
      {"conv2d", {4, 16, 8, 8}, {32, 16, 1, 1}, {}},
      {"depthwise_conv2d", {2, 8, 6, 6}, {8, 1, 3, 3},
       {{"groups", Attribute(int32_t{8})}, {"paddings", Attribute(Ints{1, 1})}}},
  };
  uint64_t seed = 140;
  for (const Case& c : cases)
    for (DataType half : {DataType::FP16, DataType::BF16}) {
      SCOPED_TRACE(std::string(c.type) + " " + std::string(to_string(half)));
      const Tensor x = random_half(half, c.x, seed++);
      const Tensor w = random_half(half, c.w, seed++);
      const Shape y = conv_output_shape(c.type, random_fp32(c.x, 1), random_fp32(c.w, 2), c.attrs);
      Outcome outcome;
      expect_same(conv_program(c.type, c.attrs),
                  {{"x", x}, {"w", w}, {"g", random_half(half, y, seed++)}}, {"y", "dx", "dw"},
                  2e-2, 1e-2, 2, &outcome);
      EXPECT_EQ(outcome.kernel_states, 3u);
      EXPECT_EQ(outcome.algorithm_choices, 0u);
    }
}

Program pool_program(std::vector<NamedAttribute> attrs) {
  ProgramBuilder pb;
  OpBuilder fwd = pb.op("pool2d").in("X", "x").out("Out", "y");
  OpBuilder grad = pb.op("pool2d_grad").in("X", "x").in("Out", "y").in("Out@GRAD", "g")
                   .out("X@GRAD", "dx");
  for (const NamedAttribute& a : attrs) {
    fwd.attr(a.name, a.value);
    grad.attr(a.name, a.value);
  }
  return pb.build();
}

TEST(GpuCvKernels, Pool2dAndGradEveryWindowKind) {
  CTP_REQUIRE_GPUS(1);
  struct Case {
    const char* name;
    std::vector<NamedAttribute> attrs;
    Shape out;
  };
  const std::vector<Case> cases = {
      {"max 3x3 s2 p1", {{"pooling_type", Attribute("max")}, {"ksize", Attribute(Ints{3, 3})},
                         {"strides", Attribute(Ints{2, 2})}, {"paddings", Attribute(Ints{1, 1})}},
       {2, 3, 4, 4}},
      {"avg inclusive ceil", {{"pooling_type", Attribute("avg")}, {"ksize", Attribute(Ints{3, 2})},
                              {"strides", Attribute(Ints{2, 2})},
                              {"paddings", Attribute(Ints{1, 0, 1, 0})},
                              {"ceil_mode", Attribute(true)}, {"exclusive", Attribute(false)}},
       {2, 3, 4, 4}},
      {"adaptive max", {{"pooling_type", Attribute("max")}, {"ksize", Attribute(Ints{3, 2})},
                        {"adaptive", Attribute(true)}},
       {2, 3, 3, 2}},
      {"global avg", {{"pooling_type", Attribute("avg")}, {"ksize", Attribute(Ints{1, 1})},
                      {"global_pooling", Attribute(true)}},
       {2, 3, 1, 1}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    expect_same(pool_program(c.attrs),
                {{"x", random_fp32({2, 3, 7, 7}, 110)}, {"g", random_fp32(c.out, 111)}},
                {"y", "dx"}, 1e-6, 1e-7);
    for (DataType half : {DataType::FP16, DataType::BF16})
      expect_same(pool_program(c.attrs),
                  {{"x", random_half(half, {2, 3, 7, 7}, 112)},
                   {"g", random_half(half, c.out, 113)}},
                  {"y", "dx"}, 1e-2, 1e-3);
  }
}

}  // namespace
}  // namespace ctp
