// The op builders every transpiler uses (transpilers/rewrite_support.h):
// make_var_op and make_op_from_views, from views, give what make_op gives,
// Paddle's default role appended only when the caller gave no op_role;
// create_var, whether it copies the request or takes from it; and
// create_vars, create_var of one request under many names.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "program_ir/error.h"
#include "program_ir/op_role.h"
#include "program_ir/program.h"
#include "program_ir/proto_io.h"
#include "transpilers/rewrite_support.h"

namespace ctp {
namespace {

TEST(RewriteSupport, MakeVarOpIsMakeOpFromViews) {
  const std::string param = "fc_0.w_0", snapshot = "fc_0.w_0@SNAPSHOT";
  const Op from_views = make_var_op("elementwise_sub", {{"X", snapshot}, {"Y", param}},
                                    {{"Out", param}}, {{"axis", Attribute(-1)}});
  const Op built = make_op("elementwise_sub", {{"X", {snapshot}}, {"Y", {param}}},
                           {{"Out", {param}}}, {{"axis", Attribute(-1)}});
  EXPECT_EQ(from_views, built);
  EXPECT_EQ(*from_views.unchanged_wire_bytes(), *built.unchanged_wire_bytes());
  // No role given: Paddle's default, last.
  ASSERT_EQ(from_views.attrs().size(), 2u);
  EXPECT_EQ(from_views.attrs().back().name, kOpRoleAttr);
  EXPECT_EQ(from_views.attrs().back().value, Attribute(op_role::kForward));

  const Op with_role = make_in_place_op("c_allreduce_sum", param,
                                        {{kOpRoleAttr, Attribute(op_role::kOptimize)},
                                         {"ring_id", Attribute(1)}});
  ASSERT_EQ(with_role.attrs().size(), 2u);
  EXPECT_EQ(with_role.attr_value(kOpRoleAttr), Attribute(op_role::kOptimize));
  EXPECT_EQ(with_role.input_args("X"), std::vector<std::string>{param});
  EXPECT_EQ(with_role.output_args("Out"), std::vector<std::string>{param});
}

// make_op_from_views builds make_op's op from slots the caller keeps (the
// split before all_gather's adam copies, whose pieces they then read).
TEST(RewriteSupport, MakeOpFromViewsIsMakeOpOfTheSameSlots) {
  const Slot in{"X", {"fc_0.w_0_allgather"}};
  const Slot out{"Out", {"fc_0.w_0_0", "fc_0.w_0_1", "fc_0.w_0_2"}};
  const Op from_views = make_op_from_views("split", {&in, 1}, {&out, 1},
                                           {{"num", Attribute(3)}, {"axis", Attribute(0)}});
  const Op built = make_op("split", {in}, {out}, {{"num", Attribute(3)}, {"axis", Attribute(0)}});
  EXPECT_EQ(from_views, built);
  EXPECT_EQ(*from_views.unchanged_wire_bytes(), *built.unchanged_wire_bytes());
  ASSERT_EQ(from_views.attrs().size(), 3u);  // no role given: Paddle's default, last
  EXPECT_EQ(from_views.attrs().back().value, Attribute(op_role::kForward));
  EXPECT_EQ(out.args.size(), 3u);  // the caller's slots are untouched
}

// create_var of a request it may take from builds the var create_var of a
// copy builds, and a request for a declared var that disagrees is refused
// with the var's name either way.
TEST(RewriteSupport, CreateVarTakingTheRequestIsCreateVarOfACopy) {
  auto program = Program::with_global_block();
  Block& block = program.global_block();
  const VarRequest request{.name = "piece_0", .shape = std::vector<int64_t>{4, 8},
                           .dtype = DataType::FP32, .persistable = false, .stop_gradient = true};
  EXPECT_EQ(create_var(block, request, "test"), "piece_0");
  EXPECT_EQ(create_var(block, VarRequest(request), "test"), "piece_0");  // declared, agreeing
  VarRequest taken = request;
  taken.name = "piece_1";
  EXPECT_EQ(create_var(block, std::move(taken), "test"), "piece_1");
  EXPECT_EQ(block.var("piece_1").shape, (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(block.var("piece_1").stop_gradient, true);
  VarRequest clashing = request;
  clashing.shape = std::vector<int64_t>{2};
  try {
    create_var(block, std::move(clashing), "test");
    FAIL() << "a declared var of another shape was taken";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("already has var 'piece_0' with shape"));
  }
}

// A program of one var, "piece_1", declared with stop_gradient false, as
// bytes (protobuf, or read back from them keeping the bytes: its block then
// holds its vars as their VarDesc bytes, and new vars join them so).
Program one_declared_piece(bool as_bytes) {
  auto program = Program::with_global_block();
  Var declared;
  declared.name = "piece_1";
  declared.shape = {4, 8};
  declared.dtype = DataType::FP32;
  program.global_block().add_var(declared);
  if (!as_bytes) return program;
  auto bytes = std::make_shared<const std::string>(serialize_program_proto(program));
  return parse_program_proto(*bytes, "pieces.pb", ProtoReadOptions{.owner = bytes});
}

// create_vars builds, under each name, the var create_var builds from the
// same request under that name: the same program to the byte, whether the
// block holds its vars as bytes or not, a declared var that agrees kept
// (taking the request's stop_gradient), one that disagrees refused naming
// it.
TEST(RewriteSupport, CreateVarsIsCreateVarUnderEachName) {
  const std::vector<std::string> names = {"piece_0", "piece_1", "a_much_longer_piece_name_2"};
  const VarRequest alike{.shape = std::vector<int64_t>{4, 8},
                         .dtype = DataType::FP32,
                         .persistable = false,
                         .stop_gradient = true};
  for (const bool as_bytes : {true, false}) {
    SCOPED_TRACE(as_bytes ? "vars held as bytes" : "vars decoded");
    Program one_by_one = one_declared_piece(as_bytes);
    Program at_once = one_declared_piece(as_bytes);
    for (const std::string& name : names) {
      VarRequest request = alike;
      request.name = name;
      create_var(one_by_one.global_block(), request, "test");
    }
    create_vars(at_once.global_block(), names, alike, "test");
    EXPECT_EQ(serialize_program_proto(at_once), serialize_program_proto(one_by_one));
    EXPECT_EQ(at_once.global_block().var_count(), 3u);
    EXPECT_TRUE(at_once.global_block().var("piece_1").stop_gradient);
    EXPECT_EQ(at_once.global_block().var("a_much_longer_piece_name_2").shape,
              (std::vector<int64_t>{4, 8}));
    VarRequest other_shape = alike;
    other_shape.shape = std::vector<int64_t>{2};
    try {
      const std::vector<std::string> more = {"piece_3", "piece_0"};
      create_vars(at_once.global_block(), more, other_shape, "test");
      FAIL() << "a declared var of another shape was taken";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), ::testing::HasSubstr("already has var 'piece_0' with shape"));
    }
  }
}

}  // namespace
}  // namespace ctp
