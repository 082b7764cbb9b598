// FP16 and BF16 on the CPU: cast, and the kernels mixed-precision training
// runs in 16 bits (matmul/mul, elementwise add/sub/mul, relu, scale, sum,
// mean, reduce_mean and their grads). Each must give exactly the FP32
// kernel's result on the same (16-bit representable) inputs, rounded once to
// nearest even; dtype mixes stay errors naming the op and the dtypes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>

#include "executor/runtime/float16.h"
#include "ops/schema/op_def.h"
#include "program_ir/builder.h"
#include "tests/kernels_test_util.h"

namespace ctp {
namespace {

using ::testing::HasSubstr;

uint16_t to_bits(DataType dtype, float v) {
  return dtype == DataType::FP16 ? float16::from_float(v) : bfloat16::from_float(v);
}
float from_bits(DataType dtype, uint16_t bits) {
  return dtype == DataType::FP16 ? float16::to_float(bits) : bfloat16::to_float(bits);
}

// Random values in [-1, 1) (away from 0 by `gap`) that `dtype` holds exactly,
// as an FP32 tensor and as a `dtype` tensor.
struct Pair {
  Tensor fp32, narrow;
};
Pair random_pair(DataType dtype, std::vector<int64_t> shape, uint64_t seed, double gap = 0.0) {
  const Tensor d = test::random_tensor(shape, seed, gap);
  Pair p{Tensor(DataType::FP32, shape), Tensor(dtype, shape)};
  for (int64_t i = 0; i < d.numel(); ++i) {
    const uint16_t bits = to_bits(dtype, static_cast<float>(d.data<double>()[i]));
    p.narrow.data<uint16_t>()[i] = bits;
    p.fp32.data<float>()[i] = from_bits(dtype, bits);
  }
  return p;
}

Scope run(const Program& program, const std::map<std::string, Tensor>& inputs) {
  Scope scope;
  for (const auto& [name, t] : inputs) {
    Tensor own(t.dtype(), t.shape());
    std::memcpy(own.raw_data(), t.raw_data(), t.bytes());
    scope.var(name) = own;
  }
  Executor(program, RunServices{}).run(scope);
  return scope;
}

// Runs `program` on FP32 inputs and on the same values in `dtype`; every
// output in `dtype` must be the FP32 output rounded once, bit for bit.
void expect_rounded_fp32(const Program& program, DataType dtype,
                         const std::map<std::string, Pair>& inputs,
                         const std::vector<std::string>& outputs) {
  std::map<std::string, Tensor> wide, narrow;
  for (const auto& [name, p] : inputs) {
    wide.emplace(name, p.fp32);
    narrow.emplace(name, p.narrow);
  }
  Scope expected = run(program, wide);
  Scope actual = run(program, narrow);
  for (const std::string& name : outputs) {
    SCOPED_TRACE(std::string(to_string(dtype)) + " output " + name);
    const Tensor& e = expected.get(name);
    const Tensor& a = actual.get(name);
    ASSERT_EQ(a.dtype(), dtype);
    ASSERT_EQ(a.shape(), e.shape());
    int reported = 0;
    for (int64_t i = 0; i < e.numel() && reported < 5; ++i) {
      const uint16_t want = to_bits(dtype, e.data<float>()[i]);
      if (a.data<uint16_t>()[i] != want) {
        ADD_FAILURE() << "element " << i << ": " << from_bits(dtype, a.data<uint16_t>()[i])
                      << ", expected " << from_bits(dtype, want) << " (FP32 "
                      << e.data<float>()[i] << ")";
        ++reported;
      }
    }
  }
}

const DataType kHalfTypes[] = {DataType::FP16, DataType::BF16};

TEST(KernelsHalf, ElementwiseWithBroadcastAndGradsRoundTheFp32ResultOnce) {
  for (DataType dt : kHalfTypes)
    for (const char* type : {"elementwise_add", "elementwise_sub", "elementwise_mul"}) {
      SCOPED_TRACE(type);
      ProgramBuilder pb;
      pb.op(type).in("X", "x").in("Y", "y").out("Out", "out").attr("axis", 1);
      pb.op(std::string(type) + "_grad").in("X", "x").in("Y", "y").in("Out@GRAD", "g")
          .out("X@GRAD", "dx").out("Y@GRAD", "dy").attr("axis", 1);
      expect_rounded_fp32(pb.build(), dt,
                          {{"x", random_pair(dt, {2, 3, 4}, 1)}, {"y", random_pair(dt, {3}, 2)},
                           {"g", random_pair(dt, {2, 3, 4}, 3)}},
                          {"out", "dx", "dy"});
    }
}

TEST(KernelsHalf, ReluScaleSumMeanReduceMeanRoundOnce) {
  for (DataType dt : kHalfTypes) {
    ProgramBuilder pb;
    pb.op("relu").in("X", "x").out("Out", "r");
    pb.op("relu_grad").in("Out", "r").in("Out@GRAD", "g").out("X@GRAD", "dr");
    pb.op("scale").in("X", "x").out("Out", "s1").attr("scale", 0.3f).attr("bias", 2.f);
    pb.op("scale").in("X", "x").out("Out", "s2").attr("scale", -3.f).attr("bias", 1.f)
        .attr("bias_after_scale", false);
    pb.op("sum").in("X", std::vector<std::string>{"x", "g", "x"}).out("Out", "total");
    pb.op("sum").in("X", std::vector<std::string>{"acc", "g"}).out("Out", "acc");
    pb.op("mean").in("X", "x").out("Out", "m");
    pb.op("mean_grad").in("X", "x").in("Out@GRAD", "one").out("X@GRAD", "dm");
    pb.op("reduce_mean").in("X", "x").out("Out", "rm").attr("dim", std::vector<int32_t>{0});
    pb.op("reduce_mean_grad").in("X", "x").in("Out@GRAD", "grm").out("X@GRAD", "drm")
        .attr("dim", std::vector<int32_t>{0});
    expect_rounded_fp32(pb.build(), dt,
                        {{"x", random_pair(dt, {7, 33}, 7, 1e-2)},
                         {"g", random_pair(dt, {7, 33}, 8)},
                         {"acc", random_pair(dt, {7, 33}, 9)},
                         {"one", random_pair(dt, {1}, 10)},
                         {"grm", random_pair(dt, {33}, 11)}},
                        {"r", "dr", "s1", "s2", "total", "acc", "m", "dm", "rm", "drm"});
  }
}

TEST(KernelsHalf, MulAndMatmulAccumulateInFloat) {
  for (DataType dt : kHalfTypes) {
    ProgramBuilder pb;
    pb.op("mul").in("X", "a").in("Y", "b").out("Out", "ab");
    pb.op("mul_grad").in("X", "a").in("Y", "b").in("Out@GRAD", "g_ab")
        .out("X@GRAD", "da").out("Y@GRAD", "db");
    pb.op("matmul_v2").in("X", "u").in("Y", "v").out("Out", "uv").attr("trans_y", true);
    pb.op("matmul_v2_grad").in("X", "u").in("Y", "v").in("Out@GRAD", "g_uv")
        .out("X@GRAD", "du").out("Y@GRAD", "dv").attr("trans_y", true);
    expect_rounded_fp32(pb.build(), dt,
                        {{"a", random_pair(dt, {6, 40}, 20)}, {"b", random_pair(dt, {40, 4}, 21)},
                         {"g_ab", random_pair(dt, {6, 4}, 22)},
                         {"u", random_pair(dt, {2, 1, 3, 8}, 23)},
                         {"v", random_pair(dt, {3, 5, 8}, 24)},
                         {"g_uv", random_pair(dt, {2, 3, 3, 5}, 25)}},
                        {"ab", "da", "db", "uv", "du", "dv"});
  }
}

TEST(KernelsHalf, SumAccumulatesInPlaceIntoTheSameBuffer) {
  ProgramBuilder pb;
  pb.op("sum").in("X", std::vector<std::string>{"acc", "g"}).out("Out", "acc");
  const Program program = pb.build();
  Scope scope;
  scope.var("acc") = random_pair(DataType::FP16, {5}, 30).narrow;
  scope.var("g") = random_pair(DataType::FP16, {5}, 31).narrow;
  const void* buffer = scope.get("acc").raw_data();
  const float before = float16::to_float(scope.get("acc").data<uint16_t>()[2]);
  const float g = float16::to_float(scope.get("g").data<uint16_t>()[2]);
  Executor(program, RunServices{}).run(scope);
  EXPECT_EQ(scope.get("acc").raw_data(), buffer) << "a view (coalesce_tensor) must stay a view";
  EXPECT_EQ(scope.get("acc").data<uint16_t>()[2], float16::from_float(before + g));
}

TEST(KernelsHalf, CastBetweenFloatTypesRoundsToNearestEven) {
  const auto cast = [](const Tensor& x, DataType to) {
    Scope scope;
    scope.var("x") = x;
    test::run_op(scope, test::make_op("cast", {{"X", {"x"}}}, {{"Out", {"y"}}},
                                      {{"in_dtype", Attribute(static_cast<int32_t>(x.dtype()))},
                                       {"out_dtype", Attribute(static_cast<int32_t>(to))}}));
    return scope.get("y");
  };
  const Tensor x = test::tensor<float>({5}, {1.0f, 1.0f + 1.0f / 2048, 65520.0f, -3.140625f,
                                             1.0f + 3.0f / 2048});
  const Tensor h = cast(x, DataType::FP16);
  ASSERT_EQ(h.dtype(), DataType::FP16);
  EXPECT_EQ(test::values<uint16_t>(h),
            (std::vector<uint16_t>{0x3c00, 0x3c00, 0x7c00, float16::from_float(-3.140625f),
                                   0x3c02}));  // ties to even; 65520 overflows to inf
  const Tensor b = cast(x, DataType::BF16);
  ASSERT_EQ(b.dtype(), DataType::BF16);
  EXPECT_EQ(test::values<uint16_t>(b)[3], 0xc049);  // -3.140625 is exact in BF16
  EXPECT_EQ(test::values<uint16_t>(cast(test::tensor<float>({1}, {1.0f + 1.0f / 256}),
                                        DataType::BF16))[0], 0x3f80);  // tie to even
  const Tensor back = cast(h, DataType::FP32);
  EXPECT_EQ(test::values<float>(back)[3], -3.140625f);
  EXPECT_TRUE(std::isinf(test::values<float>(back)[2]));
  EXPECT_EQ(test::values<double>(cast(b, DataType::FP64))[3], -3.140625);
  // Integers: floats truncate toward zero, integers widen exactly.
  EXPECT_EQ(test::values<int32_t>(cast(test::tensor<float>({3}, {2.7f, -2.7f, 0.f}),
                                       DataType::INT32)),
            (std::vector<int32_t>{2, -2, 0}));
  EXPECT_EQ(test::values<float>(cast(test::tensor<int64_t>({2}, {7, -9}), DataType::FP32)),
            (std::vector<float>{7.f, -9.f}));
  // FP16 -> BF16 goes through float: 1 + 1/1024 is exact in FP16, rounds in BF16.
  EXPECT_EQ(test::values<uint16_t>(cast(cast(test::tensor<float>({1}, {1.0f + 1.0f / 1024}),
                                             DataType::FP16), DataType::BF16))[0], 0x3f80);
}

TEST(KernelsHalf, CastRejectsAWrongInDtypeNamingTheOp) {
  Scope scope;
  scope.var("x") = test::tensor<float>({1}, {1.f});
  try {
    test::run_op(scope, test::make_op("cast", {{"X", {"x"}}}, {{"Out", {"y"}}},
                                      {{"in_dtype", Attribute(int32_t{4})},  // FP16
                                       {"out_dtype", Attribute(int32_t{5})}}));
    FAIL() << "in_dtype FP16 on an FP32 X must be rejected";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("'cast'"));
    EXPECT_THAT(e.what(), HasSubstr("input X 'x' has dtype FP32, but in_dtype is FP16"));
  }
}

std::string error_of(const Program& program, std::map<std::string, Tensor> inputs) {
  try {
    run(program, inputs);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(KernelsHalf, MixedDtypesAndUnsupportedOpsAreErrorsNamingOpAndDtype) {
  ProgramBuilder add;
  add.op("elementwise_add").in("X", "x").in("Y", "y").out("Out", "out");
  const Program add_program = add.build();
  const std::string mixed = error_of(add_program, {{"x", random_pair(DataType::FP16, {3}, 1).narrow},
                                                   {"y", test::tensor<float>({3}, {1, 2, 3})}});
  EXPECT_THAT(mixed, HasSubstr("'elementwise_add'"));
  EXPECT_THAT(mixed, HasSubstr("input Y 'y' is FP32 but X 'x' is FP16"));
  const std::string fp16_bf16 =
      error_of(add_program, {{"x", random_pair(DataType::FP16, {3}, 1).narrow},
                             {"y", random_pair(DataType::BF16, {3}, 2).narrow}});
  EXPECT_THAT(fp16_bf16, HasSubstr("input Y 'y' is BF16 but X 'x' is FP16"));
  // Loss and optimizer kernels stay FP32/FP64, as in Paddle's AMP.
  ProgramBuilder sgd;
  sgd.op("sgd").in("Param", "p").in("Grad", "g").in("LearningRate", "lr").out("ParamOut", "p");
  const std::string optimizer =
      error_of(sgd.build(), {{"p", random_pair(DataType::FP16, {3}, 1).narrow},
                             {"g", random_pair(DataType::FP16, {3}, 2).narrow},
                             {"lr", test::tensor<float>({1}, {0.1f})}});
  EXPECT_THAT(optimizer, HasSubstr("'sgd'"));
  EXPECT_THAT(optimizer, HasSubstr("FP16"));
}

TEST(KernelsHalf, ScaleTakesAnFp32ScaleTensorWithFp16X) {
  ProgramBuilder pb;
  pb.op("scale").in("X", "x").in("ScaleTensor", "s").out("Out", "out");
  const Pair x = random_pair(DataType::FP16, {4}, 40);
  Scope scope = run(pb.build(), {{"x", x.narrow}, {"s", test::tensor<float>({1}, {0.5f})}});
  for (int64_t i = 0; i < 4; ++i)
    EXPECT_EQ(scope.get("out").data<uint16_t>()[i],
              float16::from_float(0.5f * x.fp32.data<float>()[i]));
}

TEST(KernelsHalf, ShapeInferenceCarriesTheNewDtypes) {
  const OpDef* cast = OpRegistry::global().find("cast");
  ASSERT_NE(cast, nullptr);
  Block block;
  block.add_var(Var{.name = "x", .dtype = DataType::FP32, .shape = {2, 3}});
  block.add_var(Var{.name = "y", .dtype = DataType::BOOL, .shape = {-7}});
  block.add_var(Var{.name = "z", .dtype = DataType::BOOL, .shape = {-7}});
  const Op to_bf16("cast", {{"X", {"x"}}}, {{"Out", {"y"}}},
                   {{"in_dtype", Attribute(int32_t{5})}, {"out_dtype", Attribute(int32_t{22})}});
  cast->infer_shape(to_bf16, block);
  EXPECT_EQ(block.var("y").dtype, DataType::BF16);
  EXPECT_EQ(block.var("y").shape, (std::vector<int64_t>{2, 3}));
  const Op matmul("matmul_v2", {{"X", {"y"}}, {"Y", {"y"}}}, {{"Out", {"z"}}},
                  {{"trans_y", Attribute(true)}});
  OpRegistry::global().find("matmul_v2")->infer_shape(matmul, block);
  EXPECT_EQ(block.var("z").dtype, DataType::BF16);
  EXPECT_EQ(block.var("z").shape, (std::vector<int64_t>{2, 2}));
  const Op wrong("cast", {{"X", {"x"}}}, {{"Out", {"y"}}},
                 {{"in_dtype", Attribute(int32_t{4})}, {"out_dtype", Attribute(int32_t{5})}});
  try {
    cast->infer_shape(wrong, block);
    FAIL() << "in_dtype FP16 on an FP32 X must be rejected";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("has dtype FP32, but in_dtype is FP16"));
  }
}

TEST(KernelsHalf, FillConstantAndCoalesceTensorInHalf) {
  ProgramBuilder pb;
  pb.op("fill_constant").out("Out", "c").attr("shape", std::vector<int64_t>{3})
      .attr("value", 0.1f).attr("dtype", 4);
  pb.op("coalesce_tensor").in("Input", std::vector<std::string>{"g0", "g1"})
      .out("Output", std::vector<std::string>{"g0", "g1"}).out("FusedOutput", "fused")
      .attr("copy_data", true).attr("dtype", 22);
  pb.op("scale").in("X", "g1").out("Out", "g1").attr("scale", 2.f);
  const Pair g0 = random_pair(DataType::BF16, {3}, 50), g1 = random_pair(DataType::BF16, {4}, 51);
  Scope scope = run(pb.build(), {{"g0", g0.narrow}, {"g1", g1.narrow}});
  EXPECT_EQ(test::values<uint16_t>(scope.get("c")), std::vector<uint16_t>(3, 0x2e66));
  const Tensor& fused = scope.get("fused");
  EXPECT_EQ(fused.dtype(), DataType::BF16);
  EXPECT_TRUE(scope.get("g1").shares_buffer_with(fused)) << "scale wrote through the view";
  const uint16_t* f = fused.data<uint16_t>();
  EXPECT_EQ(f[0], g0.narrow.data<uint16_t>()[0]);
  EXPECT_EQ(f[32], bfloat16::from_float(2.f * g1.fp32.data<float>()[0]));  // 64-byte chunks
}

}  // namespace
}  // namespace ctp
