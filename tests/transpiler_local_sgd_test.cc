// LocalSGD against the reference's op order, read off collective.py.
#include <gtest/gtest.h>

#include "program_ir/error.h"
#include "tests/transpiler_test_programs.h"
#include "transpilers/local_sgd.h"
#include "transpilers/transpile.h"

namespace ctp {
namespace {

using testing::brief_ops;
using testing::build_main;
using testing::build_startup;
using testing::ModelSpec;
using testing::options_for;
using testing::run_main_pass;

std::string optimize(const std::string& type, const std::string& x, const std::string& out,
                     const std::string& extra = "") {
  return type + " X=[" + x + "] -> Out=[" + out + "] {op_role=2" + extra + "}";
}
std::string sub(const std::string& param) {
  return "elementwise_sub X=[" + param + "@SNAPSHOT], Y=[" + param + "] -> Out=[" + param +
         "] {op_role=2}";
}

TEST(TranspilerLocalSgd, MainProgramMatchesReferenceOrder) {
  ModelSpec spec;
  spec.layers = 1;  // params fc_0.w_0, fc_0.b_0; sgd ops at 7 and 8
  Program main = build_main(spec);
  const auto before = brief_ops(main.global_block());
  ASSERT_EQ(before.size(), 9u);
  run_main_pass(TranspileMode::kLocalSgd, options_for(4, 3, 3), main);
  std::vector<std::string> expected(before.begin(), before.begin() + 8);  // through sgd(w)
  expected.push_back(sub("fc_0.w_0"));
  expected.push_back(optimize("c_sync_calc_stream", "fc_0.w_0", "fc_0.w_0"));
  expected.push_back(optimize("c_allreduce_sum", "fc_0.w_0", "fc_0.w_0", ", ring_id=1"));
  expected.push_back(before[8]);  // sgd(b): the reverse walk reaches it first, ring 0
  expected.push_back(sub("fc_0.b_0"));
  expected.push_back(optimize("c_sync_calc_stream", "fc_0.b_0", "fc_0.b_0"));
  expected.push_back(optimize("c_allreduce_sum", "fc_0.b_0", "fc_0.b_0", ", ring_id=0"));
  // c_sync_comm_stream names the last param the walk saw (fc_0.w_0).
  for (int r = 0; r < 3; ++r)
    expected.push_back(optimize("c_sync_comm_stream", "fc_0.w_0", "fc_0.w_0",
                                ", ring_id=" + std::to_string(r)));
  // Then forward op order (the reverse of the walk).
  for (const char* p : {"fc_0.w_0", "fc_0.b_0"}) {
    expected.push_back(optimize("scale", p, p, ", scale=0.25f"));
    expected.push_back(sub(p));
    expected.push_back(optimize("assign", p, std::string(p) + "@SNAPSHOT"));
  }
  EXPECT_EQ(brief_ops(main.global_block()), expected);
  const Var& snapshot = main.global_block().var("fc_0.w_0@SNAPSHOT");
  EXPECT_TRUE(snapshot.persistable);
  EXPECT_TRUE(snapshot.stop_gradient);
  EXPECT_EQ(snapshot.shape, (std::vector<int64_t>{16, 16}));
}

TEST(TranspilerLocalSgd, SharedParamGetsDuplicatedOps) {
  ModelSpec spec;
  spec.layers = 1;
  Program main = build_main(spec);
  // A second update of fc_0.w_0, as a program that applies two optimizers to it would have.
  Op again = main.global_block().ops().back();
  again.set_input("Param", {"fc_0.w_0"});
  main.global_block().append_op(again);
  run_main_pass(TranspileMode::kLocalSgd, options_for(2, 0, 1), main);
  int scales = 0;
  for (const Op& op : main.global_block().ops())
    scales += op.type == "scale" && op.input("X")->front() == "fc_0.w_0";
  EXPECT_EQ(scales, 2);
}

TEST(TranspilerLocalSgd, StartupSnapshotsNonDistributedParams) {
  ModelSpec spec;
  spec.layers = 1;
  spec.distributed = {"fc_0.b_0"};
  Program startup = build_startup(spec);
  Program main = build_main(spec);
  transpile(TranspileMode::kLocalSgd, options_for(2, 0, 1), startup, main);
  const auto ops = brief_ops(startup.global_block());
  ASSERT_GE(ops.size(), 2u);
  EXPECT_EQ(ops[ops.size() - 2],
            "c_sync_comm_stream X=[fc_0.b_0] -> Out=[fc_0.b_0] {op_role=0, ring_id=0}");
  EXPECT_EQ(ops.back(), "assign X=[fc_0.w_0] -> Out=[fc_0.w_0@SNAPSHOT] {op_role=0}");
  EXPECT_TRUE(startup.global_block().has_var("fc_0.w_0@SNAPSHOT"));
  EXPECT_FALSE(startup.global_block().has_var("fc_0.b_0@SNAPSHOT"));
  // The distributed param's update is skipped in main, but no snapshot is made for it.
  EXPECT_FALSE(main.global_block().has_var("fc_0.b_0@SNAPSHOT"));
}

TEST(TranspilerLocalSgd, MainSnapshotTakesTheParamDtype) {
  ModelSpec spec;
  spec.layers = 1;
  spec.grad_dtype = DataType::FP16;
  Program main = build_main(spec);
  run_main_pass(TranspileMode::kLocalSgd, options_for(2, 0), main);
  EXPECT_EQ(main.global_block().var("fc_0.w_0@SNAPSHOT").dtype, DataType::FP16);
}

TEST(TranspilerLocalSgd, NoUpdateOpFailsLikeTheReference) {
  Program main = build_main(ModelSpec{});
  auto& ops = main.global_block().ops();
  while (ops.back().type == "sgd") ops.pop_back();
  try {
    run_main_pass(TranspileMode::kLocalSgd, options_for(2, 0), main);
    FAIL() << "expected ctp::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no update op"), std::string::npos) << e.what();
  }
}

TEST(TranspilerLocalSgd, UndeclaredParamNamesTheOp) {
  ModelSpec spec;
  spec.layers = 1;
  Program main = build_main(spec);
  main.global_block().ops().back().set_input("Param", {"ghost"});
  try {
    run_main_pass(TranspileMode::kLocalSgd, options_for(2, 0), main);
    FAIL() << "expected ctp::Error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "local_sgd main: block 0, op 8 'sgd': Param 'ghost' is not declared in block 0");
  }
}

TEST(TranspilerLocalSgd, ExistingSnapshotWithAnotherShapeIsAnError) {
  ModelSpec spec;
  spec.layers = 1;
  Program main = build_main(spec);
  main.global_block().add_var(Var{.name = "fc_0.b_0@SNAPSHOT", .shape = {3}, .persistable = true});
  EXPECT_THROW(run_main_pass(TranspileMode::kLocalSgd, options_for(2, 0), main), Error);
}

}  // namespace
}  // namespace ctp
