// SingleProcessMultiThread against the reference's op order, read off collective.py.
#include <gtest/gtest.h>

#include "program_ir/error.h"
#include "tests/transpiler_test_programs.h"
#include "transpilers/single_process_multi_thread.h"
#include "transpilers/transpile.h"

namespace ctp {
namespace {

using testing::brief_ops;
using testing::build_main;
using testing::build_startup;
using testing::ModelSpec;
using testing::op_types;
using testing::run_main_pass;

TranspileOptions spmt_options(std::vector<std::string> endpoints, int rank, int fuse) {
  TranspileOptions o;
  o.collective.endpoints = std::move(endpoints);
  o.collective.rank = rank;
  o.collective.current_endpoint = o.collective.endpoints[rank];
  o.single_process_multi_thread.fuse_allreduce = fuse;
  return o;
}

const std::string kGrads = "fc_0.w_0@GRAD, fc_0.b_0@GRAD, fc_1.w_0@GRAD, fc_1.b_0@GRAD";

TEST(TranspilerSpmt, SingleHostFusesAfterTheLastGradOp) {
  Program startup = build_startup(ModelSpec{});
  Program main = build_main(ModelSpec{});
  const auto startup_before = brief_ops(startup.global_block());
  const auto before = brief_ops(main.global_block());
  transpile(TranspileMode::kSingleProcessMultiThread,
            spmt_options({"127.0.0.1:6170", "127.0.0.1:6171"}, 1, 1), startup, main);
  auto expected_startup = startup_before;
  expected_startup.push_back("c_comm_init_all () -> () {op_role=0, ring_id=0}");
  EXPECT_EQ(brief_ops(startup.global_block()), expected_startup);

  std::vector<std::string> expected(before.begin(), before.begin() + 6);
  expected.push_back("scale X=[loss@GRAD] -> Out=[loss@GRAD] {op_role=1, scale=0.125f}");
  expected.insert(expected.end(), before.begin() + 6, before.begin() + 11);
  expected.push_back("coalesce_tensor Input=[" + kGrads + "] -> Output=[" + kGrads +
                     "], FusedOutput=[fused_output] {copy_data=true, dtype=5, op_role=0, "
                     "set_constant=false}");
  expected.push_back("c_sync_calc_stream X=[fused_output] -> Out=[fused_output] {op_role=1}");
  expected.push_back(
      "c_allreduce_sum X=[fused_output] -> Out=[fused_output] {op_role=1, ring_id=0}");
  expected.push_back(
      "c_sync_comm_stream X=[fused_output] -> Out=[fused_output] {op_role=1, ring_id=0}");
  expected.insert(expected.end(), before.begin() + 11, before.end());
  EXPECT_EQ(brief_ops(main.global_block()), expected);
  const Var& fused = main.global_block().var("fused_output");
  EXPECT_EQ(fused.shape, (std::vector<int64_t>{1}));
  EXPECT_EQ(fused.dtype, DataType::FP32);
}

TEST(TranspilerSpmt, SeveralHostsUseMultitrainerAndScaleByHostsAndGpus) {
  Program startup = build_startup(ModelSpec{});
  Program main = build_main(ModelSpec{});
  TranspileOptions o =
      spmt_options({"10.0.0.1:1", "10.0.0.1:2", "10.0.0.2:1", "10.0.0.2:2"}, 2, 2);
  o.single_process_multi_thread.gpu_nums = 4;
  transpile(TranspileMode::kSingleProcessMultiThread, o, startup, main);
  const auto s = brief_ops(startup.global_block());
  EXPECT_EQ(s[s.size() - 2],
            "c_gen_nccl_id () -> Out=[nccl_id_0] {endpoint=\"10.0.0.2:1\", op_role=0, "
            "other_endpoints=[\"10.0.0.1:1\", \"10.0.0.1:2\", \"10.0.0.2:2\"], rank=2}");
  EXPECT_EQ(s.back(),
            "c_comm_init_multitrainer X=[nccl_id_0] -> () {ntrainers=4, op_role=0, ring_id=0, "
            "trainer_id=2}");
  const auto m = brief_ops(main.global_block());
  EXPECT_EQ(m[6], "scale X=[loss@GRAD] -> Out=[loss@GRAD] {op_role=1, scale=0.125f}");  // 1/2/4
  EXPECT_EQ(m[12], "c_sync_calc_stream X=[fc_0.w_0@GRAD] -> Out=[fc_0.w_0@GRAD] {op_role=1}");
  EXPECT_EQ(m[13], "c_allreduce_xsum X=[" + kGrads + "] -> Out=[" + kGrads +
                       "] {op_role=1, ring_id=0}");
  EXPECT_EQ(m[14],
            "c_sync_comm_stream X=[fc_0.w_0@GRAD] -> Out=[fc_0.w_0@GRAD] {op_role=1, ring_id=0}");
  EXPECT_EQ(m[15].rfind("sgd ", 0), 0u);
}

TEST(TranspilerSpmt, FuseZeroAllreducesEachGradOnOneRing) {
  Program main = build_main(ModelSpec{});
  run_main_pass(TranspileMode::kSingleProcessMultiThread, spmt_options({"127.0.0.1:1"}, 0, 0), main);
  int allreduces = 0;
  for (const Op& op : main.global_block().ops()) {
    if (op.type != "c_allreduce_sum") continue;
    ++allreduces;
    EXPECT_EQ(op.attr("ring_id")->get<int32_t>(), 0);
  }
  EXPECT_EQ(allreduces, 4);
}

Program program_without_params() {
  ProgramBuilder pb;
  pb.data("x", {-1, 4});
  pb.tmp("loss", {1});
  pb.tmp("loss@GRAD", {1});
  pb.op("mean").in("X", "x").out("Out", "loss").role(op_role::kForward | op_role::kLoss);
  pb.op("fill_constant").out("Out", "loss@GRAD").role(op_role::kBackward | op_role::kLoss);
  return pb.build();
}

TEST(TranspilerSpmt, WithoutParamsOnlyTheLossScaleIsInserted) {
  Program main = program_without_params();
  TranspileOptions o = spmt_options({"10.0.0.1:1", "10.0.0.2:1"}, 0, 1);
  o.single_process_multi_thread.gpu_nums = 2;
  run_main_pass(TranspileMode::kSingleProcessMultiThread, o, main);
  // No params: 1/gpu_nums, not divided by the host count.
  EXPECT_EQ(op_types(main.global_block()),
            (std::vector<std::string>{"mean", "fill_constant", "scale"}));
  EXPECT_EQ(main.global_block().ops().back().attr("scale")->get<float>(), 0.5f);

  Program untouched = program_without_params();
  o.single_process_multi_thread.loss_scale = 0;
  run_main_pass(TranspileMode::kSingleProcessMultiThread, o, untouched);
  EXPECT_EQ(untouched, program_without_params());
}

TEST(TranspilerSpmt, LossScaleZeroKeepsTheAllreduce) {
  Program main = build_main(ModelSpec{});
  TranspileOptions o = spmt_options({"127.0.0.1:1"}, 0, 1);
  o.single_process_multi_thread.loss_scale = 0;
  run_main_pass(TranspileMode::kSingleProcessMultiThread, o, main);
  const auto types = op_types(main.global_block());
  EXPECT_EQ(std::count(types.begin(), types.end(), "scale"), 0);
  EXPECT_EQ(std::count(types.begin(), types.end(), "coalesce_tensor"), 1);
}

TEST(TranspilerSpmt, OneEndpointIsAllowedAndOnlyOneRing) {
  Program startup = build_startup(ModelSpec{});
  Program main = build_main(ModelSpec{});
  EXPECT_NO_THROW(transpile(TranspileMode::kSingleProcessMultiThread,
                            spmt_options({"127.0.0.1:1"}, 0, 1), startup, main));
  TranspileOptions o = spmt_options({"127.0.0.1:1"}, 0, 1);
  o.collective.nrings = 2;
  EXPECT_THROW(transpile(TranspileMode::kSingleProcessMultiThread, o, startup, main), Error);
  o.collective.nrings = 1;
  o.single_process_multi_thread.gpu_nums = 0;
  EXPECT_THROW(transpile(TranspileMode::kSingleProcessMultiThread, o, startup, main), Error);
}

}  // namespace
}  // namespace ctp
