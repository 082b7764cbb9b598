// The op builders every transpiler uses (transpilers/rewrite_support.h):
// make_var_op, from views, gives what make_op gives, Paddle's default role
// appended only when the caller gave no op_role.
#include <gtest/gtest.h>

#include <string>

#include "program_ir/op_role.h"
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

}  // namespace
}  // namespace ctp
