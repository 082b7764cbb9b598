// The CUDA kernels of the shape ops (reshape2, flatten_contiguous_range,
// squeeze2, unsqueeze2, transpose2, slice, stack), layer_norm,
// lookup_table_v2, reduce_sum and batched matmul_v2 against their CPU
// kernels (tests/gpu/kernels_vs_cpu_util.h). Moving elements is exact: the shape ops
// and the lookup agree bit for bit. layer_norm sums by a block-wide tree
// and the lookup's gradient adds by atomics, so FP32 agrees within 1e-5
// relative (+1e-6 absolute); 16-bit results within one 16-bit ulp (1e-2).
#include <gtest/gtest.h>

#include "program_ir/builder.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/gpu/kernels_vs_cpu_util.h"

namespace ctp {
namespace {

using gpu_testing::expect_same;
using gpu_testing::random_fp32;
using gpu_testing::random_half;

Attribute ints(std::vector<int32_t> v) { return Attribute(std::move(v)); }

TEST(GpuKernels, ShapeOpsAndGradsExactlyAsOnTheCpu) {
  CTP_REQUIRE_GPUS(1);
  ProgramBuilder pb;
  pb.op("reshape2").in("X", "x").out("Out", "r").out("XShape", "rs").attr("shape", ints({0, -1}));
  pb.op("reshape2_grad").in("XShape", "rs").in("Out@GRAD", "r").out("X@GRAD", "dr");
  pb.op("flatten_contiguous_range").in("X", "x").out("Out", "f").out("XShape", "fs")
      .attr("start_axis", int32_t{0}).attr("stop_axis", int32_t{1});
  pb.op("squeeze2").in("X", "f").out("Out", "sq").out("XShape", "sqs");
  pb.op("unsqueeze2").in("X", "x").out("Out", "u").out("XShape", "us").attr("axes", ints({1, -1}));
  pb.op("transpose2").in("X", "x").out("Out", "t").out("XShape", "ts")
      .attr("axis", ints({2, 0, 1, 3}));
  pb.op("transpose2_grad").in("XShape", "ts").in("Out@GRAD", "t").out("X@GRAD", "dt")
      .attr("axis", ints({2, 0, 1, 3}));
  pb.op("slice").in("Input", "x").out("Out", "s").attr("axes", ints({1, 3}))
      .attr("starts", ints({-2, 1})).attr("ends", ints({100, 2})).attr("decrease_axis", ints({3}));
  pb.op("slice_grad").in("Input", "x").in("Out@GRAD", "s").out("Input@GRAD", "ds")
      .attr("axes", ints({1, 3})).attr("starts", ints({-2, 1})).attr("ends", ints({100, 2}))
      .attr("decrease_axis", ints({3}));
  pb.op("stack").in("X", std::vector<std::string>{"x", "dt"}).out("Y", "st").attr("axis", int32_t{2});
  pb.op("stack_grad").in("Y@GRAD", "st").out("X@GRAD", std::vector<std::string>{"sa", "sb"})
      .attr("axis", int32_t{2});
  const std::vector<std::string> outputs = {"r", "rs", "dr", "f", "sq", "u", "t", "ts", "dt",
                                            "s", "ds", "st", "sa", "sb"};
  const Program program = pb.build();  // build() moves the program out: once
  expect_same(program, {{"x", random_fp32({2, 3, 4, 5}, 80)}}, outputs, 0, 0);
  // Any dtype moves: FP16 elements and INT64 (shape tensors) as well.
  expect_same(program, {{"x", random_half(DataType::FP16, {2, 3, 4, 5}, 81)}}, outputs, 0, 0);
  Tensor shapes(DataType::INT64, {2, 3, 4, 5});
  for (int64_t i = 0; i < shapes.numel(); ++i) shapes.data<int64_t>()[i] = i * 7 - 40;
  expect_same(program, {{"x", shapes}}, outputs, 0, 0);
}

// reshape2 to a shape given by tensors on the host (fed) and on the GPU (a
// fill_constant's and a shape op's output), as the CPU reads them.
TEST(GpuKernels, Reshape2ToShapeTensorsAsOnTheCpu) {
  CTP_REQUIRE_GPUS(1);
  ProgramBuilder pb;
  pb.op("fill_constant").out("Out", "rest").attr("dtype", int32_t{2})
      .attr("shape", Attribute(std::vector<int64_t>{1})).attr("value", Attribute(-1.0f));
  pb.op("reshape2").in("X", "x").in("ShapeTensor", std::vector<std::string>{"three", "rest"})
      .out("Out", "r").out("XShape", "rs");
  pb.op("reshape2").in("X", "x").in("Shape", "dims").out("Out", "d");
  // shape's output (INT32 on the GPU) as the Shape of another reshape2, the
  // OCR models' pattern.
  pb.op("shape").in("Input", "x").out("Out", "xdims");
  pb.op("reshape2").in("X", "r").in("Shape", "xdims").out("Out", "back");
  Tensor three(DataType::INT64, {1}), dims(DataType::INT32, {3});
  three.data<int64_t>()[0] = 3;
  for (int i = 0; i < 3; ++i) dims.data<int32_t>()[i] = std::vector<int32_t>{4, 0, 10}[i];
  expect_same(pb.build(),
              {{"x", random_fp32({4, 3, 10}, 85)}, {"three", three}, {"dims", dims}},
              {"r", "rs", "d", "xdims", "back"}, 0, 0);
}

TEST(GpuKernels, LayerNormAndGradFp32Fp64AndHalf) {
  CTP_REQUIRE_GPUS(1);
  const auto program = [](bool params) {
    ProgramBuilder pb;
    auto fwd = pb.op("layer_norm");
    fwd.in("X", "x").out("Y", "y").out("Mean", "m").out("Variance", "v")
        .attr("begin_norm_axis", int32_t{2});
    auto bwd = pb.op("layer_norm_grad");
    bwd.in("X", "x").in("Mean", "m").in("Variance", "v").in("Y@GRAD", "g").out("X@GRAD", "dx")
        .attr("begin_norm_axis", int32_t{2});
    if (params) {
      fwd.in("Scale", "scale").in("Bias", "bias");
      bwd.in("Scale", "scale").in("Bias", "bias").out("Scale@GRAD", "ds").out("Bias@GRAD", "db");
    }
    return pb.build();
  };
  const std::map<std::string, Tensor> fp32 = {{"x", random_fp32({4, 3, 40, 20}, 82)},
                                              {"g", random_fp32({4, 3, 40, 20}, 83)},
                                              {"scale", random_fp32({800}, 84)},
                                              {"bias", random_fp32({800}, 85)}};
  expect_same(program(true), fp32, {"y", "m", "v", "dx", "ds", "db"}, 1e-5, 1e-6);
  expect_same(program(false), fp32, {"y", "m", "v", "dx"}, 1e-5, 1e-6);
  // More rows than one chunk of the parameter gradients' column sums (128
  // rows), columns not a multiple of 32: rows 2 x 70, 135 columns.
  expect_same(program(true), {{"x", random_fp32({2, 70, 5, 27}, 90)},
                              {"g", random_fp32({2, 70, 5, 27}, 91)},
                              {"scale", random_fp32({135}, 92)}, {"bias", random_fp32({135}, 93)}},
              {"y", "m", "v", "dx", "ds", "db"}, 1e-5, 1e-6);
  // FP32 rows of 512 and 1024 columns: a warp per row (4 and 8 float4 a
  // lane), 15 rows (not a multiple of a block's 8).
  for (int64_t cols : {512, 1024}) {
    SCOPED_TRACE("cols " + std::to_string(cols));
    const std::map<std::string, Tensor> rows = {
        {"x", random_fp32({3, 5, cols}, 94)}, {"g", random_fp32({3, 5, cols}, 95)},
        {"scale", random_fp32({cols}, 96)}, {"bias", random_fp32({cols}, 97)}};
    expect_same(program(true), rows, {"y", "m", "v", "dx", "ds", "db"}, 1e-5, 1e-6);
    expect_same(program(false), rows, {"y", "m", "v", "dx"}, 1e-5, 1e-6);
  }
  for (DataType half : {DataType::FP16, DataType::BF16}) {
    SCOPED_TRACE(std::string(to_string(half)));
    expect_same(program(true),
                {{"x", random_half(half, {2, 3, 8, 16}, 86)}, {"g", random_half(half, {2, 3, 8, 16}, 87)},
                 {"scale", random_fp32({128}, 88)}, {"bias", random_fp32({128}, 89)}},
                {"y", "m", "v", "dx", "ds", "db"}, 1e-2, 1e-2);
  }
}

TEST(GpuKernels, LookupTableV2AndDenseGrad) {
  CTP_REQUIRE_GPUS(1);
  ProgramBuilder pb;
  pb.op("lookup_table_v2").in("W", "w").in("Ids", "ids").out("Out", "out")
      .attr("padding_idx", int64_t{3});
  pb.op("lookup_table_v2_grad").in("W", "w").in("Ids", "ids").in("Out@GRAD", "g")
      .out("W@GRAD", "dw").attr("padding_idx", int64_t{3});
  Tensor ids(DataType::INT64, {6, 5});
  for (int64_t i = 0; i < ids.numel(); ++i) ids.data<int64_t>()[i] = (i * 5) % 7;  // repeats
  expect_same(pb.build(), {{"w", random_fp32({7, 16}, 90)}, {"ids", ids},
                           {"g", random_fp32({6, 5, 16}, 91)}},
              {"out", "dw"}, 1e-5, 1e-6);
  ProgramBuilder fwd;  // 16-bit tables move rows exactly
  fwd.op("lookup_table_v2").in("W", "w").in("Ids", "ids").out("Out", "out");
  expect_same(fwd.build(), {{"w", random_half(DataType::BF16, {7, 16}, 92)}, {"ids", ids}},
              {"out"}, 0, 0);
}

TEST(GpuKernels, ReduceSumAndGrad) {
  CTP_REQUIRE_GPUS(1);
  ProgramBuilder pb;
  pb.op("reduce_sum").in("X", "x").out("Out", "out").attr("dim", ints({0, 2}));
  pb.op("reduce_sum_grad").in("X", "x").in("Out@GRAD", "g").out("X@GRAD", "dx")
      .attr("dim", ints({0, 2}));
  expect_same(pb.build(), {{"x", random_fp32({3, 4, 5}, 93)}, {"g", random_fp32({4}, 94)}},
              {"out", "dx"}, 1e-6, 1e-6);
}

// Batches that step evenly (both batched; Y broadcast as a whole; 1-D X)
// run as one strided batched GEMM, X's batches against one Y matrix as one
// GEMM of all their rows ([7, 5, 6] x [6, 2], [4, 3, 5, 6] x [2, 6]^T),
// interleaved broadcasts ([2, 1] with [3]) and grads adding batches into one
// matrix as a GEMM each: all must agree with the CPU within FP32 rounding,
// FP16 within 16-bit rounding.
TEST(GpuKernels, MatmulV2BatchedStridedAndBroadcast) {
  CTP_REQUIRE_GPUS(1);
  struct Case {
    std::vector<int64_t> x, y;
    bool trans_x, trans_y;
  };
  const std::vector<Case> cases = {{{4, 3, 5, 6}, {4, 3, 6, 2}, false, false},
                                   {{4, 3, 6, 5}, {2, 6}, true, true},
                                   {{7, 5, 6}, {6, 2}, false, false},
                                   {{4, 3, 5, 6}, {2, 6}, false, true},
                                   {{1, 5, 6}, {6, 2}, false, false},
                                   {{6}, {3, 6, 2}, true, false},
                                   {{2, 1, 5, 6}, {3, 6, 2}, false, false},
                                   {{5, 6}, {3, 2, 6}, false, true}};
  uint64_t seed = 100;
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::PrintToString(c.x) + " x " + ::testing::PrintToString(c.y));
    ProgramBuilder pb;
    pb.op("matmul_v2").in("X", "x").in("Y", "y").out("Out", "out")
        .attr("trans_x", Attribute(c.trans_x)).attr("trans_y", Attribute(c.trans_y));
    pb.op("matmul_v2_grad").in("X", "x").in("Y", "y").in("Out@GRAD", "out")
        .out("X@GRAD", "dx").out("Y@GRAD", "dy")
        .attr("trans_x", Attribute(c.trans_x)).attr("trans_y", Attribute(c.trans_y));
    const Program program = pb.build();
    expect_same(program, {{"x", random_fp32(c.x, seed)}, {"y", random_fp32(c.y, seed + 1)}},
                {"out", "dx", "dy"}, 1e-5, 1e-5);
    expect_same(program, {{"x", random_half(DataType::FP16, c.x, seed + 2)},
                          {"y", random_half(DataType::FP16, c.y, seed + 3)}},
                {"out", "dx", "dy"}, 1e-2, 1e-2);
    seed += 4;
  }
}

}  // namespace
}  // namespace ctp
