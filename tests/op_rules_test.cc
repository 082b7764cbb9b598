// An op's rules live once (ops/schema/meta_*.h) and both the schema's shape
// inference and the CPU kernels call them: a bad op fails with one text in
// both, which names the op's place (block, op index, type). A kernel that
// kept a check of its own (or dropped one) would fail differently (or not at
// all), and so would these tests. tests/gpu/op_rules_gpu_test.cc checks the
// CUDA kernels against the same cases.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/kernels_test_util.h"
#include "tests/op_rule_cases.h"
#include "tests/op_rule_cases_attention.h"
#include "tests/op_rule_cases_cv.h"

namespace ctp {
namespace {

using test::RuleCase;

class OpRules : public ::testing::TestWithParam<RuleCase> {};

TEST_P(OpRules, InferenceAndCpuKernelFailWithOneText) {
  const RuleCase& c = GetParam();
  const std::string expected = "block 0, op 1 '" + c.op.type + "': " + c.message;
  EXPECT_EQ(test::infer_error(c), expected);
  EXPECT_EQ(test::run_error(c), expected);
}

INSTANTIATE_TEST_SUITE_P(Cases, OpRules, ::testing::ValuesIn(test::rule_cases()),
                         [](const auto& info) { return info.param.name; });
INSTANTIATE_TEST_SUITE_P(CvCases, OpRules, ::testing::ValuesIn(test::cv_rule_cases()),
                         [](const auto& info) { return info.param.name; });
INSTANTIATE_TEST_SUITE_P(AttentionCases, OpRules,
                         ::testing::ValuesIn(test::attention_rule_cases()),
                         [](const auto& info) { return info.param.name; });

// Shape inference on declared vars and the CPU kernels on tensors of those
// shapes give outputs of one shape (a 0-D result is [1] in a tensor).
struct ShapeCase {
  std::string name;
  Op op;
  std::map<std::string, Tensor> inputs;
  std::vector<std::string> outputs;
};

Shape as_stored(Shape s) { return s.empty() ? Shape{1} : s; }

TEST(OpRules, InferenceGivesTheShapesCpuKernelsWrite) {
  using test::f32;
  using test::rule_op;
  const Slot x{"X", {"x"}}, y{"Y", {"y"}}, out{"Out", {"out"}};
  const std::vector<ShapeCase> cases = {
      {"conv2d SAME groups",
       rule_op("conv2d", {{"Input", {"x"}}, {"Filter", {"y"}}}, {{"Output", {"out"}}},
               {{"groups", Attribute(int32_t{2})},
                {"strides", Attribute(std::vector<int32_t>{2, 3})},
                {"padding_algorithm", Attribute("SAME")}}),
       {{"x", f32({2, 4, 7, 8})}, {"y", f32({6, 2, 3, 2})}}, {"out"}},
      {"pool2d ceil_mode", rule_op("pool2d", {x}, {out},
                                   {{"pooling_type", Attribute("avg")},
                                    {"ksize", Attribute(std::vector<int32_t>{3, 2})},
                                    {"strides", Attribute(std::vector<int32_t>{2, 2})},
                                    {"paddings", Attribute(std::vector<int32_t>{1, 0, 1, 1})},
                                    {"ceil_mode", Attribute(true)}}),
       {{"x", f32({1, 2, 6, 5})}}, {"out"}},
      {"batch_norm NHWC",
       rule_op("batch_norm",
               {x, {"Scale", {"s"}}, {"Bias", {"b"}}, {"Mean", {"m"}}, {"Variance", {"v"}}},
               {{"Y", {"out"}}, {"MeanOut", {"m"}}, {"VarianceOut", {"v"}},
                {"SavedMean", {"sm"}}, {"SavedVariance", {"sv"}}},
               {{"data_layout", Attribute("NHWC")}}),
       {{"x", f32({2, 3, 4})}, {"s", f32({4})}, {"b", f32({4})}, {"m", f32({4})},
        {"v", f32({4})}},
       {"out", "m", "v", "sm", "sv"}},
      {"matmul batches", rule_op("matmul_v2", {x, y}, {out}),
       {{"x", f32({5, 1, 2, 3})}, {"y", f32({4, 3, 6})}}, {"out"}},
      {"matmul vectors", rule_op("matmul_v2", {x, y}, {out}, {{"trans_x", Attribute(true)}}),
       {{"x", f32({3})}, {"y", f32({2, 3, 4})}}, {"out"}},
      {"mul", rule_op("mul", {x, y}, {out}, {{"x_num_col_dims", Attribute(int32_t{2})}}),
       {{"x", f32({2, 3, 4})}, {"y", f32({4, 5})}}, {"out"}},
      {"elementwise axis",
       rule_op("elementwise_add", {x, y}, {out}, {{"axis", Attribute(int32_t{1})}}),
       {{"x", f32({2, 3, 4})}, {"y", f32({3, 1, 1})}}, {"out"}},
      {"elementwise swapped", rule_op("elementwise_mul", {x, y}, {out}),
       {{"x", f32({4})}, {"y", f32({2, 1, 4})}}, {"out"}},
      {"reshape2", rule_op("reshape2", {x}, {out, {"XShape", {"xs"}}},
                           {{"shape", Attribute(std::vector<int32_t>{0, -1, 2})}}),
       {{"x", f32({3, 4, 2})}}, {"out", "xs"}},
      {"flatten", rule_op("flatten_contiguous_range", {x}, {out, {"XShape", {"xs"}}},
                          {{"start_axis", Attribute(int32_t{-2})},
                           {"stop_axis", Attribute(int32_t{-1})}}),
       {{"x", f32({3, 4, 2})}}, {"out", "xs"}},
      {"squeeze2", rule_op("squeeze2", {x}, {out}), {{"x", f32({1, 4, 1})}}, {"out"}},
      {"unsqueeze2", rule_op("unsqueeze2", {x}, {out},
                             {{"axes", Attribute(std::vector<int32_t>{-1, 0})}}),
       {{"x", f32({3, 4})}}, {"out"}},
      {"transpose2", rule_op("transpose2", {x}, {out, {"XShape", {"xs"}}},
                             {{"axis", Attribute(std::vector<int32_t>{2, 0, 1})}}),
       {{"x", f32({3, 4, 2})}}, {"out", "xs"}},
      {"slice", rule_op("slice", {{"Input", {"x"}}}, {out},
                        {{"axes", Attribute(std::vector<int32_t>{0, 2})},
                         {"starts", Attribute(std::vector<int32_t>{-1, 0})},
                         {"ends", Attribute(std::vector<int32_t>{10, 1})},
                         {"decrease_axis", Attribute(std::vector<int32_t>{0})}}),
       {{"x", f32({3, 4, 2})}}, {"out"}},
      {"stack", rule_op("stack", {{"X", {"x", "y"}}}, {{"Y", {"out"}}},
                        {{"axis", Attribute(int32_t{-1})}}),
       {{"x", f32({3, 4})}, {"y", f32({3, 4})}}, {"out"}},
      {"layer_norm", rule_op("layer_norm", {x}, {{"Y", {"out"}}, {"Mean", {"m"}}, {"Variance", {"v"}}},
                             {{"begin_norm_axis", Attribute(int32_t{2})}}),
       {{"x", f32({3, 4, 2})}}, {"out", "m", "v"}},
      {"lookup_table_v2", rule_op("lookup_table_v2", {{"W", {"x"}}, {"Ids", {"y"}}}, {out}),
       {{"x", f32({5, 3})}, {"y", test::filled(DataType::INT64, {2, 4}, 1)}}, {"out"}},
      {"reduce_sum", rule_op("reduce_sum", {x}, {out},
                             {{"dim", Attribute(std::vector<int32_t>{1})}}),
       {{"x", f32({2, 3, 4})}}, {"out"}},
      {"reduce keep_dim", rule_op("reduce_mean", {x}, {out},
                                  {{"dim", Attribute(std::vector<int32_t>{-1, 0})},
                                   {"keep_dim", Attribute(true)}}),
       {{"x", f32({2, 3, 4})}}, {"out"}},
      {"reduce all", rule_op("reduce_mean", {x}, {out}, {{"reduce_all", Attribute(true)}}),
       {{"x", f32({2, 3})}}, {"out"}},
      {"split num", rule_op("split", {x}, {{"Out", {"p", "q"}}},
                            {{"num", Attribute(int32_t{2})}, {"axis", Attribute(int32_t{1})}}),
       {{"x", f32({3, 4})}}, {"p", "q"}},
      {"split sections", rule_op("split", {x}, {{"Out", {"p", "q"}}},
                                 {{"sections", Attribute(std::vector<int32_t>{-1, 1})}}),
       {{"x", f32({3, 4})}}, {"p", "q"}},
      {"concat", rule_op("concat", {{"X", {"x", "y"}}}, {out}, {{"axis", Attribute(int32_t{-1})}}),
       {{"x", f32({2, 3})}, {"y", f32({2, 5})}}, {"out"}},
      {"softmax",
       rule_op("softmax_with_cross_entropy", {{"Logits", {"x"}}, {"Label", {"y"}}},
               {{"Softmax", {"sm"}}, {"Loss", {"loss"}}}, {{"axis", Attribute(int32_t{0})}}),
       {{"x", f32({4, 3})}, {"y", test::filled(DataType::INT64, {1, 3}, 1)}}, {"sm", "loss"}},
      {"softmax axis 1", rule_op("softmax", {x}, {out}, {{"axis", Attribute(int32_t{1})}}),
       {{"x", f32({2, 3, 4})}}, {"out"}},
      {"cross_entropy2 label [N, 1]",
       rule_op("cross_entropy2", {x, {"Label", {"y"}}},
               {{"Y", {"loss"}}, {"XShape", {"xs"}}, {"MatchX", {"mx"}}}),
       {{"x", f32({2, 3, 4})}, {"y", test::filled(DataType::INT64, {2, 3, 1}, 1)}},
       {"loss", "xs", "mx"}},
      {"cross_entropy2 label [N]",
       rule_op("cross_entropy2", {x, {"Label", {"y"}}},
               {{"Y", {"loss"}}, {"XShape", {"xs"}}, {"MatchX", {"mx"}}}),
       {{"x", f32({4, 3})}, {"y", test::filled(DataType::INT32, {4}, 2)}},
       {"loss", "xs", "mx"}},
      {"flash_attn return_softmax",
       rule_op("flash_attn", {{"q", {"x"}}, {"k", {"y"}}, {"v", {"y"}}},
               {{"out", {"out"}}, {"softmax", {"sm"}}, {"softmax_lse", {"lse"}},
                {"seed_offset", {"so"}}},
               {{"return_softmax", Attribute(true)}, {"causal", Attribute(true)}}),
       {{"x", f32({2, 3, 2, 4})}, {"y", f32({2, 5, 2, 4})}}, {"out", "sm", "lse", "so"}},
      {"flash_attn", rule_op("flash_attn", {{"q", {"x"}}, {"k", {"y"}}, {"v", {"y"}}},
                             {{"out", {"out"}}, {"softmax", {"sm"}}, {"softmax_lse", {"lse"}},
                              {"seed_offset", {"so"}}}),
       {{"x", f32({2, 3, 2, 4})}, {"y", f32({2, 5, 2, 4})}}, {"out", "sm", "lse", "so"}},
      {"coalesce", rule_op("coalesce_tensor", {{"Input", {"x", "y"}}},
                           {{"Output", {"x", "y"}}, {"FusedOutput", {"fused"}}},
                           {{"dtype", Attribute(static_cast<int32_t>(DataType::FP32))},
                            {"align_size", Attribute(int32_t{256})}}),
       {{"x", f32({3})}, {"y", f32({70})}}, {"fused"}},
  };
  for (const ShapeCase& c : cases) {
    SCOPED_TRACE(c.name);
    const RuleCase as_rule{c.name, c.op, c.inputs, ""};
    Program program = test::rule_program(as_rule);
    Block& block = program.global_block();
    Op& op = *std::next(block.ops().begin());
    OpRegistry::global().find(op.type)->infer_shape(op, block);
    Scope scope;
    scope.var("lead") = f32({1});
    for (const auto& [name, t] : c.inputs) scope.var(name) = t;
    Executor(program, {}).run(scope);
    for (const std::string& name : c.outputs)
      EXPECT_EQ(scope.get(name).shape(), as_stored(block.var(name).shape)) << name;
  }
}

}  // namespace
}  // namespace ctp
