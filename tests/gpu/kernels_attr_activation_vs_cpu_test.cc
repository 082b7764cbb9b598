// The CUDA kernels of relu6, hard_sigmoid, hard_swish and swish (forward and
// grad) against the CPU kernels, in FP32, FP64 and FP16/BF16. The piecewise
// ones agree within rounding of their few products (nvcc may fuse a
// multiply-add); swish's exp differs between the C library and CUDA by an
// ulp or two: a few FP32 ulps.
#include "tests/gpu/kernels_vs_cpu_util.h"

namespace ctp {
namespace {

using gpu_testing::expect_same;
using gpu_testing::random_fp32;
using gpu_testing::random_half;

// Each activation (non-default attributes, so the inputs in [-1, 1) cross
// every kink) and its grad: Out and X@GRAD compared.
Program attr_activations_program() {
  ProgramBuilder pb;
  struct Case {
    const char* type;
    bool reads_out;
    std::vector<std::pair<const char*, float>> attrs;
  };
  const std::vector<Case> cases = {
      {"relu6", true, {{"threshold", 0.5f}}},
      {"hard_sigmoid", true, {{"slope", 1.5f}}},
      {"hard_swish", false, {{"threshold", 0.9f}, {"scale", 2.0f}, {"offset", 0.2f}}},
      {"swish", false, {{"beta", 1.7f}}}};
  for (const Case& c : cases) {
    const std::string t = c.type;
    auto fwd = pb.op(t);
    fwd.in("X", "x").out("Out", t + "_out");
    auto grad = pb.op(t + "_grad");
    grad.in(c.reads_out ? "Out" : "X", c.reads_out ? t + "_out" : "x")
        .in("Out@GRAD", "g")
        .out("X@GRAD", t + "_dx");
    for (const auto& [name, value] : c.attrs) {
      fwd.attr(name, Attribute(value));
      grad.attr(name, Attribute(value));
    }
  }
  return pb.build();
}

std::vector<std::string> outputs() {
  std::vector<std::string> names;
  for (const char* t : {"relu6", "hard_sigmoid", "hard_swish", "swish"}) {
    names.push_back(std::string(t) + "_out");
    names.push_back(std::string(t) + "_dx");
  }
  return names;
}

TEST(GpuAttrActivationKernels, ForwardAndGradsInFp32AndFp64) {
  CTP_REQUIRE_GPUS(1);
  const Program program = attr_activations_program();
  expect_same(program, {{"x", random_fp32({6, 50}, 11)}, {"g", random_fp32({6, 50}, 12)}},
              outputs(), 4e-7, 1e-7);
  expect_same(program, {{"x", test::random_tensor({6, 50}, 13)},
                        {"g", test::random_tensor({6, 50}, 14)}},
              outputs(), 1e-14, 1e-15);
}

TEST(GpuAttrActivationKernels, ForwardAndGradsIn16Bits) {
  CTP_REQUIRE_GPUS(1);
  const Program program = attr_activations_program();
  for (DataType dt : {DataType::FP16, DataType::BF16}) {
    SCOPED_TRACE(std::string(to_string(dt)));
    // Computed in float, rounded once: within one 16-bit ulp.
    expect_same(program, {{"x", random_half(dt, {6, 50}, 15)}, {"g", random_half(dt, {6, 50}, 16)}},
                outputs(), 1e-2, 1e-3);
  }
}

}  // namespace
}  // namespace ctp
