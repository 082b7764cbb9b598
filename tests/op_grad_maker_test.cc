// The grad makers of the op schemas (ops/schema/grad_maker.h): every maker
// writes ops its grad op's schema accepts, and the makers of the ops the
// sample MLP uses write what Paddle's GradOpMakers write.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unordered_set>

#include "ops/schema/op_def.h"

namespace ctp {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

const OpDef& def(std::string_view type) {
  const OpDef* d = OpRegistry::global().find(type);
  if (!d) throw Error("no definition for " + std::string(type));
  return *d;
}

// A value of an attribute type, for a required attribute.
Attribute some_value(AttrType type) {
  switch (type) {
    case AttrType::INT: return Attribute(int32_t{5});
    case AttrType::FLOAT: return Attribute(0.5f);
    case AttrType::STRING: return Attribute("");
    case AttrType::BOOLEAN: return Attribute(false);
    case AttrType::LONG: return Attribute(int64_t{1});
    case AttrType::INTS: return Attribute(std::vector<int32_t>{1});
    case AttrType::LONGS: return Attribute(std::vector<int64_t>{1});
    case AttrType::FLOATS: return Attribute(std::vector<float>{0.5f});
    default: return Attribute(std::vector<std::string>{});
  }
}

// A forward op of `d` with every slot filled (two vars in a list slot) and
// every attribute at its default (or some value, when required): what a
// maker may see.
Op full_forward_op(const OpDef& d) {
  Op op(d.type);
  for (const SlotDef& slot : d.inputs)
    op.set_input(slot.name, slot.duplicable ? std::vector<std::string>{"in_" + slot.name + "_0",
                                                                        "in_" + slot.name + "_1"}
                                            : std::vector<std::string>{"in_" + slot.name});
  for (const SlotDef& slot : d.outputs)
    op.set_output(slot.name, {"out_" + slot.name});
  for (const AttrDef& attr : d.attrs)
    op.set_attr(attr.name, attr.default_value ? *attr.default_value : some_value(attr.type));
  op.set_attr("op_role", Attribute(int32_t{0}));
  return op;
}

// The problems of one grad op against its schema: an unknown type, a slot or
// attribute the schema lacks, a required slot left out.
std::vector<std::string> problems(const std::string& forward, const Op& grad) {
  std::vector<std::string> found;
  const std::string where = forward + " -> " + grad.type + ": ";
  const OpDef* d = OpRegistry::global().find(grad.type);
  if (!d) return {where + "no schema"};
  for (const Slot& slot : grad.inputs())
    if (!d->find_input(slot.name)) found.push_back(where + "unknown input slot " + slot.name);
  for (const Slot& slot : grad.outputs())
    if (!d->find_output(slot.name)) found.push_back(where + "unknown output slot " + slot.name);
  for (const SlotDef& slot : d->inputs)
    if (!slot.dispensable && !grad.has_input(slot.name))
      found.push_back(where + "required input slot " + slot.name + " missing");
  for (const NamedAttribute& attr : grad.attrs())
    if (!OpRegistry::global().find_attr(grad.type, attr.name))
      found.push_back(where + "attribute " + attr.name + " unknown to the grad op");
  for (const AttrDef& attr : d->attrs)
    if (!attr.default_value && !grad.has_attr(attr.name))
      found.push_back(where + "required attribute " + attr.name + " missing");
  return found;
}

TEST(GradMakers, EveryMakerWritesOpsItsGradSchemaAccepts) {
  const std::unordered_set<std::string> no_grad;
  int makers = 0;
  std::vector<std::string> found;
  for (const std::string& type : OpRegistry::global().types()) {
    const OpDef& d = def(type);
    if (d.grad.kind != GradMaker::Kind::kOps) continue;
    ++makers;
    const Op forward = full_forward_op(d);
    const std::vector<Op> grads = d.grad.make(GradMakerContext(forward, no_grad));
    if (grads.empty()) found.push_back(type + ": the maker wrote no op");
    for (const Op& grad : grads)
      for (std::string& p : problems(type, grad)) found.push_back(std::move(p));
  }
  EXPECT_GE(makers, 12);
  EXPECT_THAT(found, IsEmpty());
}

TEST(GradMakers, TheOpsThatComputeDeclareTheirGradient) {
  for (const char* type : {"mul", "matmul_v2", "elementwise_add", "elementwise_sub",
                           "elementwise_mul", "relu", "mean", "reduce_mean",
                           "softmax_with_cross_entropy", "softmax", "cross_entropy2", "sum",
                           "scale", "cast", "assign", "elementwise_div", "tanh", "sigmoid",
                           "sqrt", "square", "gelu", "clip", "dropout"})
    EXPECT_EQ(def(type).grad.kind, GradMaker::Kind::kOps) << type;
  for (const char* type : {"fill_constant", "uniform_random", "gaussian_random", "feed", "fetch"})
    EXPECT_EQ(def(type).grad.kind, GradMaker::Kind::kNone) << type;
  // Grad ops themselves have no maker (no double grad yet).
  EXPECT_EQ(def("mul_grad").grad.kind, GradMaker::Kind::kUndeclared);
}

TEST(GradMakers, MulOnADataInputLeavesItsGradSlotEmptyAndCopiesTheAttributes) {
  const Op mul("mul", {{"X", {"x"}}, {"Y", {"fc_0.w_0"}}}, {{"Out", {"fc_0.tmp_0"}}},
               {{"x_num_col_dims", Attribute(int32_t{1})}, {"op_role", Attribute(int32_t{0})}});
  const std::unordered_set<std::string> no_grad = {"x"};
  const std::vector<Op> grads = def("mul").grad.make(GradMakerContext(mul, no_grad));
  ASSERT_EQ(grads.size(), 1u);
  const Op& g = grads[0];
  EXPECT_EQ(g.type, "mul_grad");
  EXPECT_THAT(*g.input("X"), ElementsAre("x"));
  EXPECT_THAT(*g.input("Y"), ElementsAre("fc_0.w_0"));
  EXPECT_THAT(*g.input("Out@GRAD"), ElementsAre("fc_0.tmp_0@GRAD"));
  ASSERT_TRUE(g.has_output("X@GRAD"));  // kept, with no var, as Paddle writes it
  EXPECT_THAT(*g.output("X@GRAD"), IsEmpty());
  EXPECT_THAT(*g.output("Y@GRAD"), ElementsAre("fc_0.w_0@GRAD"));
  EXPECT_EQ(g.attrs(), mul.attrs());
}

TEST(GradMakers, ReluAndSoftmaxCrossEntropyReadWhatPaddlesMakersPass) {
  const std::unordered_set<std::string> none;
  const Op relu("relu", {{"X", {"a"}}}, {{"Out", {"b"}}});
  const Op relu_grad = def("relu").grad.make(GradMakerContext(relu, none)).at(0);
  EXPECT_EQ(relu_grad.type, "relu_grad");
  EXPECT_EQ(relu_grad.inputs(), (std::vector<Slot>{{"Out", {"b"}}, {"Out@GRAD", {"b@GRAD"}}}));
  EXPECT_EQ(relu_grad.outputs(), (std::vector<Slot>{{"X@GRAD", {"a@GRAD"}}}));

  const Op swce("softmax_with_cross_entropy", {{"Logits", {"z"}}, {"Label", {"y"}}},
                {{"Softmax", {"p"}}, {"Loss", {"l"}}});
  const Op swce_grad = def(swce.type).grad.make(GradMakerContext(swce, none)).at(0);
  EXPECT_EQ(swce_grad.type, "softmax_with_cross_entropy_grad");
  EXPECT_EQ(swce_grad.inputs(), (std::vector<Slot>{{"Label", {"y"}}, {"Softmax", {"p"}},
                                                 {"Loss@GRAD", {"l@GRAD"}}}));
  EXPECT_EQ(swce_grad.outputs(), (std::vector<Slot>{{"Logits@GRAD", {"z@GRAD"}}}));
}

TEST(GradMakers, SumScaleAndCastWriteForwardOpsAsTheirGradients) {
  const std::unordered_set<std::string> no_grad = {"b"};
  const Op sum("sum", {{"X", {"a", "b", "c"}}}, {{"Out", {"s"}}});
  const std::vector<Op> sum_grads = def("sum").grad.make(GradMakerContext(sum, no_grad));
  ASSERT_EQ(sum_grads.size(), 3u);
  for (const Op& g : sum_grads) {
    EXPECT_EQ(g.type, "scale");
    EXPECT_THAT(*g.input("X"), ElementsAre("s@GRAD"));
    EXPECT_EQ(*g.attr("scale"), Attribute(1.0f));
  }
  EXPECT_THAT(*sum_grads[0].output("Out"), ElementsAre("a@GRAD"));
  EXPECT_THAT(*sum_grads[1].output("Out"), ElementsAre("@EMPTY@"));  // dropped by the pass
  EXPECT_THAT(*sum_grads[2].output("Out"), ElementsAre("c@GRAD"));

  const Op scale("scale", {{"X", {"a"}}}, {{"Out", {"s"}}},
                 {{"scale", Attribute(0.5f)}, {"bias", Attribute(3.0f)}});
  const Op scale_grad = def("scale").grad.make(GradMakerContext(scale, no_grad)).at(0);
  EXPECT_EQ(*scale_grad.attr("scale"), Attribute(0.5f));
  EXPECT_EQ(*scale_grad.attr("bias"), Attribute(0.0f));
  EXPECT_THAT(*scale_grad.output("Out"), ElementsAre("a@GRAD"));

  const Op cast("cast", {{"X", {"h"}}}, {{"Out", {"f"}}},
                {{"in_dtype", Attribute(int32_t{4})}, {"out_dtype", Attribute(int32_t{5})}});
  const Op cast_grad = def("cast").grad.make(GradMakerContext(cast, no_grad)).at(0);
  EXPECT_EQ(*cast_grad.attr("in_dtype"), Attribute(int32_t{5}));
  EXPECT_EQ(*cast_grad.attr("out_dtype"), Attribute(int32_t{4}));
  EXPECT_THAT(*cast_grad.input("X"), ElementsAre("f@GRAD"));
}

TEST(GradMakers, GradNamesFollowPaddle) {
  EXPECT_EQ(grad_var_name("fc_0.w_0"), "fc_0.w_0@GRAD");
  EXPECT_EQ(strip_grad_suffix("fc_0.w_0@GRAD"), "fc_0.w_0");
  EXPECT_EQ(strip_grad_suffix("x@GRAD@RENAME@block0@1"), "x");
  EXPECT_EQ(strip_grad_suffix("x"), "x");
  EXPECT_THROW(grad_op("bad_grad", {"X"}, {"X"}), Error);
}

}  // namespace
}  // namespace ctp
