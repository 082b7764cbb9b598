#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include "program_ir/builder.h"
#include "program_ir/verify.h"

namespace ctp {
namespace {

std::vector<std::string> messages(const Program& p, const OpRegistry& r = OpRegistry::global()) {
  std::vector<std::string> out;
  for (const Diagnostic& d : verify_program(p, r)) out.push_back(d.to_string());
  return out;
}

// A small training step that uses only registered ops, all correct.
ProgramBuilder valid_program() {
  ProgramBuilder pb;
  pb.data("x", {-1, 4});
  pb.param("w", {4, 2});
  pb.tmp("y", {-1, 2});
  pb.tmp("w@GRAD", {4, 2});
  pb.tmp("y@GRAD", {-1, 2});
  pb.persistable("lr", {1});
  pb.op("mul").in("X", "x").in("Y", "w").out("Out", "y").role(op_role::kForward);
  pb.op("mul_grad")
      .in("X", "x")
      .in("Y", "w")
      .in("Out@GRAD", "y@GRAD")
      .out("Y@GRAD", "w@GRAD")
      .role(op_role::kBackward)
      .role_var({"w", "w@GRAD"});
  pb.op("c_allreduce_sum")
      .in("X", "w@GRAD")
      .out("Out", "w@GRAD")
      .attr("ring_id", int32_t{0})
      .role(op_role::kBackward);
  pb.op("sgd")
      .in("Param", "w")
      .in("Grad", "w@GRAD")
      .in("LearningRate", "lr")
      .out("ParamOut", "w")
      .role(op_role::kOptimize)
      .role_var({"w", "w@GRAD"});
  return pb;
}

TEST(Verify, ValidProgramHasNoDiagnostics) {
  ProgramBuilder pb = valid_program();
  EXPECT_TRUE(messages(pb.program()).empty());
}

TEST(Verify, OddOpRoleVar) {
  ProgramBuilder pb = valid_program();
  pb.op("scale").in("X", "w@GRAD").out("Out", "w@GRAD").role(1).role_var({"w"});
  EXPECT_EQ(messages(pb.program()),
            std::vector<std::string>{
                "block 0, op 4 'scale', attr 'op_role_var': has 1 names; it lists [param, grad] "
                "pairs, so the count must be even"});
}

TEST(Verify, OpRoleVarNamesUndeclaredVarAndWrongType) {
  ProgramBuilder pb = valid_program();
  pb.op("scale").in("X", "w@GRAD").out("Out", "w@GRAD").role_var({"w", "v@GRAD"});
  pb.op("scale").in("X", "w@GRAD").out("Out", "w@GRAD").attr("op_role_var", "w");
  EXPECT_EQ(messages(pb.program()),
            (std::vector<std::string>{
                "block 0, op 4 'scale', var 'v@GRAD': named by op_role_var is not declared in "
                "block 0",
                "block 0, op 5 'scale', attr 'op_role_var': has type STRING, expected STRINGS"}));
}

TEST(Verify, UndeclaredVar) {
  ProgramBuilder pb = valid_program();
  pb.op("relu").in("X", "y").out("Out", "z");
  auto diags = verify_program(pb.program());
  ASSERT_EQ(diags.size(), 1u);
  EXPECT_EQ(diags[0].severity, Diagnostic::Error);
  EXPECT_EQ(diags[0].place, (SourceLocation{.block = 0, .op = 4, .op_type = "relu", .var_name = "z"}));
  EXPECT_EQ(diags[0].to_string(), "block 0, op 4 'relu', var 'z': not declared in block 0");
}

TEST(Verify, WrongAttributeType) {
  ProgramBuilder pb = valid_program();
  pb.block().ops().begin()->set_attr("x_num_col_dims", Attribute(1.0f));
  std::next(pb.block().ops().begin(), 2)->set_attr("ring_id", Attribute(0.0f));
  pb.op("c_sync_calc_stream").in("X", "w@GRAD").out("Out", "w@GRAD").attr("op_role", int64_t{1});
  EXPECT_EQ(messages(pb.program()),
            (std::vector<std::string>{
                "block 0, op 0 'mul', attr 'x_num_col_dims': has type FLOAT, expected INT",
                "block 0, op 2 'c_allreduce_sum', attr 'ring_id': has type FLOAT, expected INT",
                "block 0, op 4 'c_sync_calc_stream', attr 'op_role': has type LONG, expected "
                "INT"}));
}

TEST(Verify, TypesPaddleChangedAcrossVersionsAreAccepted) {
  ProgramBuilder pb;
  pb.tmp("a", {2, 3});
  pb.op("fill_constant").out("Out", "a").attr("shape", std::vector<int64_t>{2, 3});
  pb.op("fill_constant").out("Out", "a").attr("shape", std::vector<int32_t>{2, 3});
  pb.op("fill_constant").out("Out", "a").attr("shape", std::vector<float>{2, 3});
  EXPECT_EQ(messages(pb.program()),
            std::vector<std::string>{
                "block 0, op 2 'fill_constant', attr 'shape': has type FLOATS, expected LONGS or "
                "INTS"});
}

TEST(Verify, BadBlockStructure) {
  Program p = Program::with_global_block();
  p.global_block().parent_idx = 3;
  p.add_block(0).parent_idx = 17;  // names no block
  p.add_block(0).parent_idx = 2;   // itself
  p.add_block(0).parent_idx = 4;   // 3 -> 4 -> 3
  p.add_block(0).parent_idx = 3;
  p.add_block(0).forward_block_idx = 9;
  p.add_block(0).idx = 11;
  p.add_block(0).parent_idx = -1;
  EXPECT_EQ(messages(p),
            (std::vector<std::string>{
                "block 0: parent_idx is 3, but the global block's must be -1",
                "block 1: parent_idx 17 names no block (program has 8)",
                "block 2: parent_idx names the block itself",
                "block 5: forward_block_idx 9 names no block",
                "block 6: idx is 11, expected its position 6",
                "block 7: parent_idx is -1, but only the global block has no parent",
                "block 3: parent_idx chain loops: 3 -> 4 -> 3"}));
}

TEST(Verify, VarsOfAncestorsAreVisibleOthersAreNot) {
  ProgramBuilder pb;
  pb.tmp("outer", {1});
  Block& child = pb.program().add_block(0);
  child.add_var(Var{.name = "inner"});
  Block& grandchild = pb.program().add_block(1);
  Block& sibling = pb.program().add_block(0);
  sibling.add_var(Var{.name = "cousin"});
  grandchild.append_op(Op("assign", {{"X", {"outer"}}}, {{"Out", {"inner"}}}));
  grandchild.append_op(Op("assign", {{"X", {"cousin"}}}, {{"Out", {"inner"}}}));
  pb.program().global_block().append_op(Op("assign", {{"X", {"inner"}}}, {{"Out", {"outer"}}}));
  EXPECT_EQ(messages(pb.program()),
            (std::vector<std::string>{
                "block 0, op 0 'assign', var 'inner': not declared in block 0",
                "block 2, op 1 'assign', var 'cousin': not declared in block 2 or its "
                "ancestors"}));
}

TEST(Verify, SlotsAndRequiredAttributes) {
  ProgramBuilder pb = valid_program();
  pb.tmp("g", {-1});
  pb.op("c_allgather").in("X", "w@GRAD").out("Out", "g");  // nranks is required
  pb.op("mul").in("X", "x").in("Z", "w").out("Out", "y");  // Z unknown, Y missing
  pb.op("relu").in("X", std::vector<std::string>{"x", "y"}).out("Out", std::vector<std::string>{});
  EXPECT_EQ(messages(pb.program()),
            (std::vector<std::string>{
                "block 0, op 4 'c_allgather', attr 'nranks': required attribute of type INT is "
                "missing",
                "block 0, op 5 'mul', input 'Z': slot is not declared by 'mul'",
                "block 0, op 5 'mul', input 'Y': required slot is missing",
                "block 0, op 6 'relu', input 'X': slot takes one var, has 2",
                "block 0, op 6 'relu', output 'Out': required slot is empty"}));
}

TEST(Verify, UnknownOpsAreCountedAndUnknownAttributesAreWarnings) {
  ProgramBuilder pb = valid_program();
  pb.op("fancy_new_op").in("Input", "x").out("Out", "y").attr("whatever", 1.5f).role(0);
  pb.op("relu").in("X", "x").out("Out", "y").attr("ring_idd", int32_t{0});
  const VerifyResult result = verify(pb.program());
  EXPECT_FALSE(has_errors(result.diagnostics));
  EXPECT_EQ(messages(pb.program()),
            (std::vector<std::string>{
                "warning: block 0, op 5 'relu', attr 'ring_idd': is not declared by 'relu'"}));
  ASSERT_EQ(result.ops_without_schema.size(), 1u);
  EXPECT_EQ(result.ops_without_schema[0].type, "fancy_new_op");
  EXPECT_EQ(result.ops_without_schema[0].count, 1);
  // Common attributes are still checked on ops the registry does not know.
  pb.op("fancy_new_op").attr("op_role", "forward");
  EXPECT_EQ(messages(pb.program()).back(),
            "block 0, op 6 'fancy_new_op', attr 'op_role': has type STRING, expected INT");
}

TEST(Verify, BlockAndVarAttributes) {
  ProgramBuilder pb = valid_program();
  pb.program().add_block(0);
  pb.op("conditional_block").attr("sub_block", Attribute::block(1));
  pb.op("conditional_block").attr("sub_block", Attribute::block(5));
  pb.op("recurrent").attr("blocks", Attribute::blocks({1, 0}));
  pb.op("recurrent").attr("state", Attribute::var("nope"));
  std::vector<std::string> errors;
  for (const Diagnostic& d : verify_program(pb.program()))
    if (d.severity == Diagnostic::Error) errors.push_back(d.to_string());
  EXPECT_EQ(errors, (std::vector<std::string>{
                        "block 0, op 5 'conditional_block', attr 'sub_block': names block 5, "
                        "which does not exist",
                        "block 0, op 6 'recurrent', attr 'blocks': names the op's own block 0",
                        "block 0, op 7 'recurrent', var 'nope': not declared in block 0"}));
}

TEST(Verify, ReportsEveryProblemTogether) {
  ProgramBuilder pb = valid_program();
  pb.program().add_block(0).parent_idx = 9;
  auto op = pb.block().ops().begin();
  op->set_input("X", {"missing_x"});
  op->set_attr("y_num_col_dims", Attribute(int64_t{1}));
  std::next(op, 3)->set_attr("op_role_var", Attribute(std::vector<std::string>{"w", "w@GRAD", "w"}));
  const auto diags = verify_program(pb.program());
  std::vector<std::string> got;
  for (const Diagnostic& d : diags) got.push_back(d.to_string());
  EXPECT_EQ(got, (std::vector<std::string>{
                     "block 1: parent_idx 9 names no block (program has 2)",
                     "block 0, op 0 'mul', var 'missing_x': not declared in block 0",
                     "block 0, op 0 'mul', attr 'y_num_col_dims': has type LONG, expected INT",
                     "block 0, op 3 'sgd', attr 'op_role_var': has 3 names; it lists [param, "
                     "grad] pairs, so the count must be even"}));
  EXPECT_TRUE(has_errors(diags));
}

TEST(Verify, CustomRegistry) {
  OpRegistry registry;
  registry.add(OpDef{"my_op", {{"In", false, false}}, {}, {{"k", AttrType::LONG, std::nullopt}}});
  ProgramBuilder pb;
  pb.tmp("a", {1});
  pb.op("my_op").in("In", "a").attr("k", int32_t{3});
  pb.op("mul").in("X", "a");  // unknown to this registry: counted, not a diagnostic
  EXPECT_EQ(messages(pb.program(), registry),
            (std::vector<std::string>{
                "block 0, op 0 'my_op', attr 'k': has type INT, expected LONG"}));
}

// Ops without a schema are counted by type (most first), not reported one by
// one; their vars are still checked; the result says what was checked.
TEST(Verify, OpsWithoutASchemaAreCountedByType) {
  OpRegistry registry;
  registry.add(OpDef{"known", {{"In", false, false}}, {}, {}});
  ProgramBuilder pb;
  pb.tmp("a", {1});
  pb.op("known").in("In", "a");
  pb.op("zeta").in("X", "a");
  pb.op("alpha").in("X", "a");
  pb.op("zeta").in("X", "a");
  pb.op("alpha").in("X", "undeclared");
  pb.op("zeta").in("X", "a");
  const VerifyResult r = verify(pb.program(), registry);
  ASSERT_EQ(r.ops_without_schema.size(), 2u);
  EXPECT_EQ(r.ops_without_schema[0].type, "zeta");
  EXPECT_EQ(r.ops_without_schema[0].count, 3);
  EXPECT_EQ(r.ops_without_schema[1].type, "alpha");
  EXPECT_EQ(r.ops_without_schema[1].count, 2);
  EXPECT_EQ(r.ops, 6);
  EXPECT_EQ(r.ops_with_schema, 1);
  EXPECT_EQ(r.blocks, 1);
  EXPECT_EQ(r.vars, 1);
  ASSERT_EQ(r.diagnostics.size(), 1u);
  EXPECT_EQ(r.diagnostics[0].to_string(), "block 0, op 4 'alpha', var 'undeclared': not declared in block 0");
  EXPECT_NE(r.checked().find("1 block(s), 1 var(s), 6 op(s)"), std::string::npos) << r.checked();
  EXPECT_NE(r.checked().find("for 1 of the 6 op(s)"), std::string::npos) << r.checked();
}

TEST(Verify, MillionOpsTiming) {
  // Sanitized builds (CI) check the same program shape at a fifth of the
  // size; the timing in bench/RESULTS.md comes from a plain build.
#ifdef CTP_SANITIZED_BUILD
  constexpr int kOps = 200'000;
#else
  constexpr int kOps = 1'000'000;
#endif
  Program p = Program::with_global_block();
  Block& block = p.global_block();
  for (int i = 0; i < 1000; ++i) block.add_var(Var{.name = "v" + std::to_string(i), .shape = {8}});
  p.add_block(0).add_var(Var{.name = "inner"});
  for (int i = 0; i < kOps; ++i) {
    const std::string a = "v" + std::to_string(i % 1000);
    const std::string b = "v" + std::to_string((i + 1) % 1000);
    if (i % 2 == 0) {
      block.append_op(Op("elementwise_add", {{"X", {a}}, {"Y", {b}}}, {{"Out", {a}}},
                         {{"axis", Attribute(int32_t{-1})}, {"op_role", Attribute(int32_t{1})},
                          {"op_role_var", Attribute(std::vector<std::string>{a, b})}}));
    } else {
      block.append_op(Op("c_allreduce_sum", {{"X", {a}}}, {{"Out", {a}}},
                         {{"ring_id", Attribute(int32_t{0})}, {"op_role", Attribute(int32_t{1})},
                          {"use_calc_stream", Attribute(false)}}));
    }
  }
  p.block(1).append_op(Op("scale", {{"X", {"v1"}}}, {{"Out", {"inner"}}}));
  const auto start = std::chrono::steady_clock::now();
  const auto diags = verify_program(p);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(diags.empty());
  std::printf("[ timing ] verify_program on %d ops: %.3f s\n", kOps + 1, seconds);
}

}  // namespace
}  // namespace ctp
