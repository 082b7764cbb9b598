// The CUDA kernels call the same rules (ops/schema/meta_*.h) as the schema's
// shape inference and the CPU kernels: every case of tests/op_rule_cases.h
// op_rule_cases_cv.h and op_rule_cases_attention.h fails on the GPU with the text inference gives
// (tests/op_rules_test.cc checks the CPU kernels).
#include <gtest/gtest.h>

#include "tests/gpu/gpu_test_util.h"
#include "tests/op_rule_cases.h"
#include "tests/op_rule_cases_attention.h"
#include "tests/op_rule_cases_cv.h"

namespace ctp {
namespace {

TEST(GpuOpRules, CudaKernelsFailWithTheSchemasText) {
  CTP_REQUIRE_GPUS(1);
  const gpu_testing::GpuRank gpu(0);
  std::vector<test::RuleCase> cases = test::rule_cases();
  for (test::RuleCase& c : test::cv_rule_cases()) cases.push_back(std::move(c));
  for (test::RuleCase& c : test::attention_rule_cases()) cases.push_back(std::move(c));
  for (const test::RuleCase& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string expected = "block 0, op 1 '" + c.op.type + "': " + c.message;
    EXPECT_EQ(test::infer_error(c), expected);
    EXPECT_EQ(test::run_error(c, gpu.services), expected);
  }
}

}  // namespace
}  // namespace ctp
