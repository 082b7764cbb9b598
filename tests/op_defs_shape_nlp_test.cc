// The schemas of the shape ops, layer_norm, lookup_table_v2 and reduce_sum:
// their tables, and their inference on declared vars whose batch dim is
// unknown (-1 stays -1 where the rules cannot know the dim).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <unordered_set>

#include "ops/schema/op_def.h"

namespace ctp {
namespace {

using Shape = std::vector<int64_t>;

Attribute ints(std::vector<int32_t> v) { return Attribute(std::move(v)); }

class Declared {
 public:
  Declared& var(const std::string& name, Shape shape, DataType dtype = DataType::FP32) {
    block_.add_var(Var{.name = name, .dtype = dtype, .shape = std::move(shape)});
    return *this;
  }
  // Runs one op's inference; returns the shape of `out`.
  Shape run(std::string type, std::vector<Slot> in, std::vector<Slot> out,
            std::vector<NamedAttribute> attrs = {}) {
    const Op op(std::move(type), std::move(in), std::move(out), std::move(attrs));
    for (const Slot& slot : op.outputs())
      for (const std::string& name : slot.args)
        block_.get_or_add_var(Var{.name = name, .dtype = DataType::BOOL, .shape = {-7}});
    const OpDef* def = OpRegistry::global().find(op.type);
    EXPECT_NE(def, nullptr) << op.type;
    if (!def || !def->infer_shape) return {-7};
    def->infer_shape(op, block_);
    return block_.var(op.outputs()[0].args[0]).shape;
  }
  const Var& get(const std::string& name) const { return block_.var(name); }

 private:
  Block block_;
};

TEST(OpDefsShapeNlp, RegisteredWithGradsAndOptionalXShape) {
  for (const char* type : {"reshape2", "flatten_contiguous_range", "squeeze2", "unsqueeze2",
                           "transpose2", "slice", "stack", "layer_norm", "lookup_table_v2",
                           "reduce_sum"}) {
    SCOPED_TRACE(type);
    const OpDef* d = OpRegistry::global().find(type);
    ASSERT_NE(d, nullptr);
    EXPECT_NE(OpRegistry::global().find(std::string(type) + "_grad"), nullptr);
    std::set<std::string> names;
    for (const AttrDef& a : d->attrs) EXPECT_TRUE(names.insert(a.name).second) << a.name;
    for (const SlotDef& s : d->outputs)
      if (s.name == "XShape") EXPECT_TRUE(s.dispensable);
  }
}

TEST(OpDefsShapeNlp, UnknownBatchDimsStayUnknown) {
  Declared t;
  t.var("x", {-1, 8, 1, 1}).var("ids", {-1, 5}, DataType::INT64).var("w", {100, 16});
  EXPECT_EQ(t.run("reshape2", {{"X", {"x"}}}, {{"Out", {"r"}}, {"XShape", {"rs"}}},
                  {{"shape", ints({-1, 8})}}),
            (Shape{-1, 8}));
  EXPECT_EQ(t.get("rs").shape, (Shape{0, -1, 8, 1, 1}));
  EXPECT_EQ(t.run("reshape2", {{"X", {"x"}}}, {{"Out", {"r0"}}}, {{"shape", ints({0, 2, -1})}}),
            (Shape{-1, 2, -1}));  // the element count is unknown
  // A shape given by tensors: only the rank is known before run time.
  t.var("d0", {1}, DataType::INT32).var("d1", {1}, DataType::INT64).var("dims", {3},
                                                                        DataType::INT32);
  EXPECT_EQ(t.run("reshape2", {{"X", {"x"}}, {"ShapeTensor", {"d0", "d1"}}}, {{"Out", {"rt"}}}),
            (Shape{-1, -1}));
  EXPECT_EQ(t.run("reshape2", {{"X", {"x"}}, {"Shape", {"dims"}}}, {{"Out", {"rd"}}}),
            (Shape{-1, -1, -1}));
  EXPECT_EQ(t.run("flatten_contiguous_range", {{"X", {"x"}}}, {{"Out", {"f"}}},
                  {{"start_axis", Attribute(int32_t{0})}, {"stop_axis", Attribute(int32_t{1})}}),
            (Shape{-1, 1, 1}));
  // shape: its length is Input's rank, known even when dims are not.
  EXPECT_EQ(t.run("shape", {{"Input", {"x"}}}, {{"Out", {"xdims"}}}), (Shape{4}));
  EXPECT_EQ(t.get("xdims").dtype, DataType::INT32);
  EXPECT_EQ(t.run("squeeze2", {{"X", {"x"}}}, {{"Out", {"s"}}}), (Shape{-1, 8}));
  EXPECT_EQ(t.run("transpose2", {{"X", {"x"}}}, {{"Out", {"t"}}}, {{"axis", ints({1, 0, 3, 2})}}),
            (Shape{8, -1, 1, 1}));
  EXPECT_EQ(t.run("slice", {{"Input", {"x"}}}, {{"Out", {"sl"}}},
                  {{"axes", ints({0, 1})}, {"starts", ints({1, 2})}, {"ends", ints({3, 100})}}),
            (Shape{-1, 6, 1, 1}));
  EXPECT_EQ(t.run("stack", {{"X", {"x", "x"}}}, {{"Y", {"st"}}}, {{"axis", Attribute(int32_t{1})}}),
            (Shape{-1, 2, 8, 1, 1}));
  EXPECT_EQ(t.run("lookup_table_v2", {{"W", {"w"}}, {"Ids", {"ids"}}}, {{"Out", {"e"}}}),
            (Shape{-1, 5, 16}));
  EXPECT_EQ(t.run("layer_norm", {{"X", {"e"}}},
                  {{"Y", {"ln"}}, {"Mean", {"m"}}, {"Variance", {"v"}}},
                  {{"begin_norm_axis", Attribute(int32_t{2})}}),
            (Shape{-1, 5, 16}));
  EXPECT_EQ(t.get("m").shape, (Shape{-1}));
  EXPECT_EQ(t.get("m").dtype, DataType::FP32);
  EXPECT_EQ(t.run("reduce_sum", {{"X", {"x"}}}, {{"Out", {"sum"}}}, {{"dim", ints({1})}}),
            (Shape{-1, 1, 1}));
  // Gradients take their inputs' shapes back (from XShape for the "2" ops).
  EXPECT_EQ(t.run("reshape2_grad", {{"XShape", {"rs"}}, {"Out@GRAD", {"r"}}},
                  {{"X@GRAD", {"dx"}}}),
            (Shape{-1, 8, 1, 1}));
}

// The grad makers write what Paddle's GradOpMakers write for these ops.
std::vector<Op> grads_of(const Op& forward, const std::unordered_set<std::string>& no_grad = {}) {
  return OpRegistry::global().find(forward.type)->grad.make(GradMakerContext(forward, no_grad));
}

TEST(OpDefsShapeNlp, GradMakersPassWhatPaddlesPass) {
  using ::testing::ElementsAre;
  const Op reshape("reshape2", {{"X", {"x"}}}, {{"Out", {"y"}}, {"XShape", {"xs"}}},
                   {{"shape", ints({-1})}});
  std::vector<Op> g = grads_of(reshape);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].type, "reshape2_grad");
  EXPECT_THAT(*g[0].input("XShape"), ElementsAre("xs"));  // XShape, not X
  EXPECT_FALSE(g[0].has_input("X"));
  EXPECT_THAT(*g[0].input("Out@GRAD"), ElementsAre("y@GRAD"));
  EXPECT_THAT(*g[0].output("X@GRAD"), ElementsAre("x@GRAD"));
  EXPECT_EQ(g[0].attrs(), reshape.attrs());
  // stack: an input that needs no gradient is @EMPTY@ in X@GRAD.
  g = grads_of(Op("stack", {{"X", {"a", "b"}}}, {{"Y", {"y"}}}), {"a"});
  ASSERT_EQ(g.size(), 1u);
  EXPECT_THAT(*g[0].output("X@GRAD"), ElementsAre("@EMPTY@", "b@GRAD"));
  // layer_norm without Bias: no Bias in, no Bias@GRAD out.
  g = grads_of(Op("layer_norm", {{"X", {"x"}}, {"Scale", {"s"}}},
                  {{"Y", {"y"}}, {"Mean", {"m"}}, {"Variance", {"v"}}}));
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].type, "layer_norm_grad");
  EXPECT_THAT(*g[0].input("Mean"), ElementsAre("m"));
  EXPECT_THAT(*g[0].input("Y@GRAD"), ElementsAre("y@GRAD"));
  EXPECT_THAT(*g[0].output("Scale@GRAD"), ElementsAre("s@GRAD"));
  EXPECT_FALSE(g[0].has_input("Bias"));
  EXPECT_FALSE(g[0].has_output("Bias@GRAD"));
  for (const char* type : {"flatten_contiguous_range", "squeeze2", "unsqueeze2", "transpose2",
                           "slice", "lookup_table_v2", "reduce_sum"})
    EXPECT_EQ(OpRegistry::global().find(type)->grad.kind, GradMaker::Kind::kOps) << type;
}

}  // namespace
}  // namespace ctp
