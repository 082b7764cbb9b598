#include <gtest/gtest.h>

#include "program_ir/builder.h"

namespace ctp {
namespace {

TEST(Block, InsertAndEraseKeepOtherHandles) {
  Block b;
  auto first = b.append_op(Op("a"));
  auto third = b.append_op(Op("c"));
  auto second = b.insert_op(third, Op("b"));
  b.insert_op_after(third, Op("d"));
  std::vector<std::string> types;
  for (const Op& op : b.ops()) types.push_back(op.type);
  EXPECT_EQ(types, (std::vector<std::string>{"a", "b", "c", "d"}));
  b.erase_op(second);
  EXPECT_EQ(first->type, "a");
  EXPECT_EQ(third->type, "c");
  EXPECT_EQ(std::next(first)->type, "c");
  EXPECT_EQ(b.op_count(), 3u);
}

TEST(Block, VarLookupByNameAndCopyRebuildsIndex) {
  Block b;
  b.add_var(Var{.name = "x"});
  b.add_var(Var{.name = "y", .dtype = DataType::FP16});
  EXPECT_THROW(b.add_var(Var{.name = "x"}), Error);
  Block copy = b;
  b.remove_var("y");
  EXPECT_FALSE(b.has_var("y"));
  ASSERT_TRUE(copy.has_var("y"));
  EXPECT_EQ(copy.var("y").dtype, DataType::FP16);
  copy.var("y").shape = {3};
  EXPECT_EQ(copy.vars().back().shape, (std::vector<int64_t>{3}));
  try {
    b.var("missing");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'missing'"), std::string::npos);
  }
}

// The name index views the names held in the var list: it must survive the
// block being moved, copied and grown, for names short and long (held in the
// string itself or on the heap), and a refused duplicate must leave both alone.
TEST(Block, VarIndexViewsTheNamesItHolds) {
  const std::string long_name(40, 'w');
  Block b;
  b.reserve_vars(1);
  for (int i = 0; i < 100; ++i) b.add_var(Var{.name = long_name + std::to_string(i)});
  b.add_var(Var{.name = "s"});
  auto [again, added] = b.emplace_var(Var{.name = "s", .dtype = DataType::FP16});
  EXPECT_FALSE(added);
  EXPECT_EQ(again.dtype, DataType::FP32);
  EXPECT_EQ(&b.get_or_add_var(Var{.name = "s"}), &again);
  EXPECT_EQ(b.var_count(), 101u);
  Block moved = std::move(b);
  Block copy = moved;
  moved.remove_var(long_name + "7");
  for (const Block* block : {&moved, &copy}) {
    EXPECT_TRUE(block->has_var(long_name + "99"));
    EXPECT_TRUE(block->has_var("s"));
    EXPECT_EQ(&block->var(long_name + "3"), &*std::next(block->vars().begin(), 3));
  }
  EXPECT_FALSE(moved.has_var(long_name + "7"));
  EXPECT_TRUE(copy.has_var(long_name + "7"));
}

TEST(Attribute, TypesAndMismatches) {
  Attribute i(int32_t{3});
  EXPECT_EQ(i.type(), AttrType::INT);
  EXPECT_EQ(i.as_int64(), 3);
  EXPECT_EQ(Attribute::block(2).type(), AttrType::BLOCK);
  EXPECT_EQ(Attribute::var("v").get<std::string>(), "v");
  EXPECT_THROW(Attribute(AttrType::FLOAT, AttrValue(int32_t{1})), Error);
  EXPECT_THROW(Attribute(1.0f).get<int32_t>(), Error);
  EXPECT_EQ(Attribute(std::vector<std::string>{"a"}).type(), AttrType::STRINGS);
}

TEST(OpRole, PredicatesAndPairs) {
  ProgramBuilder pb;
  auto grad = pb.op("mul_grad").role(op_role::kBackward).role_var({"w", "w@GRAD"});
  auto loss = pb.op("fill_constant").role(op_role::kBackward | op_role::kLoss);
  auto odd = pb.op("x_grad").role(op_role::kBackward).role_var({"w"});
  EXPECT_TRUE(is_backward_op(grad.op()));
  EXPECT_FALSE(is_loss_grad_op(grad.op()));
  EXPECT_TRUE(is_loss_grad_op(loss.op()));
  auto pairs = param_grad_pairs(grad.op());
  ASSERT_EQ(pairs.size(), 1u);
  EXPECT_EQ(pairs[0].grad, "w@GRAD");
  EXPECT_THROW(param_grad_pairs(odd.op()), Error);
}

}  // namespace
}  // namespace ctp
