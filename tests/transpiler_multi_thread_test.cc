// MultiThread against the reference's op order, read off collective.py.
#include <gtest/gtest.h>

#include "program_ir/error.h"
#include "tests/transpiler_test_programs.h"
#include "transpilers/multi_thread.h"
#include "transpilers/transpile.h"

namespace ctp {
namespace {

using testing::brief_ops;
using testing::build_main;
using testing::build_startup;
using testing::ModelSpec;
using testing::op_types;
using testing::options_for;
using testing::run_main_pass;

TranspileOptions mt_options(int nranks, int rank, MultiThreadTransMode mode, int nrings = 1) {
  TranspileOptions o = options_for(nranks, rank, nrings);
  o.multi_thread.trans_mode = mode;
  return o;
}

std::string in_place(const std::string& type, const std::string& v, const std::string& attrs) {
  return type + " X=[" + v + "] -> Out=[" + v + "] {" + attrs + "}";
}

TEST(TranspilerMultiThread, FuseSplitsSegmentsByDtypeAndInsertsThemReversed) {
  Program main = build_main(ModelSpec{});
  main.global_block().var("fc_0.b_0@GRAD").dtype = DataType::FP16;
  const auto before = brief_ops(main.global_block());
  NameGenerator names;
  run_main_pass(TranspileMode::kMultiThread, mt_options(2, 0, MultiThreadTransMode::kFuseAllReduce), names, main);
  // Grads in reverse op order: fc_0.w_0 (FP32), fc_0.b_0 (FP16), fc_1.w_0, fc_1.b_0 (FP32).
  const std::string f0 = "FusedOutput_fc_0.w_0@GRAD_0";
  const std::string f1 = "FusedOutput_fc_0.b_0@GRAD_0";
  const std::string f2 = "FusedOutput_fc_1.w_0@GRAD_0";
  std::vector<std::string> expected(before.begin(), before.begin() + 6);
  expected.push_back("scale X=[loss@GRAD] -> Out=[loss@GRAD] {op_role=1, scale=0.5f}");
  expected.insert(expected.end(), before.begin() + 6, before.begin() + 11);
  auto coalesce = [](const std::string& members, const std::string& out, int dtype) {
    return "coalesce_tensor Input=[" + members + "] -> Output=[" + members + "], FusedOutput=[" +
           out + "] {copy_data=true, dtype=" + std::to_string(dtype) +
           ", op_role=1, use_align=true}";
  };
  expected.push_back(coalesce("fc_1.w_0@GRAD, fc_1.b_0@GRAD", f2, 5));
  expected.push_back(coalesce("fc_0.b_0@GRAD", f1, 4));
  expected.push_back(coalesce("fc_0.w_0@GRAD", f0, 5));
  for (const std::string& f : {f2, f1, f0}) {
    expected.push_back(in_place("c_sync_calc_stream", f, "op_role=1"));
    expected.push_back(
        in_place("c_allreduce_sum", f, "op_role=1, ring_id=0, use_calc_stream=false"));
  }
  expected.push_back(in_place("c_sync_comm_stream", f0, "op_role=1, ring_id=0"));
  expected.insert(expected.end(), before.begin() + 11, before.end());
  EXPECT_EQ(brief_ops(main.global_block()), expected);
  EXPECT_EQ(main.global_block().var(f1).dtype, DataType::FP16);
}

TEST(TranspilerMultiThread, FuseCutsSegmentsAt128Grads) {
  ModelSpec spec;
  spec.layers = 70;  // 140 grads
  Program main = build_main(spec);
  NameGenerator names;
  run_main_pass(TranspileMode::kMultiThread, mt_options(2, 0, MultiThreadTransMode::kFuseAllReduce), names, main);
  std::vector<std::size_t> sizes;
  for (const Op& op : main.global_block().ops())
    if (op.type == "coalesce_tensor") sizes.push_back(op.input("Input")->size());
  EXPECT_EQ(sizes, (std::vector<std::size_t>{12, 128}));  // inserted in reverse
}

TEST(TranspilerMultiThread, FuseWithoutOptimizerOpAddsNothingButTheScale) {
  Program main = build_main(ModelSpec{});
  auto& ops = main.global_block().ops();
  while (ops.back().type == "sgd") ops.pop_back();
  const std::size_t count = ops.size();
  NameGenerator names;
  run_main_pass(TranspileMode::kMultiThread, mt_options(2, 0, MultiThreadTransMode::kFuseAllReduce), names, main);
  EXPECT_EQ(main.global_block().op_count(), count + 1);
  EXPECT_FALSE(main.global_block().has_var("FusedOutput_fc_0.w_0@GRAD_0"));
}

TEST(TranspilerMultiThread, AllGatherSplitsAdamIntoOneCopyPerRank) {
  ModelSpec spec;
  spec.layers = 1;
  spec.optimizer = testing::Optimizer::kAdam;
  Program main = build_main(spec);
  const auto before = brief_ops(main.global_block());
  ASSERT_EQ(before.size(), 9u);
  TranspileOptions o = mt_options(2, 1, MultiThreadTransMode::kAllGather);
  o.multi_thread.gpu_num = 2;  // 4 pieces
  NameGenerator names;
  run_main_pass(TranspileMode::kMultiThread, o, names, main);
  std::vector<std::string> expected(before.begin(), before.begin() + 4);
  expected.push_back("scale X=[loss@GRAD] -> Out=[loss@GRAD] {op_role=1, scale=0.5f}");
  expected.insert(expected.end(), before.begin() + 4, before.begin() + 6);  // mean_grad, add_grad
  expected.push_back(in_place("c_sync_calc_stream", "fc_0.b_0@GRAD", "op_role=1"));
  expected.push_back("c_allgather X=[fc_0.b_0@GRAD] -> Out=[fc_0.b_0_allgather] {nranks=4, "
                     "op_role=1, ring_id=0}");
  expected.push_back(before[6]);  // mul_grad
  expected.push_back(in_place("c_sync_calc_stream", "fc_0.w_0@GRAD", "op_role=1"));
  expected.push_back("c_allgather X=[fc_0.w_0@GRAD] -> Out=[fc_0.w_0_allgather] {nranks=4, "
                     "op_role=1, ring_id=0}");
  expected.push_back(in_place("c_sync_comm_stream", "fc_0.b_0@GRAD", "op_role=1, ring_id=0"));
  for (const std::string p : {"fc_0.w_0", "fc_0.b_0"}) {
    expected.push_back("split X=[" + p + "_allgather] -> Out=[" + p + "_0, " + p + "_1, " + p +
                       "_2, " + p + "_3] {axis=0, num=4, op_role=0}");
    for (int i = 0; i < 4; ++i)
      expected.push_back(
          "adam Param=[" + p + "], LearningRate=[learning_rate_0], Moment1=[" + p +
          "_moment1_0], Moment2=[" + p + "_moment2_0], Beta1Pow=[" + p +
          "_beta1_pow_acc_0], Beta2Pow=[" + p + "_beta2_pow_acc_0], Grad=[" + p + "_" +
          std::to_string(i) + "] -> ParamOut=[" + p + "], Moment1Out=[" + p +
          "_moment1_0], Moment2Out=[" + p + "_moment2_0], Beta1PowOut=[" + p +
          "_beta1_pow_acc_0], Beta2PowOut=[" + p +
          "_beta2_pow_acc_0] {beta1=0.899999976f, beta2=0.999000013f, epsilon=9.99999994e-09f, "
          "lazy_mode=false, min_row_size_to_use_multithread=1000L, op_role=0}");
  }
  EXPECT_EQ(brief_ops(main.global_block()), expected);
  const Var& gathered = main.global_block().var("fc_0.w_0_allgather");
  EXPECT_EQ(gathered.shape, (std::vector<int64_t>{4, 16, 16}));
  EXPECT_EQ(main.global_block().var("fc_0.b_0_3").shape, (std::vector<int64_t>{16}));
}

TEST(TranspilerMultiThread, AllGatherDeclaresUnusedVarsForDistributedParams) {
  ModelSpec spec;
  spec.layers = 1;
  spec.optimizer = testing::Optimizer::kMomentum;
  spec.distributed = {"fc_0.w_0"};
  Program main = build_main(spec);
  NameGenerator names;
  run_main_pass(TranspileMode::kMultiThread, mt_options(2, 0, MultiThreadTransMode::kAllGather), names, main);
  EXPECT_TRUE(main.global_block().has_var("fc_0.w_0_allgather"));
  for (const Op& op : main.global_block().ops())
    if (op.type == "c_allgather") {
      EXPECT_EQ(op.input("X")->front(), "fc_0.b_0@GRAD");
    }
  // momentum is not split: only adam and lamb are.
  const auto types = op_types(main.global_block());
  EXPECT_EQ(std::count(types.begin(), types.end(), "momentum"), 2);
  EXPECT_EQ(std::count(types.begin(), types.end(), "split"), 0);
}

TEST(TranspilerMultiThread, AllGatherAdamWithoutGatheredGradIsAnError) {
  ModelSpec spec;
  spec.layers = 1;
  spec.optimizer = testing::Optimizer::kAdam;
  Program main = build_main(spec);
  // No backward op names fc_0.b_0 any more, so no fc_0.b_0_allgather exists.
  auto it = std::next(main.global_block().ops().begin(), 5);
  ASSERT_EQ(it->type, "elementwise_add_grad");
  it->remove_attr(kOpRoleVarAttr);
  NameGenerator names;
  try {
    run_main_pass(TranspileMode::kMultiThread, mt_options(2, 0, MultiThreadTransMode::kAllGather), names, main);
    FAIL() << "expected ctp::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'adam': gathered grad 'fc_0.b_0_allgather'"),
              std::string::npos)
        << e.what();
  }
}

TEST(TranspilerMultiThread, AllReduceModeIsGradAllReduceWithoutBroadcast) {
  Program startup = build_startup(ModelSpec{});
  Program main = build_main(ModelSpec{});
  transpile(TranspileMode::kMultiThread, mt_options(3, 2, MultiThreadTransMode::kAllReduce, 2),
            startup, main);
  const auto types = op_types(main.global_block());
  EXPECT_EQ(std::count(types.begin(), types.end(), "c_allreduce_sum"), 4);
  EXPECT_EQ(std::count(types.begin(), types.end(), "c_sync_comm_stream"), 2);
  const auto s = op_types(startup.global_block());
  EXPECT_EQ(std::count(s.begin(), s.end(), "c_comm_init_multitrainer"), 2);
  EXPECT_EQ(std::count(s.begin(), s.end(), "c_broadcast"), 0);
}

TEST(TranspilerMultiThread, OneEndpointInitialisesAllDevicesAndScalesByOne) {
  Program startup = build_startup(ModelSpec{});
  Program main = build_main(ModelSpec{});
  transpile(TranspileMode::kMultiThread, mt_options(1, 0, MultiThreadTransMode::kFuseAllReduce),
            startup, main);
  EXPECT_EQ(brief_ops(startup.global_block()).back(),
            "c_comm_init_all () -> () {op_role=0, ring_id=0}");
  EXPECT_EQ(brief_ops(main.global_block())[6],
            "scale X=[loss@GRAD] -> Out=[loss@GRAD] {op_role=1, scale=1f}");
}

TEST(TranspilerMultiThread, DefaultsMatchTheReference) {
  MultiThreadOptions defaults;
  EXPECT_EQ(defaults.gpu_num, 9);  // FLAGS_selected_gpus default "0,...,8"
  EXPECT_EQ(defaults.trans_mode, MultiThreadTransMode::kFuseAllReduce);
  SingleProcessMultiThreadOptions spmt;
  EXPECT_EQ(spmt.gpu_nums, 8);
  EXPECT_EQ(spmt.fuse_allreduce, 1);
  EXPECT_EQ(spmt.loss_scale, 1);
}

}  // namespace
}  // namespace ctp
