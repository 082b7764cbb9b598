// The schemas of top_k, top_k_v2 and accuracy: their tables, and their
// inference on declared vars whose batch dim is unknown.
#include <gtest/gtest.h>

#include "ops/schema/op_def.h"
#include "program_ir/error.h"

namespace ctp {
namespace {

using Shape = std::vector<int64_t>;

class Declared {
 public:
  Declared& var(const std::string& name, Shape shape, DataType dtype = DataType::FP32) {
    block_.add_var(Var{.name = name, .dtype = dtype, .shape = std::move(shape)});
    return *this;
  }
  void run(std::string type, std::vector<Slot> in, std::vector<Slot> out,
           std::vector<NamedAttribute> attrs = {}) {
    const Op op(std::move(type), std::move(in), std::move(out), std::move(attrs));
    for (const Slot& slot : op.outputs())
      for (const std::string& name : slot.args)
        block_.get_or_add_var(Var{.name = name, .dtype = DataType::BOOL, .shape = {-7}});
    const OpDef* def = OpRegistry::global().find(op.type);
    ASSERT_NE(def, nullptr) << op.type;
    ASSERT_TRUE(def->infer_shape) << op.type;
    def->infer_shape(op, block_);
  }
  const Var& get(const std::string& name) const { return block_.var(name); }

 private:
  Block block_;
};

TEST(OpDefsMetrics, TablesAsPaddleWritesThem) {
  const OpRegistry& r = OpRegistry::global();
  for (const char* type : {"top_k", "top_k_v2"}) {
    SCOPED_TRACE(type);
    const OpDef* d = r.find(type);
    ASSERT_NE(d, nullptr);
    ASSERT_NE(r.find(std::string(type) + "_grad"), nullptr);
    EXPECT_EQ(d->grad.kind, GradMaker::Kind::kOps);
    ASSERT_NE(d->find_input("K"), nullptr);
    EXPECT_TRUE(d->find_input("K")->dispensable);
    ASSERT_NE(d->find_attr("k"), nullptr);
    EXPECT_EQ(d->find_attr("k")->default_value->get<int32_t>(), 1);
  }
  const OpDef* v2 = r.find("top_k_v2");
  EXPECT_EQ(v2->find_attr("axis")->default_value->get<int32_t>(), -1);
  EXPECT_TRUE(v2->find_attr("largest")->default_value->get<bool>());
  EXPECT_TRUE(v2->find_attr("sorted")->default_value->get<bool>());
  EXPECT_EQ(r.find("top_k")->find_attr("axis"), nullptr);
  const OpDef* acc = r.find("accuracy");
  ASSERT_NE(acc, nullptr);
  EXPECT_EQ(acc->grad.kind, GradMaker::Kind::kNone);
  for (const char* slot : {"Out", "Indices", "Label"}) EXPECT_NE(acc->find_input(slot), nullptr);
  for (const char* slot : {"Accuracy", "Correct", "Total"})
    EXPECT_NE(acc->find_output(slot), nullptr);
}

TEST(OpDefsMetrics, TopKShapesKeepTheBatchUnknown) {
  Declared t;
  t.var("x", {-1, 10}).var("k", {1}, DataType::INT32).var("x3", {4, -1, 6});
  t.run("top_k", {{"X", {"x"}}, {"K", {}}}, {{"Out", {"o"}}, {"Indices", {"i"}}},
        {{"k", Attribute(int32_t{3})}});
  EXPECT_EQ(t.get("o").shape, (Shape{-1, 3}));
  EXPECT_EQ(t.get("o").dtype, DataType::FP32);
  EXPECT_EQ(t.get("i").shape, (Shape{-1, 3}));
  EXPECT_EQ(t.get("i").dtype, DataType::INT64);
  // A K tensor gives k at run time only.
  t.run("top_k", {{"X", {"x"}}, {"K", {"k"}}}, {{"Out", {"ok"}}, {"Indices", {"ik"}}});
  EXPECT_EQ(t.get("ok").shape, (Shape{-1, -1}));
  t.run("top_k_v2", {{"X", {"x3"}}}, {{"Out", {"o3"}}, {"Indices", {"i3"}}},
        {{"k", Attribute(int32_t{2})}, {"axis", Attribute(int32_t{0})}});
  EXPECT_EQ(t.get("o3").shape, (Shape{2, -1, 6}));
  t.run("top_k_v2_grad", {{"X", {"x3"}}, {"Indices", {"i3"}}, {"Out@GRAD", {"o3"}}},
        {{"X@GRAD", {"dx3"}}}, {{"k", Attribute(int32_t{2})}, {"axis", Attribute(int32_t{0})}});
  EXPECT_EQ(t.get("dx3").shape, (Shape{4, -1, 6}));
}

TEST(OpDefsMetrics, TopKRefusesAKAboveTheAxisDim) {
  Declared t;
  t.var("x", {-1, 4});
  try {
    t.run("top_k", {{"X", {"x"}}}, {{"Out", {"o"}}, {"Indices", {"i"}}},
          {{"k", Attribute(int32_t{5})}});
    FAIL() << "k 5 > 4 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "attribute k is 5, more than the 4 elements along the axis of input X 'x'"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(t.run("top_k", {{"X", {"x"}}}, {{"Out", {"o"}}, {"Indices", {"i"}}},
                     {{"k", Attribute(int32_t{0})}}),
               Error);
}

TEST(OpDefsMetrics, AccuracyOutputsAreOneElement) {
  Declared t;
  t.var("out", {-1, 2}).var("idx", {-1, 2}, DataType::INT64).var("label", {-1, 1},
                                                                 DataType::INT64);
  t.run("accuracy", {{"Out", {"out"}}, {"Indices", {"idx"}}, {"Label", {"label"}}},
        {{"Accuracy", {"a"}}, {"Correct", {"c"}}, {"Total", {"n"}}});
  EXPECT_EQ(t.get("a").shape, (Shape{1}));
  EXPECT_EQ(t.get("a").dtype, DataType::FP32);
  EXPECT_EQ(t.get("c").dtype, DataType::INT32);
  EXPECT_EQ(t.get("n").dtype, DataType::INT32);
  // Indices must be INT64, Label one column.
  t.var("idx32", {-1, 2}, DataType::INT32).var("label2", {-1, 2}, DataType::INT64);
  EXPECT_THROW(t.run("accuracy", {{"Out", {"out"}}, {"Indices", {"idx32"}}, {"Label", {"label"}}},
                     {{"Accuracy", {"a"}}, {"Correct", {"c"}}, {"Total", {"n"}}}),
               Error);
  EXPECT_THROW(t.run("accuracy", {{"Out", {"out"}}, {"Indices", {"idx"}}, {"Label", {"label2"}}},
                     {{"Accuracy", {"a"}}, {"Correct", {"c"}}, {"Total", {"n"}}}),
               Error);
}

}  // namespace
}  // namespace ctp
