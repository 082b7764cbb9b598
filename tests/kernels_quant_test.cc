// The CPU kernels of Paddle's simulated-quantization ops against values
// worked out by hand: both rounding modes (half to even with the asymmetric
// clamp [-bin_cnt - 1, bin_cnt]; clip then half away from zero), the
// quantize-dequantize form, fake_dequantize_max_abs, a zero scale, OutScale,
// the straight-through gradient, and the errors naming the op.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/kernels_test_util.h"

namespace ctp {
namespace {

using test::make_op;
using test::run_op;
using test::tensor;
using test::values;

Op quantize_op(const std::string& type, std::vector<NamedAttribute> attrs,
               const std::string& out_scale = "scale") {
  attrs.push_back({"is_test", Attribute(true)});
  return make_op(type, {{"X", {"x"}}, {"InScale", {"scale"}}},
                 {{"Out", {"out"}}, {"OutScale", {out_scale}}}, std::move(attrs));
}


// bit_length 2: one level each side (bin_cnt 1), so with scale 1 a level is
// x rounded, and the two modes part on every half and at the negative end.
TEST(KernelsQuant, RoundingModesAndClampsAsPaddle) {
  Scope s;
  s.var("x") = tensor<float>({8}, {0.5f, -0.5f, 1.5f, -1.5f, 2.5f, -3.0f, 0.4f, -0.6f});
  s.var("scale") = tensor<float>({1}, {1.0f});
  run_op(s, quantize_op("fake_quantize_moving_average_abs_max",
                        {{"bit_length", Attribute(int32_t{2})}}));
  // round_type 0 (default): half to even, then clamp to [-2, 1].
  EXPECT_EQ(values<float>(s.get("out")),
            (std::vector<float>{0, -0.0f, 1, -2, 1, -2, 0, -1}));
  run_op(s, quantize_op("fake_quantize_moving_average_abs_max",
                        {{"bit_length", Attribute(int32_t{2})}, {"round_type", Attribute(int32_t{1})}}));
  // round_type 1: clip to [-1, 1] first, then half away from zero.
  EXPECT_EQ(values<float>(s.get("out")), (std::vector<float>{1, -1, 1, -1, 1, -1, 0, -1}));
}

TEST(KernelsQuant, EightBitsQuantizeAndQuantizeDequantize) {
  Scope s;
  // scale 2: a level is x * 63.5. 1 -> 63.5 -> 64 (even); 3 -> 190.5 -> 127;
  // -4 -> -254 -> -128 (round_type 0) or -127 (round_type 1, clipped to -2).
  s.var("x") = tensor<double>({4}, {1.0, 3.0, -4.0, 0.0});
  s.var("scale") = tensor<double>({1}, {2.0});
  run_op(s, quantize_op("fake_quantize_moving_average_abs_max", {}));
  EXPECT_EQ(values<double>(s.get("out")), (std::vector<double>{64, 127, -128, 0}));
  run_op(s, quantize_op("fake_quantize_moving_average_abs_max", {{"round_type", Attribute(int32_t{1})}}));
  EXPECT_EQ(values<double>(s.get("out")), (std::vector<double>{64, 127, -127, 0}));
  run_op(s, quantize_op("fake_quantize_dequantize_moving_average_abs_max", {}));
  const std::vector<double> out = values<double>(s.get("out"));
  const std::vector<double> expected = {64 * 2.0 / 127, 127 * 2.0 / 127, -128 * 2.0 / 127, 0};
  for (std::size_t i = 0; i < out.size(); ++i) EXPECT_DOUBLE_EQ(out[i], expected[i]) << i;
}

// A zero scale is guarded as in Paddle (1 / (0 + 1e-6)): levels clamp, and
// the dequantized values are zero, never NaN.
TEST(KernelsQuant, ZeroScaleGivesFiniteValues) {
  Scope s;
  s.var("x") = tensor<float>({3}, {1.0f, -1.0f, 0.0f});
  s.var("scale") = tensor<float>({1}, {0.0f});
  run_op(s, quantize_op("fake_quantize_moving_average_abs_max", {}));
  EXPECT_EQ(values<float>(s.get("out")), (std::vector<float>{127, -128, 0}));
  run_op(s, quantize_op("fake_quantize_dequantize_moving_average_abs_max", {}));
  for (float v : values<float>(s.get("out"))) EXPECT_EQ(v, 0.0f);
}

TEST(KernelsQuant, OutScaleIsInScaleUnchanged) {
  Scope s;
  s.var("x") = tensor<float>({2}, {0.25f, -0.75f});
  s.var("scale") = tensor<float>({1}, {0.5f});
  run_op(s, quantize_op("fake_quantize_dequantize_moving_average_abs_max", {}, "scale_out"));
  EXPECT_EQ(values<float>(s.get("scale_out")), (std::vector<float>{0.5f}));
  EXPECT_EQ(values<float>(s.get("scale")), (std::vector<float>{0.5f}));
}

TEST(KernelsQuant, DequantizeMaxAbs) {
  Scope s;
  s.var("x") = tensor<float>({3}, {127.0f, -64.0f, 0.0f});
  s.var("scale") = tensor<float>({1}, {2.0f});
  run_op(s, make_op("fake_dequantize_max_abs", {{"X", {"x"}}, {"Scale", {"scale"}}},
                    {{"Out", {"out"}}}, {{"max_range", Attribute(127.0f)}}));
  const std::vector<float> out = values<float>(s.get("out"));
  EXPECT_FLOAT_EQ(out[0], 2.0f);
  EXPECT_FLOAT_EQ(out[1], -64.0f * 2.0f / 127.0f);
  EXPECT_EQ(out[2], 0.0f);
}

TEST(KernelsQuant, StraightThroughGradientPassesOutGradUnchanged) {
  Scope s;
  s.var("dout") = tensor<float>({2, 2}, {1.5f, -2.0f, 0.0f, 7.25f});
  run_op(s, make_op("straight_through_estimator_grad", {{"Out@GRAD", {"dout"}}},
                    {{"X@GRAD", {"dx"}}}));
  EXPECT_EQ(s.get("dx").shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(values<float>(s.get("dx")), (std::vector<float>{1.5f, -2.0f, 0.0f, 7.25f}));
}

TEST(KernelsQuant, UnsupportedFormsAreErrorsNamingTheOp) {
  Scope s;
  s.var("x") = tensor<float>({2}, {1.0f, 2.0f});
  s.var("scale") = tensor<float>({1}, {1.0f});
  s.var("scales") = tensor<float>({2}, {1.0f, 2.0f});
  const std::string type = "fake_quantize_moving_average_abs_max";

  Op training = make_op(type, {{"X", {"x"}}, {"InScale", {"scale"}}},
                        {{"Out", {"out"}}, {"OutScale", {"scale"}}});
  std::string what = test::run_op_error(s, training);
  EXPECT_NE(what.find("'" + type + "'"), std::string::npos) << what;
  EXPECT_NE(what.find("attribute is_test is false: the training form"), std::string::npos) << what;

  what = test::run_op_error(s, quantize_op(type, {{"bit_length", Attribute(int32_t{17})}}));
  EXPECT_NE(what.find("attribute bit_length is 17; it must be in [1, 16]"), std::string::npos)
      << what;
  what = test::run_op_error(s, quantize_op(type, {{"round_type", Attribute(int32_t{2})}}));
  EXPECT_NE(what.find("attribute round_type is 2"), std::string::npos) << what;

  Op two_scales = make_op(type, {{"X", {"x"}}, {"InScale", {"scales"}}},
                          {{"Out", {"out"}}, {"OutScale", {"scales"}}}, {{"is_test", Attribute(true)}});
  what = test::run_op_error(s, two_scales);
  EXPECT_NE(what.find("input InScale 'scales' [2] must hold one element"), std::string::npos)
      << what;

  s.var("ints") = tensor<int32_t>({2}, {1, 2});
  Op int_x = make_op(type, {{"X", {"ints"}}, {"InScale", {"scale"}}},
                     {{"Out", {"out"}}, {"OutScale", {"scale"}}}, {{"is_test", Attribute(true)}});
  what = test::run_op_error(s, int_x);
  EXPECT_NE(what.find("has dtype INT32; the op takes FP32 or FP64"), std::string::npos) << what;

  Op zero_range = make_op("fake_dequantize_max_abs", {{"X", {"x"}}, {"Scale", {"scale"}}},
                          {{"Out", {"out"}}}, {{"max_range", Attribute(0.0f)}});
  what = test::run_op_error(s, zero_range);
  EXPECT_NE(what.find("'fake_dequantize_max_abs'"), std::string::npos) << what;
  EXPECT_NE(what.find("attribute max_range is 0; it must be positive"), std::string::npos) << what;
}

}  // namespace
}  // namespace ctp
