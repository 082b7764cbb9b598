// matmul (Paddle's v1) and its grad on the GPU against the CPU kernels: the
// cuBLAS products of matmul_v2 scaled by alpha. FP32 sums in another order
// (cuBLAS): within 1e-5 relative.
#include "tests/gpu/kernels_vs_cpu_util.h"

namespace ctp {
namespace {

using gpu_testing::expect_same;
using gpu_testing::random_fp32;

TEST(GpuKernels, MatmulV1AndGradWithAlphaAsOnTheCpu) {
  CTP_REQUIRE_GPUS(1);
  ProgramBuilder pb;
  pb.op("matmul").in("X", "x").in("Y", "y").out("Out", "out")
      .attr("transpose_Y", Attribute(true)).attr("alpha", Attribute(0.125f));
  pb.op("matmul_grad").in("X", "x").in("Y", "y").in("Out@GRAD", "g")
      .out("X@GRAD", "dx").out("Y@GRAD", "dy")
      .attr("transpose_Y", Attribute(true)).attr("alpha", Attribute(0.125f));
  expect_same(pb.build(),
              {{"x", random_fp32({3, 8, 16}, 91)}, {"y", random_fp32({12, 16}, 92)},
               {"g", random_fp32({3, 8, 12}, 93)}},
              {"out", "dx", "dy"}, 1e-5, 1e-6);
}

}  // namespace
}  // namespace ctp
