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
