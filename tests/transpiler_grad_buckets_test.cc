// GradAllReduce with gradient buckets (GradAllReduceOptions::bucket_bytes,
// ctp's schedule past the reference): gradients join buckets in the order
// the backward pass makes them, and each bucket is coalesced and all-reduced
// right after the op that fills it.
#include <gtest/gtest.h>

#include "program_ir/error.h"
#include "tests/transpiler_test_programs.h"
#include "transpilers/grad_allreduce.h"
#include "transpilers/transpile.h"

namespace ctp {
namespace {

using testing::brief;
using testing::brief_allreduce;
using testing::brief_sync_calc;
using testing::brief_sync_comm;
using testing::brief_ops;
using testing::build_main;
using testing::build_startup;
using testing::ModelSpec;
using testing::options_for;
using testing::run_main_pass;

TranspileOptions bucketed(int64_t bytes, int nrings = 2) {
  TranspileOptions o = options_for(2, 0, nrings);
  o.grad_allreduce.bucket_bytes = bytes;
  return o;
}

std::string coalesce(const std::vector<std::string>& grads, const std::string& fused,
                     int dtype = 5) {
  std::string list;
  for (const std::string& g : grads) list += (list.empty() ? "" : ", ") + g;
  return "coalesce_tensor Input=[" + list + "] -> Output=[" + list + "], FusedOutput=[" + fused +
         "] {copy_data=true, dtype=" + std::to_string(dtype) + ", op_role=1, use_align=true}";
}

// The test model's backward makes fc_1.b_0@GRAD (64 bytes), fc_1.w_0@GRAD
// (1024), fc_0.b_0@GRAD (64), fc_0.w_0@GRAD (1024), one op each, ops 7-10.
TEST(TranspilerGradBuckets, ABucketClosesAfterTheOpThatFillsIt) {
  Program startup = build_startup(ModelSpec{});
  Program main = build_main(ModelSpec{});
  const std::vector<std::string> before = brief_ops(main.global_block());
  transpile(TranspileMode::kGradAllReduce, bucketed(1088), startup, main);
  std::vector<std::string> expected(before.begin(), before.begin() + 6);
  expected.push_back("scale X=[loss@GRAD] -> Out=[loss@GRAD] {op_role=1, scale=0.5f}");
  expected.insert(expected.end(), before.begin() + 6, before.begin() + 9);
  expected.push_back(coalesce({"fc_1.b_0@GRAD", "fc_1.w_0@GRAD"}, "grad_bucket_0"));
  expected.push_back(brief_sync_calc("grad_bucket_0"));
  expected.push_back(brief_allreduce("grad_bucket_0", 0));
  expected.insert(expected.end(), before.begin() + 9, before.begin() + 11);
  expected.push_back(coalesce({"fc_0.b_0@GRAD", "fc_0.w_0@GRAD"}, "grad_bucket_1"));
  expected.push_back(brief_sync_calc("grad_bucket_1"));
  expected.push_back(brief_allreduce("grad_bucket_1", 1));
  expected.push_back(brief_sync_comm("grad_bucket_1", 0));
  expected.push_back(brief_sync_comm("grad_bucket_1", 1));
  expected.insert(expected.end(), before.begin() + 11, before.end());
  EXPECT_EQ(brief_ops(main.global_block()), expected);
  EXPECT_TRUE(main.global_block().has_var("grad_bucket_0"));
  EXPECT_EQ(main.global_block().var("grad_bucket_1").dtype, DataType::FP32);
}

TEST(TranspilerGradBuckets, BucketSizeSetsHowManyCallsThereAre) {
  const auto collectives = [](int64_t bytes) {
    Program main = build_main(ModelSpec{});
    run_main_pass(TranspileMode::kGradAllReduce, bucketed(bytes, 1), main);
    std::vector<std::string> fused;
    for (const Op& op : main.global_block().ops())
      if (op.type == "coalesce_tensor") fused.push_back(brief(op));
    return fused;
  };
  // Larger than the model: one bucket after the last gradient, in backward order.
  EXPECT_EQ(collectives(int64_t{1} << 30),
            (std::vector<std::string>{coalesce({"fc_1.b_0@GRAD", "fc_1.w_0@GRAD", "fc_0.b_0@GRAD",
                                                "fc_0.w_0@GRAD"},
                                               "grad_bucket_0")}));
  // One byte: a bucket per backward op.
  EXPECT_EQ(collectives(1).size(), 4u);
  // 1024 bytes: a weight's gradient fills a bucket; a bias's does not.
  EXPECT_EQ(collectives(1024),
            (std::vector<std::string>{coalesce({"fc_1.b_0@GRAD", "fc_1.w_0@GRAD"}, "grad_bucket_0"),
                                      coalesce({"fc_0.b_0@GRAD", "fc_0.w_0@GRAD"},
                                               "grad_bucket_1")}));
}

TEST(TranspilerGradBuckets, ADtypeChangeStartsANewBucket) {
  ProgramBuilder pb;
  pb.param("a", {4});
  pb.tmp("a@GRAD", {4});
  pb.param("b", {4});
  pb.tmp("b@GRAD", {4}, DataType::BF16);
  pb.param("c", {4});
  pb.tmp("c@GRAD", {4}, DataType::BF16);
  for (const char* p : {"a", "b", "c"})
    pb.op("some_grad").out("Out", std::string(p) + "@GRAD").role(op_role::kBackward)
        .role_var({p, std::string(p) + "@GRAD"});
  pb.op("sgd").in("Param", "a").out("ParamOut", "a").role(op_role::kOptimize);
  Program main = pb.build();
  run_main_pass(TranspileMode::kGradAllReduce, bucketed(int64_t{1} << 20, 1), main);
  const std::vector<std::string> ops = brief_ops(main.global_block());
  ASSERT_EQ(ops.size(), 11u);
  EXPECT_EQ(ops[1], coalesce({"a@GRAD"}, "grad_bucket_0"));  // closed when b's BF16 grad came
  EXPECT_EQ(ops[6], coalesce({"b@GRAD", "c@GRAD"}, "grad_bucket_1", 22));
  EXPECT_EQ(main.global_block().var("grad_bucket_1").dtype, DataType::BF16);
  EXPECT_EQ(ops[9], brief_sync_comm("grad_bucket_1", 0));
}

TEST(TranspilerGradBuckets, DistributedParamsStayOutOfBuckets) {
  ModelSpec spec;
  spec.distributed = {"fc_1.b_0"};
  Program main = build_main(spec);
  run_main_pass(TranspileMode::kGradAllReduce, bucketed(int64_t{1} << 30), main);
  int buckets = 0;
  for (const Op& op : main.global_block().ops()) {
    if (op.type != "coalesce_tensor") continue;
    ++buckets;
    EXPECT_EQ(brief(op), coalesce({"fc_1.w_0@GRAD", "fc_0.b_0@GRAD", "fc_0.w_0@GRAD"},
                                  "grad_bucket_0"));
  }
  EXPECT_EQ(buckets, 1);
}

TEST(TranspilerGradBuckets, BucketNamesSkipVarsTheProgramHas) {
  ProgramBuilder pb;
  pb.param("a", {4});
  pb.tmp("a@GRAD", {4});
  pb.tmp("grad_bucket_0", {4});
  pb.op("some_grad").out("Out", "a@GRAD").role(op_role::kBackward).role_var({"a", "a@GRAD"});
  Program main = pb.build();
  run_main_pass(TranspileMode::kGradAllReduce, bucketed(1024, 1), main);
  EXPECT_EQ(brief_ops(main.global_block())[1], coalesce({"a@GRAD"}, "grad_bucket_1"));
}

TEST(TranspilerGradBuckets, ErrorsNameTheGradOrTheOption) {
  ProgramBuilder pb;
  pb.param("a", {4});
  pb.tmp("a@GRAD", {-1, 4});
  pb.op("some_grad").out("Out", "a@GRAD").role(op_role::kBackward).role_var({"a", "a@GRAD"});
  Program main = pb.build();
  try {
    run_main_pass(TranspileMode::kGradAllReduce, bucketed(1024), main);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("grad 'a@GRAD' has shape [-1, 4]"), std::string::npos)
        << e.what();
  }
  Program startup = build_startup(ModelSpec{});
  Program model = build_main(ModelSpec{});
  EXPECT_THROW(transpile(TranspileMode::kGradAllReduce, bucketed(-1), startup, model), Error);
  try {
    transpile(TranspileMode::kLocalSgd, bucketed(1024), startup, model);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("a grad_allreduce schedule"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace ctp
