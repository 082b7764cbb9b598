// GradAllReduce against the reference's op order, read off collective.py.
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


TEST(TranspilerGradAllReduce, MainProgramMatchesReferenceOrder) {
  Program startup = build_startup(ModelSpec{});
  Program main = build_main(ModelSpec{});
  const std::vector<std::string> before = brief_ops(main.global_block());
  transpile(TranspileMode::kGradAllReduce, options_for(2, 1), startup, main);
  std::vector<std::string> expected(before.begin(), before.begin() + 6);  // up to loss@GRAD
  expected.push_back("scale X=[loss@GRAD] -> Out=[loss@GRAD] {op_role=1, scale=0.5f}");
  expected.push_back(before[6]);  // mean_grad
  expected.push_back(before[7]);  // elementwise_add_grad of fc_1.b_0
  expected.push_back(brief_sync_calc("fc_1.b_0@GRAD"));
  expected.push_back(brief_allreduce("fc_1.b_0@GRAD", 1));
  expected.push_back(before[8]);  // mul_grad of fc_1.w_0
  expected.push_back(brief_sync_calc("fc_1.w_0@GRAD"));
  expected.push_back(brief_allreduce("fc_1.w_0@GRAD", 0));
  expected.push_back(before[9]);
  expected.push_back(brief_sync_calc("fc_0.b_0@GRAD"));
  expected.push_back(brief_allreduce("fc_0.b_0@GRAD", 1));
  expected.push_back(before[10]);
  expected.push_back(brief_sync_calc("fc_0.w_0@GRAD"));
  expected.push_back(brief_allreduce("fc_0.w_0@GRAD", 0));
  // The last grad the reverse walk saw, i.e. the first backward op's.
  expected.push_back(brief_sync_comm("fc_1.b_0@GRAD", 0));
  expected.push_back(brief_sync_comm("fc_1.b_0@GRAD", 1));
  expected.insert(expected.end(), before.begin() + 11, before.end());
  EXPECT_EQ(brief_ops(main.global_block()), expected);
}

TEST(TranspilerGradAllReduce, GradsOfOneOpComeOutInReversePairOrder) {
  ProgramBuilder pb;
  for (const char* p : {"a", "b", "c"}) {
    pb.param(p, {4});
    pb.tmp(std::string(p) + "@GRAD", {4});
  }
  pb.op("fused_grad").out("Out", std::vector<std::string>{"a@GRAD", "b@GRAD", "c@GRAD"})
      .role(op_role::kBackward).role_var({"a", "a@GRAD", "b", "b@GRAD", "c", "c@GRAD"});
  Program main = pb.build();
  TranspileOptions o = options_for(4, 0, 3);
  run_main_pass(TranspileMode::kGradAllReduce, o, main);
  const auto ops = brief_ops(main.global_block());
  ASSERT_EQ(ops.size(), 5u);
  EXPECT_EQ(ops[1], brief_sync_calc("a@GRAD"));
  EXPECT_EQ(ops[2], brief_allreduce("c@GRAD", 2));
  EXPECT_EQ(ops[3], brief_allreduce("b@GRAD", 1));
  EXPECT_EQ(ops[4], brief_allreduce("a@GRAD", 0));
}

TEST(TranspilerGradAllReduce, DistributedParamIsSkippedButMayBeTheLastGradNamed) {
  ModelSpec spec;
  spec.distributed = {"fc_1.b_0"};
  Program main = build_main(spec);
  run_main_pass(TranspileMode::kGradAllReduce, options_for(2, 0, 1), main);
  const auto ops = brief_ops(main.global_block());
  for (const auto& line : ops) EXPECT_EQ(line.find("c_allreduce_sum X=[fc_1.b_0@GRAD]"), std::string::npos);
  // fc_1.b_0's pair is the last the reverse walk reads, so the comm sync names it.
  EXPECT_NE(std::find(ops.begin(), ops.end(), brief_sync_comm("fc_1.b_0@GRAD", 0)), ops.end());
}

TEST(TranspilerGradAllReduce, NoOptimizerOpMeansNoCommSync) {
  Program main = build_main(ModelSpec{});
  auto& ops = main.global_block().ops();
  while (ops.back().type == "sgd") ops.pop_back();
  run_main_pass(TranspileMode::kGradAllReduce, options_for(2, 0), main);
  for (const Op& op : main.global_block().ops()) EXPECT_NE(op.type, "c_sync_comm_stream");
}

TEST(TranspilerGradAllReduce, ScaleIsOneOverNranksAsFloat) {
  Program main = build_main(ModelSpec{});
  run_main_pass(TranspileMode::kGradAllReduce, options_for(3, 2), main);
  auto it = std::find_if(main.global_block().ops().begin(), main.global_block().ops().end(),
                         [](const Op& op) { return op.type == "scale"; });
  ASSERT_NE(it, main.global_block().ops().end());
  EXPECT_EQ(it->attr("scale")->type(), AttrType::FLOAT);
  EXPECT_EQ(it->attr("scale")->get<float>(), static_cast<float>(1.0 / 3));
}

TEST(TranspilerGradAllReduce, StartupInitialisesEachRingThenBroadcasts) {
  ModelSpec spec;
  spec.distributed = {"fc_1.b_0"};  // declared last: the comm syncs name it anyway
  Program startup = build_startup(spec);
  Program main = build_main(spec);
  const auto before = brief_ops(startup.global_block());
  transpile(TranspileMode::kGradAllReduce, options_for(3, 1), startup, main);
  std::vector<std::string> expected = before;
  const std::string others = "[\"127.0.0.1:6170\", \"127.0.0.1:6172\"]";
  for (int ring = 0; ring < 2; ++ring) {
    const std::string id = "nccl_id_" + std::to_string(ring);
    expected.push_back("c_gen_nccl_id () -> Out=[" + id +
                       "] {endpoint=\"127.0.0.1:6171\", op_role=0, other_endpoints=" + others +
                       ", rank=1}");
    expected.push_back("c_comm_init X=[" + id + "] -> () {nranks=3, op_role=0, rank=1, ring_id=" +
                       std::to_string(ring) + "}");
  }
  int ring = 0;
  for (const char* p : {"fc_0.w_0", "fc_0.b_0", "fc_1.w_0"}) {
    expected.push_back(std::string("c_broadcast X=[") + p + "] -> Out=[" + p +
                       "] {op_role=0, ring_id=" + std::to_string(ring) + ", root=0}");
    ring = 1 - ring;
  }
  expected.push_back(brief_sync_comm("fc_1.b_0", 0, 0));
  expected.push_back(brief_sync_comm("fc_1.b_0", 1, 0));
  EXPECT_EQ(brief_ops(startup.global_block()), expected);
  const Var& id = startup.global_block().var("nccl_id_1");
  EXPECT_EQ(id.type, VarKind::RAW);
  EXPECT_TRUE(id.persistable);
}

TEST(TranspilerGradAllReduce, StartupWithoutParametersFailsLikeTheReference) {
  Program startup = Program::with_global_block();
  Program main = build_main(ModelSpec{});
  // The reference's rule (the default, auto, would take the update ops'
  // Param inputs and declare them: TranspilerParams.*).
  TranspileOptions o = options_for(2, 0);
  o.collective.params = ParamSource::kMarked;
  try {
    transpile(TranspileMode::kGradAllReduce, o, startup, main);
    FAIL() << "expected ctp::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no parameter"), std::string::npos) << e.what();
  }
}

void expect_error(TranspileMode mode, const TranspileOptions& o, const std::string& fragment) {
  Program startup = build_startup(ModelSpec{});
  Program main = build_main(ModelSpec{});
  const Program startup_before = startup;
  try {
    transpile(mode, o, startup, main);
    FAIL() << "expected ctp::Error containing '" << fragment << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
  EXPECT_EQ(startup, startup_before) << "option errors must leave the programs untouched";
}

TEST(TranspilerGradAllReduce, OptionErrorsMatchTheReference) {
  expect_error(TranspileMode::kGradAllReduce, options_for(1, 0), "must be > 1");
  expect_error(TranspileMode::kLocalSgd, options_for(1, 0), "must be > 1");
  TranspileOptions negative = options_for(2, 0);
  negative.collective.rank = -1;
  expect_error(TranspileMode::kGradAllReduce, negative, "rank must be >= 0");
  TranspileOptions stranger = options_for(2, 0);
  stranger.collective.current_endpoint = "10.0.0.9:1";
  expect_error(TranspileMode::kGradAllReduce, stranger, "'10.0.0.9:1' is not in");
  TranspileOptions no_rings = options_for(2, 0, 0);
  expect_error(TranspileMode::kGradAllReduce, no_rings, "nrings must be >= 1");
  TranspileOptions empty;
  expect_error(TranspileMode::kGradAllReduce, empty, "is not in []");
}

TEST(TranspilerGradAllReduce, RankBeyondTheEndpointsIsAcceptedAsInTheReference) {
  TranspileOptions o = options_for(2, 0);
  o.collective.rank = 5;
  Program startup = build_startup(ModelSpec{});
  Program main = build_main(ModelSpec{});
  EXPECT_NO_THROW(transpile(TranspileMode::kGradAllReduce, o, startup, main));
}

TEST(TranspilerGradAllReduce, UndeclaredGradNamesOpIndexTypeAndVar) {
  Program main = build_main(ModelSpec{});
  main.global_block().remove_var("fc_0.w_0@GRAD");
  try {
    run_main_pass(TranspileMode::kGradAllReduce, options_for(2, 0), main);
    FAIL() << "expected ctp::Error";
  } catch (const Error& e) {
    // mul_grad of layer 0 was op 10; the loss-grad scale inserted before it
    // makes it op 11 when the allreduce walk reads it, as in the reference.
    EXPECT_EQ(std::string(e.what()),
              "grad_allreduce main: block 0, op 11 'mul_grad': op_role_var grad "
              "'fc_0.w_0@GRAD' is not declared in block 0");
  }
}

TEST(TranspilerGradAllReduce, OddOpRoleVarIsAnErrorAtTheOp) {
  Program main = build_main(ModelSpec{});
  auto it = std::next(main.global_block().ops().begin(), 8);
  it->set_attr(kOpRoleVarAttr, Attribute(std::vector<std::string>{"fc_1.w_0"}));
  try {
    run_main_pass(TranspileMode::kGradAllReduce, options_for(2, 0), main);
    FAIL() << "expected ctp::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("op 9 'mul_grad', attr 'op_role_var': has odd length 1"),
              std::string::npos)
        << e.what();
  }
}

TEST(TranspilerGradAllReduce, LossGradOpWithoutOutputIsAnError) {
  Program main = build_main(ModelSpec{});
  auto it = std::next(main.global_block().ops().begin(), 5);
  ASSERT_EQ(it->type, "fill_constant");
  it->mutable_outputs().clear();
  EXPECT_THROW(run_main_pass(TranspileMode::kGradAllReduce, options_for(2, 0), main), Error);
}

TEST(TranspilerGradAllReduce, DefaultsToTwoRings) {
  TranspileOptions o = options_for(2, 0);
  o.collective.nrings.reset();
  Program startup = build_startup(ModelSpec{});
  Program main = build_main(ModelSpec{});
  transpile(TranspileMode::kGradAllReduce, o, startup, main);
  int comm_inits = 0;
  for (const Op& op : startup.global_block().ops()) comm_inits += op.type == "c_comm_init";
  EXPECT_EQ(comm_inits, 2);
}

}  // namespace
}  // namespace ctp
