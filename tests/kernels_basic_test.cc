// Initializers, copies and layout kernels: fill_constant, uniform_random,
// gaussian_random, assign, split, concat.
#include <cmath>
#include <cstring>

#include "executor/runtime/float16.h"
#include "tests/kernels_test_util.h"

namespace ctp {
namespace {

using test::make_op;
using test::run_op;
using test::tensor;
using test::values;

Op fill_op(DataType dtype, float value, std::string out = "out") {
  return make_op("fill_constant", {}, {{"Out", {std::move(out)}}},
                 {{"shape", Attribute(std::vector<int64_t>{2, 3})},
                  {"dtype", Attribute(static_cast<int32_t>(dtype))},
                  {"value", Attribute(value)}});
}

TEST(KernelsBasic, FillConstantEveryDtype) {
  Scope s;
  run_op(s, fill_op(DataType::FP32, 1.5f));
  EXPECT_EQ(values<float>(s.get("out")), std::vector<float>(6, 1.5f));
  EXPECT_EQ(s.get("out").shape(), (std::vector<int64_t>{2, 3}));
  run_op(s, fill_op(DataType::FP64, -2.25f));
  EXPECT_EQ(values<double>(s.get("out")), std::vector<double>(6, -2.25));
  run_op(s, fill_op(DataType::INT32, 7.0f));
  EXPECT_EQ(values<int32_t>(s.get("out")), std::vector<int32_t>(6, 7));
  run_op(s, fill_op(DataType::INT64, -3.0f));
  EXPECT_EQ(values<int64_t>(s.get("out")), std::vector<int64_t>(6, -3));
  run_op(s, fill_op(DataType::BOOL, 1.0f));
  EXPECT_EQ(values<bool>(s.get("out")), std::vector<bool>(6, true));
  run_op(s, fill_op(DataType::FP16, 1.5f));
  EXPECT_EQ(s.get("out").dtype(), DataType::FP16);
  EXPECT_EQ(values<uint16_t>(s.get("out")), std::vector<uint16_t>(6, 0x3e00));  // 1.5 in binary16
  run_op(s, fill_op(DataType::BF16, -2.0f));
  EXPECT_EQ(s.get("out").dtype(), DataType::BF16);
  EXPECT_EQ(values<uint16_t>(s.get("out")), std::vector<uint16_t>(6, 0xc000));  // -2 in bfloat16
}

TEST(KernelsBasic, FillConstantStrValueKeepsLargeIntegersExact) {
  Scope s;
  run_op(s, make_op("fill_constant", {}, {{"Out", {"big"}}},
                    {{"shape", Attribute(std::vector<int32_t>{1})},
                     {"dtype", Attribute(static_cast<int32_t>(DataType::INT64))},
                     {"str_value", Attribute("9007199254740993")}}));
  EXPECT_EQ(values<int64_t>(s.get("big"))[0], 9007199254740993LL);
  run_op(s, make_op("fill_constant", {}, {{"Out", {"inf"}}},
                    {{"shape", Attribute(std::vector<int32_t>{1})},
                     {"str_value", Attribute("-inf")}}));
  EXPECT_TRUE(std::isinf(values<float>(s.get("inf"))[0]));
  EXPECT_THROW(run_op(s, make_op("fill_constant", {}, {{"Out", {"bad"}}},
                                 {{"shape", Attribute(std::vector<int32_t>{1})},
                                  {"str_value", Attribute("abc")}})),
               Error);
}

TEST(KernelsBasic, HalfAndBfloat16Conversions) {
  EXPECT_EQ(float16::from_float(1.0f), 0x3c00);
  EXPECT_EQ(float16::from_float(65504.0f), 0x7bff);
  EXPECT_EQ(float16::from_float(1e6f), 0x7c00);           // overflow to inf
  EXPECT_EQ(float16::from_float(5.9604645e-8f), 0x0001);  // smallest subnormal
  EXPECT_EQ(float16::from_float(1.0f + 1.0f / 2048), 0x3c00);  // tie rounds to even
  for (uint16_t bits : {0x3c00, 0xc000, 0x0001, 0x03ff, 0x7bff, 0x3555})
    EXPECT_EQ(float16::from_float(float16::to_float(bits)), bits);
  EXPECT_EQ(bfloat16::from_float(1.0f), 0x3f80);
  EXPECT_EQ(bfloat16::to_float(0x4049), 3.140625f);
}

Op random_op(const std::string& type, int32_t seed, std::vector<int64_t> shape,
             std::string out = "r") {
  std::vector<NamedAttribute> attrs = {{"shape", Attribute(std::move(shape))},
                                       {"seed", Attribute(seed)}};
  if (type == "uniform_random") {
    attrs.push_back({"min", Attribute(-2.0f)});
    attrs.push_back({"max", Attribute(3.0f)});
  } else {
    attrs.push_back({"mean", Attribute(1.0f)});
    attrs.push_back({"std", Attribute(2.0f)});
  }
  return make_op(type, {}, {{"Out", {std::move(out)}}}, std::move(attrs));
}

TEST(KernelsBasic, UniformRandomIsDeterministicAndInRange) {
  Scope a, b;
  run_op(a, random_op("uniform_random", 42, {100, 100}));
  run_op(b, random_op("uniform_random", 42, {100, 100}));
  const auto va = values<float>(a.get("r"));
  EXPECT_EQ(va, values<float>(b.get("r")));
  double total = 0;
  for (float v : va) {
    ASSERT_GE(v, -2.0f);
    ASSERT_LT(v, 3.0f);
    total += v;
  }
  EXPECT_NEAR(total / va.size(), 0.5, 0.05);
  run_op(b, random_op("uniform_random", 43, {100, 100}));
  EXPECT_NE(va, values<float>(b.get("r")));
}

TEST(KernelsBasic, GaussianRandomMoments) {
  Scope s;
  run_op(s, random_op("gaussian_random", 7, {200, 100}));
  const auto v = values<float>(s.get("r"));
  double sum = 0, sq = 0;
  for (float x : v) {
    sum += x;
    sq += x * x;
  }
  const double mean = sum / v.size();
  EXPECT_NEAR(mean, 1.0, 0.05);
  EXPECT_NEAR(std::sqrt(sq / v.size() - mean * mean), 2.0, 0.05);
}

TEST(KernelsBasic, SeedZeroFollowsRunSeedOutputNameAndStep) {
  const auto draw = [](uint64_t run_seed, const std::string& name, uint64_t step = 0) {
    Scope s;
    RunServices services;
    services.seed = run_seed;
    services.step = step;
    run_op(s, random_op("gaussian_random", 0, {16}, name), services);
    return values<float>(s.get(name));
  };
  EXPECT_EQ(draw(1, "w"), draw(1, "w"));
  EXPECT_NE(draw(1, "w"), draw(2, "w"));  // e.g. two ranks seeded differently
  EXPECT_NE(draw(1, "w"), draw(1, "v"));  // two parameters of one program
  EXPECT_NE(draw(1, "w"), draw(1, "w", 1));
}

TEST(KernelsBasic, AssignCopiesEveryDtype) {
  Scope s;
  for (DataType dtype : {DataType::FP32, DataType::FP64, DataType::FP16, DataType::BF16,
                         DataType::INT32, DataType::INT64, DataType::BOOL}) {
    SCOPED_TRACE(std::string(to_string(dtype)));
    run_op(s, fill_op(dtype, 1.0f, "src"));
    run_op(s, make_op("assign", {{"X", {"src"}}}, {{"Out", {"dst"}}}));
    const Tensor& src = s.get("src");
    const Tensor& dst = s.get("dst");
    EXPECT_EQ(dst.dtype(), dtype);
    EXPECT_EQ(dst.shape(), src.shape());
    EXPECT_FALSE(dst.shares_buffer_with(src));
    EXPECT_EQ(std::memcmp(dst.raw_data(), src.raw_data(), src.bytes()), 0);
  }
}

TEST(KernelsBasic, SplitByNumAndSections) {
  Scope s;
  s.var("x") = tensor<float>({2, 4}, {0, 1, 2, 3, 4, 5, 6, 7});
  run_op(s, make_op("split", {{"X", {"x"}}}, {{"Out", {"a", "b"}}},
                    {{"num", Attribute(int32_t{2})}, {"axis", Attribute(int32_t{1})}}));
  EXPECT_EQ(values<float>(s.get("a")), (std::vector<float>{0, 1, 4, 5}));
  EXPECT_EQ(values<float>(s.get("b")), (std::vector<float>{2, 3, 6, 7}));
  run_op(s, make_op("split", {{"X", {"x"}}}, {{"Out", {"c", "d"}}},
                    {{"sections", Attribute(std::vector<int32_t>{-1, 3})},
                     {"axis", Attribute(int32_t{-1})}}));
  EXPECT_EQ(s.get("c").shape(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(values<float>(s.get("c")), (std::vector<float>{0, 4}));
  EXPECT_EQ(values<float>(s.get("d")), (std::vector<float>{1, 2, 3, 5, 6, 7}));
  run_op(s, make_op("split", {{"X", {"x"}}}, {{"Out", {"r0", "r1"}}},
                    {{"num", Attribute(int32_t{2})}}));
  EXPECT_EQ(values<float>(s.get("r1")), (std::vector<float>{4, 5, 6, 7}));
  EXPECT_THROW(run_op(s, make_op("split", {{"X", {"x"}}}, {{"Out", {"p", "q", "r"}}},
                                 {{"num", Attribute(int32_t{3})}, {"axis", Attribute(int32_t{1})}})),
               Error);
}

TEST(KernelsBasic, ConcatAlongAxis) {
  Scope s;
  s.var("a") = tensor<int64_t>({2, 1}, {1, 2});
  s.var("b") = tensor<int64_t>({2, 2}, {3, 4, 5, 6});
  run_op(s, make_op("concat", {{"X", {"a", "b"}}}, {{"Out", {"c"}}},
                    {{"axis", Attribute(int32_t{1})}}));
  EXPECT_EQ(s.get("c").shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values<int64_t>(s.get("c")), (std::vector<int64_t>{1, 3, 4, 2, 5, 6}));
  run_op(s, make_op("concat", {{"X", {"b", "b"}}}, {{"Out", {"d"}}}));
  EXPECT_EQ(values<int64_t>(s.get("d")), (std::vector<int64_t>{3, 4, 5, 6, 3, 4, 5, 6}));
  EXPECT_THROW(run_op(s, make_op("concat", {{"X", {"a", "b"}}}, {{"Out", {"e"}}})), Error);
}

}  // namespace
}  // namespace ctp
