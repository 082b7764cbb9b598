// The schemas of tanh, sigmoid, sqrt, square, gelu, clip, dropout,
// elementwise_div and their grad ops: Paddle's slots and attribute
// defaults, and inference on declared vars (unknown dims stay unknown).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ops/schema/op_def.h"

namespace ctp {
namespace {

using Shape = std::vector<int64_t>;

const OpDef& def(std::string_view type) {
  const OpDef* d = OpRegistry::global().find(type);
  if (!d) throw Error("no definition for " + std::string(type));
  return *d;
}

// "X Min? Max? -> Out": a def's slots, dispensable ones marked.
std::string slots(std::string_view type) {
  const OpDef& d = def(type);
  std::string s;
  for (const SlotDef& in : d.inputs) s += in.name + (in.dispensable ? "? " : " ");
  s += "->";
  for (const SlotDef& out : d.outputs) s += " " + out.name + (out.dispensable ? "?" : "");
  return s;
}

TEST(OpDefsActivation, SlotsAsPaddlesOpMakers) {
  for (const char* type : {"tanh", "sigmoid", "sqrt", "square", "gelu"})
    EXPECT_EQ(slots(type), "X -> Out") << type;
  // tanh, sigmoid and sqrt differentiate through Out; square and gelu through X.
  for (const char* type : {"tanh_grad", "sigmoid_grad", "sqrt_grad"})
    EXPECT_EQ(slots(type), "Out Out@GRAD -> X@GRAD?") << type;
  for (const char* type : {"square_grad", "gelu_grad"})
    EXPECT_EQ(slots(type), "X Out@GRAD -> X@GRAD?") << type;
  EXPECT_EQ(slots("clip"), "X Min? Max? -> Out");
  EXPECT_EQ(slots("clip_grad"), "X Min? Max? Out@GRAD -> X@GRAD?");
  EXPECT_EQ(slots("dropout"), "X Seed? -> Out Mask?");
  EXPECT_EQ(slots("dropout_grad"), "Mask Out@GRAD -> X@GRAD?");
  EXPECT_EQ(slots("elementwise_div"), "X Y -> Out");
  EXPECT_EQ(slots("elementwise_div_grad"), "X Y Out Out@GRAD -> X@GRAD? Y@GRAD?");
}

TEST(OpDefsActivation, AttributeDefaults) {
  const auto default_of = [](std::string_view type, std::string_view name) {
    const AttrDef* a = def(type).find_attr(name);
    if (!a) throw Error(std::string(type) + " has no " + std::string(name));
    return a->default_value;
  };
  EXPECT_EQ(*default_of("dropout", "dropout_prob"), Attribute(0.5f));
  EXPECT_EQ(*default_of("dropout", "is_test"), Attribute(false));
  EXPECT_EQ(*default_of("dropout", "fix_seed"), Attribute(false));
  EXPECT_EQ(*default_of("dropout", "seed"), Attribute(int32_t{0}));
  EXPECT_EQ(*default_of("dropout", "dropout_implementation"),
            Attribute(std::string("downgrade_in_infer")));
  EXPECT_EQ(*default_of("gelu", "approximate"), Attribute(false));
  EXPECT_EQ(*default_of("elementwise_div", "axis"), Attribute(int32_t{-1}));
  // Paddle's clip maker gives min and max no default.
  EXPECT_FALSE(default_of("clip", "min").has_value());
  EXPECT_FALSE(default_of("clip", "max").has_value());
  // Older programs write is_test as an INT.
  EXPECT_TRUE(def("tanh").find_attr("is_test")->accepts(AttrType::INT));
}

class Infer {
 public:
  Infer& var(const std::string& name, Shape shape, DataType dtype = DataType::FP32) {
    block_.add_var(Var{.name = name, .dtype = dtype, .shape = std::move(shape)});
    return *this;
  }
  std::string run(const Op& op) {
    for (const Slot& slot : op.outputs())
      for (const std::string& name : slot.args)
        block_.get_or_add_var(Var{.name = name, .dtype = DataType::BOOL, .shape = {-7}});
    try {
      def(op.type).infer_shape(op, block_);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
  const Var& operator[](const std::string& name) const { return block_.var(name); }

 private:
  Block block_;
};

TEST(OpDefsActivation, InferenceKeepsUnknownDims) {
  Infer t;
  t.var("x", {-1, 4}).var("h", {-1, 4}, DataType::FP16).var("seed", {1}, DataType::INT32);
  EXPECT_EQ(t.run(Op("gelu", {{"X", {"x"}}}, {{"Out", {"g"}}})), "");
  EXPECT_EQ(t["g"].shape, (Shape{-1, 4}));
  EXPECT_EQ(t.run(Op("gelu_grad", {{"X", {"x"}}, {"Out@GRAD", {"g"}}}, {{"X@GRAD", {"dx"}}})), "");
  EXPECT_EQ(t["dx"].shape, (Shape{-1, 4}));
  EXPECT_EQ(t.run(Op("dropout", {{"X", {"h"}}, {"Seed", {"seed"}}},
                     {{"Out", {"d"}}, {"Mask", {"mask"}}})),
            "");
  EXPECT_EQ(t["d"].shape, (Shape{-1, 4}));
  EXPECT_EQ(t["d"].dtype, DataType::FP16);
  EXPECT_EQ(t["mask"].dtype, DataType::UINT8);
  EXPECT_EQ(
      t.run(Op("dropout_grad", {{"Mask", {"mask"}}, {"Out@GRAD", {"d"}}}, {{"X@GRAD", {"dh"}}})),
      "");
  EXPECT_EQ(t["dh"].dtype, DataType::FP16);
  EXPECT_EQ(t.run(Op("clip", {{"X", {"x"}}}, {{"Out", {"c"}}},
                     {{"min", Attribute(-1.0f)}, {"max", Attribute(1.0f)}})),
            "");
  EXPECT_EQ(t["c"].shape, (Shape{-1, 4}));
}

TEST(OpDefsActivation, BadAttributesNameTheOp) {
  Infer t;
  t.var("x", {2, 3}).var("i", {2, 3}, DataType::INT64);
  EXPECT_EQ(t.run(Op("clip", {{"X", {"x"}}}, {{"Out", {"c"}}},
                     {{"min", Attribute(2.0f)}, {"max", Attribute(1.0f)}})),
            "block 0, op 'clip': max 1 is below min 2 (clip needs min <= max)");
  EXPECT_EQ(t.run(Op("clip", {{"X", {"x"}}}, {{"Out", {"c"}}}, {{"min", Attribute(0.0f)}})),
            "block 0, op 'clip': attribute 'max' is missing and has no default");
  EXPECT_EQ(
      t.run(Op("dropout", {{"X", {"x"}}}, {{"Out", {"d"}}}, {{"dropout_prob", Attribute(-0.5f)}})),
      "block 0, op 'dropout': dropout_prob -0.5 is outside [0, 1]");
  EXPECT_EQ(t.run(Op("dropout", {{"X", {"x"}}}, {{"Out", {"d"}}},
                     {{"dropout_implementation", Attribute(std::string("scale"))}})),
            "block 0, op 'dropout': dropout_implementation 'scale' is neither "
            "'downgrade_in_infer' nor 'upscale_in_train'");
  EXPECT_EQ(t.run(Op("sigmoid", {{"X", {"i"}}}, {{"Out", {"s"}}})),
            "block 0, op 'sigmoid': input X 'i' has dtype INT64; the op takes FP32, FP64, FP16 "
            "or BF16");
}

}  // namespace
}  // namespace ctp
