#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "ops/schema/op_def.h"

namespace ctp {
namespace {

using Shape = std::vector<int64_t>;
using ::testing::HasSubstr;

const OpDef& def(std::string_view type) {
  const OpDef* d = OpRegistry::global().find(type);
  if (!d) throw Error("no definition for " + std::string(type));
  return *d;
}

// A block to run one op's shape inference in.
class Infer {
 public:
  Infer& var(const std::string& name, Shape shape, DataType dtype = DataType::FP32) {
    block_.add_var(Var{.name = name, .dtype = dtype, .shape = std::move(shape)});
    return *this;
  }
  // Declares each output var (shape unset) and runs the op's inference.
  void run(const Op& op) {
    for (const Slot& slot : op.outputs())
      for (const std::string& name : slot.args)
        block_.get_or_add_var(Var{.name = name, .dtype = DataType::BOOL, .shape = {-7}});
    const OpDef& d = def(op.type);
    ASSERT_TRUE(d.infer_shape) << op.type;
    d.infer_shape(op, block_);
  }
  // The message of the error inference throws.
  std::string error(const Op& op) {
    try {
      run(op);
    } catch (const Error& e) {
      return e.what();
    }
    return "(no error)";
  }
  Shape shape(const std::string& name) const { return block_.var(name).shape; }
  DataType dtype(const std::string& name) const { return block_.var(name).dtype; }
  Block& block() { return block_; }

 private:
  Block block_;
};

Op op(std::string type, std::vector<Slot> in, std::vector<Slot> out,
      std::vector<NamedAttribute> attrs = {}) {
  return Op(std::move(type), std::move(in), std::move(out), std::move(attrs));
}

TEST(OpDefs, EveryOpIsRegisteredWithConsistentTables) {
  const std::vector<std::string> expected = {
      "fill_constant", "uniform_random", "gaussian_random", "feed", "fetch", "mul", "mul_grad",
      "matmul_v2", "matmul_v2_grad", "elementwise_add", "elementwise_add_grad",
      "elementwise_sub", "elementwise_sub_grad", "elementwise_mul", "elementwise_mul_grad",
      "relu", "relu_grad", "softmax_with_cross_entropy", "softmax_with_cross_entropy_grad",
      "mean", "mean_grad", "reduce_mean", "reduce_mean_grad", "sum", "scale", "assign", "split",
      "concat", "sgd", "momentum", "adam", "adamw", "lamb", "rmsprop", "c_gen_nccl_id", "c_comm_init",
      "c_comm_init_multitrainer", "c_comm_init_all", "c_broadcast", "c_allreduce_sum",
      "c_allreduce_max", "c_allreduce_min", "c_allreduce_prod", "c_allreduce_xsum",
      "c_allgather", "c_sync_calc_stream", "c_sync_comm_stream", "coalesce_tensor"};
  for (const std::string& type : expected) {
    const OpDef* d = OpRegistry::global().find(type);
    ASSERT_NE(d, nullptr) << type;
    std::set<std::string> names;
    for (const SlotDef& s : d->inputs) EXPECT_TRUE(names.insert("in:" + s.name).second) << type;
    for (const SlotDef& s : d->outputs) EXPECT_TRUE(names.insert("out:" + s.name).second) << type;
    for (const AttrDef& a : d->attrs) {
      EXPECT_TRUE(names.insert("attr:" + a.name).second) << type << " " << a.name;
      if (a.default_value) {
        EXPECT_EQ(a.default_value->type(), a.type) << type << " " << a.name;
      }
      EXPECT_EQ(OpRegistry::common_attr(a.name), nullptr) << type << " redeclares " << a.name;
    }
  }
}

TEST(OpDefs, AttributesFollowPaddle) {
  auto attr_of = [](std::string_view type, std::string_view name) {
    const AttrDef* a = def(type).find_attr(name);
    if (!a) throw Error(std::string(type) + " lacks " + std::string(name));
    return *a;
  };
  const AttrDef shape = attr_of("fill_constant", "shape");
  EXPECT_EQ(shape.type, AttrType::LONGS);
  EXPECT_TRUE(shape.accepts(AttrType::INTS));
  EXPECT_FALSE(shape.accepts(AttrType::FLOATS));
  EXPECT_EQ(*attr_of("fill_constant", "dtype").default_value, Attribute(int32_t{5}));
  EXPECT_EQ(*attr_of("c_allreduce_sum", "ring_id").default_value, Attribute(int32_t{0}));
  EXPECT_EQ(*attr_of("c_allreduce_xsum", "ring_id").default_value, Attribute(int32_t{-1}));
  EXPECT_EQ(*attr_of("c_broadcast", "use_calc_stream").default_value, Attribute(false));
  EXPECT_FALSE(attr_of("c_allgather", "nranks").default_value);
  EXPECT_FALSE(attr_of("c_gen_nccl_id", "endpoint").default_value);
  EXPECT_FALSE(attr_of("coalesce_tensor", "dtype").default_value);
  EXPECT_EQ(*attr_of("coalesce_tensor", "use_align").default_value, Attribute(true));
  EXPECT_EQ(*attr_of("coalesce_tensor", "align_size").default_value, Attribute(int32_t{-1}));
  const AttrDef min_rows = attr_of("adam", "min_row_size_to_use_multithread");
  EXPECT_EQ(*min_rows.default_value, Attribute(int64_t{1000}));
  EXPECT_TRUE(min_rows.accepts(AttrType::INT));
  EXPECT_EQ(*attr_of("adam", "epsilon").default_value, Attribute(1.0e-8f));
  EXPECT_FALSE(attr_of("lamb", "weight_decay").default_value);
  EXPECT_FALSE(attr_of("momentum", "mu").default_value);
  EXPECT_EQ(*attr_of("scale", "bias_after_scale").default_value, Attribute(true));
  EXPECT_EQ(*attr_of("softmax_with_cross_entropy", "ignore_index").default_value,
            Attribute(int32_t{-100}));
  EXPECT_EQ(*attr_of("elementwise_add", "axis").default_value, Attribute(int32_t{-1}));
  EXPECT_TRUE(def("mul_grad").find_output("X@GRAD")->dispensable);
  EXPECT_TRUE(def("coalesce_tensor").find_input("Input")->duplicable);
  EXPECT_FALSE(def("c_broadcast").find_input("X")->duplicable);
  // The registry's attribute lookup falls back to the common attributes.
  EXPECT_EQ(OpRegistry::global().find_attr("mul", "op_role")->type, AttrType::INT);
}

TEST(OpDefs, Initializers) {
  Infer t;
  t.run(op("fill_constant", {}, {{"Out", {"a"}}},
           {{"shape", Attribute(std::vector<int32_t>{2, 3})}, {"dtype", Attribute(int32_t{3})}}));
  EXPECT_EQ(t.shape("a"), (Shape{2, 3}));
  EXPECT_EQ(t.dtype("a"), DataType::INT64);
  t.run(op("uniform_random", {}, {{"Out", {"b"}}},
           {{"shape", Attribute(std::vector<int64_t>{-1, 4})}}));
  EXPECT_EQ(t.shape("b"), (Shape{-1, 4}));
  EXPECT_EQ(t.dtype("b"), DataType::FP32);
  t.var("s0", {1}, DataType::INT32).var("s1", {1}, DataType::INT32);
  t.run(op("gaussian_random", {{"ShapeTensorList", {"s0", "s1"}}}, {{"Out", {"c"}}},
           {{"dtype", Attribute(int32_t{6})}}));
  EXPECT_EQ(t.shape("c"), (Shape{-1, -1}));
  EXPECT_EQ(t.dtype("c"), DataType::FP64);
  // A ShapeTensor of 3 elements: rank 3, dims known at run time, unless the
  // shape attribute is set; a ShapeTensor of unknown size keeps the declaration.
  t.var("shape3", {3}, DataType::INT64).var("shape_any", {-1}, DataType::INT64);
  t.var("d", {7, 7});
  t.run(op("fill_constant", {{"ShapeTensor", {"shape3"}}}, {{"Out", {"d"}}},
           {{"dtype", Attribute(int32_t{2})}}));
  EXPECT_EQ(t.shape("d"), (Shape{-1, -1, -1}));
  EXPECT_EQ(t.dtype("d"), DataType::INT32);
  t.run(op("uniform_random", {{"ShapeTensor", {"shape3"}}}, {{"Out", {"d"}}},
           {{"shape", Attribute(std::vector<int64_t>{4, 5, 6})}}));
  EXPECT_EQ(t.shape("d"), (Shape{4, 5, 6}));
  t.var("kept", {7, 7});
  t.run(op("fill_constant", {{"ShapeTensor", {"shape_any"}}}, {{"Out", {"kept"}}},
           {{"dtype", Attribute(int32_t{3})}}));
  EXPECT_EQ(t.shape("kept"), (Shape{7, 7}));
  EXPECT_EQ(t.dtype("kept"), DataType::INT64);
  EXPECT_EQ(t.error(op("gaussian_random", {}, {{"Out", {"e"}}},
                       {{"dtype", Attribute(int32_t{7})}})),
            "block 0, op 'gaussian_random': attribute 'dtype' is 7, which is not a tensor element type");
}

TEST(OpDefs, MulFlattensAtNumColDims) {
  Infer t;
  t.var("x", {2, 3, 4}).var("y", {12, 5}).var("y4", {4, 5}).var("y22", {2, 2, 5});
  t.run(op("mul", {{"X", {"x"}}, {"Y", {"y"}}}, {{"Out", {"o1"}}}));
  EXPECT_EQ(t.shape("o1"), (Shape{2, 5}));
  t.run(op("mul", {{"X", {"x"}}, {"Y", {"y4"}}}, {{"Out", {"o2"}}},
           {{"x_num_col_dims", Attribute(int32_t{2})}}));
  EXPECT_EQ(t.shape("o2"), (Shape{2, 3, 5}));
  t.run(op("mul", {{"X", {"x"}}, {"Y", {"y22"}}}, {{"Out", {"o3"}}},
           {{"x_num_col_dims", Attribute(int32_t{2})}, {"y_num_col_dims", Attribute(int32_t{2})}}));
  EXPECT_EQ(t.shape("o3"), (Shape{2, 3, 5}));
  t.var("batch", {-1, 12});
  t.run(op("mul", {{"X", {"batch"}}, {"Y", {"y"}}}, {{"Out", {"o4"}}}));
  EXPECT_EQ(t.shape("o4"), (Shape{-1, 5}));
  EXPECT_EQ(t.error(op("mul", {{"X", {"x"}}, {"Y", {"y4"}}}, {{"Out", {"o5"}}})),
            "block 0, op 'mul': input X 'x' [2, 3, 4] flattens to width 12, but input Y 'y4' [4, 5] "
            "flattens to height 4");
  t.var("y@GRAD", {}).var("o1@GRAD", {2, 5});
  t.run(op("mul_grad", {{"X", {"x"}}, {"Y", {"y"}}, {"Out@GRAD", {"o1@GRAD"}}},
           {{"X@GRAD", {"x@GRAD"}}, {"Y@GRAD", {"y@GRAD"}}}));
  EXPECT_EQ(t.shape("x@GRAD"), (Shape{2, 3, 4}));
  EXPECT_EQ(t.shape("y@GRAD"), (Shape{12, 5}));
  EXPECT_EQ(t.dtype("x@GRAD"), DataType::FP32);
}

TEST(OpDefs, MatmulV2TransposesAndBroadcastsBatches) {
  Infer t;
  t.var("a", {2, 3}).var("b", {3, 4}).var("at", {3, 2}).var("bt", {4, 3});
  t.var("batched", {5, 1, 2, 3}).var("bb", {4, 3, 6}).var("v", {3});
  auto mm = [&](const char* x, const char* y, const char* out, bool tx = false, bool ty = false) {
    t.run(op("matmul_v2", {{"X", {x}}, {"Y", {y}}}, {{"Out", {out}}},
             {{"trans_x", Attribute(tx)}, {"trans_y", Attribute(ty)}}));
    return t.shape(out);
  };
  EXPECT_EQ(mm("a", "b", "o1"), (Shape{2, 4}));
  EXPECT_EQ(mm("at", "b", "o2", true), (Shape{2, 4}));
  EXPECT_EQ(mm("a", "bt", "o3", false, true), (Shape{2, 4}));
  EXPECT_EQ(mm("batched", "bb", "o4"), (Shape{5, 4, 2, 6}));
  EXPECT_EQ(mm("v", "b", "o5"), (Shape{4}));
  EXPECT_EQ(mm("a", "v", "o6"), (Shape{2}));
  EXPECT_EQ(mm("v", "v", "o7"), (Shape{}));
  EXPECT_THAT(t.error(op("matmul_v2", {{"X", {"a"}}, {"Y", {"a"}}}, {{"Out", {"o8"}}})),
              HasSubstr("block 0, op 'matmul_v2': contracted dims of input X 'a' [2, 3] and input Y 'a'"));
  t.var("b5", {5, 2, 3});
  EXPECT_THAT(t.error(op("matmul_v2", {{"X", {"b5"}}, {"Y", {"bb"}}}, {{"Out", {"o9"}}})),
              HasSubstr("block 0, op 'matmul_v2': the batch dims of input X 'b5' [5, 2, 3] and "
                        "input Y 'bb' [4, 3, 6] at dim 0: 5 vs 4 do not broadcast"));
  t.run(op("matmul_v2_grad", {{"X", {"a"}}, {"Y", {"b"}}, {"Out@GRAD", {"o1"}}},
           {{"X@GRAD", {"a@GRAD"}}}));
  EXPECT_EQ(t.shape("a@GRAD"), (Shape{2, 3}));
}

TEST(OpDefs, ElementwiseBroadcastsByAxis) {
  Infer t;
  t.var("x", {2, 3, 4}).var("y3", {3}).var("y4", {4}).var("y34", {3, 4}).var("y14", {1, 4});
  t.var("row", {-1, 4}).var("i", {2, 3, 4}, DataType::INT64);
  auto ew = [&](const char* type, const char* x, const char* y, const char* out, int axis = -1) {
    t.run(op(type, {{"X", {x}}, {"Y", {y}}}, {{"Out", {out}}}, {{"axis", Attribute(axis)}}));
    return t.shape(out);
  };
  EXPECT_EQ(ew("elementwise_add", "x", "y3", "o1", 1), (Shape{2, 3, 4}));
  EXPECT_EQ(ew("elementwise_sub", "x", "y4", "o2"), (Shape{2, 3, 4}));
  EXPECT_EQ(ew("elementwise_mul", "x", "y34", "o3"), (Shape{2, 3, 4}));
  EXPECT_EQ(ew("elementwise_add", "y14", "y34", "o4"), (Shape{3, 4}));
  EXPECT_EQ(ew("elementwise_add", "y4", "y34", "o5"), (Shape{3, 4}));  // Y has the higher rank
  EXPECT_EQ(ew("elementwise_add", "row", "y4", "o6"), (Shape{-1, 4}));
  EXPECT_EQ(t.error(op("elementwise_add", {{"X", {"x"}}, {"Y", {"y3"}}}, {{"Out", {"o7"}}})),
            "block 0, op 'elementwise_add': input X 'x' [2, 3, 4] and input Y 'y3' [3] at dim 2: 4 vs 3 "
            "do not broadcast");
  EXPECT_THAT(t.error(op("elementwise_mul", {{"X", {"x"}}, {"Y", {"y3"}}}, {{"Out", {"o8"}}},
                         {{"axis", Attribute(int32_t{3})}})),
              HasSubstr("block 0, op 'elementwise_mul': axis 3 cannot align input X 'x'"));
  EXPECT_EQ(t.error(op("elementwise_add", {{"X", {"x"}}, {"Y", {"i"}}}, {{"Out", {"o9"}}})),
            "block 0, op 'elementwise_add': input X 'x' has dtype FP32, but input Y 'i' has INT64");
  t.var("o1@GRAD", {2, 3, 4});
  t.run(op("elementwise_sub_grad", {{"X", {"x"}}, {"Y", {"y3"}}, {"Out@GRAD", {"o1@GRAD"}}},
           {{"X@GRAD", {"x@GRAD"}}, {"Y@GRAD", {"y3@GRAD"}}}, {{"axis", Attribute(int32_t{1})}}));
  EXPECT_EQ(t.shape("x@GRAD"), (Shape{2, 3, 4}));
  EXPECT_EQ(t.shape("y3@GRAD"), (Shape{3}));
}

TEST(OpDefs, ActivationsAndLoss) {
  Infer t;
  t.var("x", {8, 10}, DataType::FP64).var("label", {8, 1}, DataType::INT64);
  t.var("soft", {8, 10}).var("bad", {8, 2}, DataType::INT64);
  t.run(op("relu", {{"X", {"x"}}}, {{"Out", {"r"}}}));
  EXPECT_EQ(t.shape("r"), (Shape{8, 10}));
  EXPECT_EQ(t.dtype("r"), DataType::FP64);
  t.var("r@GRAD", {8, 10}, DataType::FP64);
  t.run(op("relu_grad", {{"Out", {"r"}}, {"Out@GRAD", {"r@GRAD"}}}, {{"X@GRAD", {"x@GRAD"}}}));
  EXPECT_EQ(t.shape("x@GRAD"), (Shape{8, 10}));
  t.run(op("softmax_with_cross_entropy", {{"Logits", {"x"}}, {"Label", {"label"}}},
           {{"Softmax", {"sm"}}, {"Loss", {"loss"}}}));
  EXPECT_EQ(t.shape("sm"), (Shape{8, 10}));
  EXPECT_EQ(t.shape("loss"), (Shape{8, 1}));
  EXPECT_EQ(t.dtype("loss"), DataType::FP64);
  t.run(op("softmax_with_cross_entropy", {{"Logits", {"x"}}, {"Label", {"soft"}}},
           {{"Softmax", {"sm2"}}, {"Loss", {"loss2"}}}, {{"soft_label", Attribute(true)}}));
  EXPECT_EQ(t.shape("loss2"), (Shape{8, 1}));
  EXPECT_EQ(t.error(op("softmax_with_cross_entropy", {{"Logits", {"x"}}, {"Label", {"bad"}}},
                       {{"Softmax", {"sm3"}}, {"Loss", {"loss3"}}})),
            "block 0, op 'softmax_with_cross_entropy': input Label 'bad' has shape [8, 2], expected [8, 1] "
            "for input Logits 'x' [8, 10] (hard labels)");
  t.var("loss@GRAD", {8, 1}, DataType::FP64);
  t.run(op("softmax_with_cross_entropy_grad",
           {{"Label", {"label"}}, {"Softmax", {"sm"}}, {"Loss@GRAD", {"loss@GRAD"}}},
           {{"Logits@GRAD", {"logits@GRAD"}}}));
  EXPECT_EQ(t.shape("logits@GRAD"), (Shape{8, 10}));
  EXPECT_EQ(t.dtype("logits@GRAD"), DataType::FP64);
}

TEST(OpDefs, MeansSumsAndScale) {
  Infer t;
  t.var("x", {2, 3, 4}).var("x2", {-1, 3, 4}).var("bad", {2, 3});
  t.run(op("mean", {{"X", {"x"}}}, {{"Out", {"m"}}}));
  EXPECT_EQ(t.shape("m"), (Shape{}));
  t.run(op("mean_grad", {{"X", {"x"}}, {"Out@GRAD", {"m"}}}, {{"X@GRAD", {"x@GRAD"}}}));
  EXPECT_EQ(t.shape("x@GRAD"), (Shape{2, 3, 4}));
  auto reduce = [&](const char* out, std::vector<NamedAttribute> attrs) {
    t.run(op("reduce_mean", {{"X", {"x"}}}, {{"Out", {out}}}, std::move(attrs)));
    return t.shape(out);
  };
  EXPECT_EQ(reduce("r0", {}), (Shape{3, 4}));
  EXPECT_EQ(reduce("r1", {{"dim", Attribute(std::vector<int32_t>{1})}}), (Shape{2, 4}));
  EXPECT_EQ(reduce("r2", {{"dim", Attribute(std::vector<int64_t>{-1})},
                          {"keep_dim", Attribute(true)}}),
            (Shape{2, 3, 1}));
  EXPECT_EQ(reduce("r3", {{"reduce_all", Attribute(true)}}), (Shape{}));
  EXPECT_EQ(reduce("r4", {{"reduce_all", Attribute(true)}, {"keep_dim", Attribute(true)}}),
            (Shape{1, 1, 1}));
  EXPECT_EQ(t.error(op("reduce_mean", {{"X", {"x"}}}, {{"Out", {"r5"}}},
                       {{"dim", Attribute(std::vector<int32_t>{3})}})),
            "block 0, op 'reduce_mean': dim 3 is out of range for rank 3");
  t.run(op("reduce_mean_grad", {{"X", {"x"}}, {"Out@GRAD", {"r1"}}}, {{"X@GRAD", {"xr@GRAD"}}},
           {{"dim", Attribute(std::vector<int32_t>{1})}}));
  EXPECT_EQ(t.shape("xr@GRAD"), (Shape{2, 3, 4}));
  t.run(op("sum", {{"X", {"x2", "x"}}}, {{"Out", {"s"}}}));
  EXPECT_EQ(t.shape("s"), (Shape{2, 3, 4}));
  EXPECT_EQ(t.error(op("sum", {{"X", {"x", "bad"}}}, {{"Out", {"s2"}}})),
            "block 0, op 'sum': input X 'bad' has shape [2, 3], but input X 'x' has [2, 3, 4]");
  t.run(op("scale", {{"X", {"x2"}}}, {{"Out", {"sc"}}}, {{"scale", Attribute(2.0f)}}));
  EXPECT_EQ(t.shape("sc"), (Shape{-1, 3, 4}));
  t.run(op("assign", {{"X", {"x"}}}, {{"Out", {"as"}}}));
  EXPECT_EQ(t.shape("as"), (Shape{2, 3, 4}));
}

TEST(OpDefs, SplitAndConcat) {
  Infer t;
  t.var("x", {6, 4}).var("y", {2, 4}).var("z", {3, 5});
  t.run(op("split", {{"X", {"x"}}}, {{"Out", {"a", "b", "c"}}}, {{"num", Attribute(int32_t{3})}}));
  EXPECT_EQ(t.shape("a"), (Shape{2, 4}));
  EXPECT_EQ(t.shape("c"), (Shape{2, 4}));
  t.run(op("split", {{"X", {"x"}}}, {{"Out", {"d", "e", "f"}}},
           {{"sections", Attribute(std::vector<int32_t>{1, -1, 2})}}));
  EXPECT_EQ(t.shape("d"), (Shape{1, 4}));
  EXPECT_EQ(t.shape("e"), (Shape{3, 4}));
  EXPECT_EQ(t.shape("f"), (Shape{2, 4}));
  t.run(op("split", {{"X", {"x"}}}, {{"Out", {"g", "h"}}},
           {{"num", Attribute(int32_t{2})}, {"axis", Attribute(int32_t{-1})}}));
  EXPECT_EQ(t.shape("h"), (Shape{6, 2}));
  EXPECT_EQ(t.error(op("split", {{"X", {"x"}}}, {{"Out", {"i", "j", "k", "l"}}},
                       {{"num", Attribute(int32_t{4})}})),
            "block 0, op 'split': input X 'x' has dim 6 on axis 0, not divisible by num 4");
  EXPECT_EQ(t.error(op("split", {{"X", {"x"}}}, {{"Out", {"i", "j"}}},
                       {{"num", Attribute(int32_t{3})}})),
            "block 0, op 'split': num is 3 but output Out has 2 vars");
  t.run(op("concat", {{"X", {"x", "y"}}}, {{"Out", {"cat"}}}));
  EXPECT_EQ(t.shape("cat"), (Shape{8, 4}));
  EXPECT_EQ(t.error(op("concat", {{"X", {"x", "z"}}}, {{"Out", {"cat2"}}})),
            "block 0, op 'concat': input X 'z' disagrees on dim 1: 4 vs 5");
}

TEST(OpDefs, Optimizers) {
  Infer t;
  t.var("w", {4, 2}).var("g", {4, 2}).var("lr", {1}).var("m1", {4, 2}).var("m2", {4, 2});
  t.var("b1", {1}).var("b2", {1}).var("vel", {4, 2}).var("g_bad", {2, 4}).var("lr2", {2});
  t.run(op("sgd", {{"Param", {"w"}}, {"Grad", {"g"}}, {"LearningRate", {"lr"}}},
           {{"ParamOut", {"w_out"}}}));
  EXPECT_EQ(t.shape("w_out"), (Shape{4, 2}));
  EXPECT_EQ(t.error(op("sgd", {{"Param", {"w"}}, {"Grad", {"g_bad"}}, {"LearningRate", {"lr"}}},
                       {{"ParamOut", {"w"}}})),
            "block 0, op 'sgd': input Grad 'g_bad' [2, 4] FP32 does not match input Param 'w' [4, 2] "
            "FP32");
  EXPECT_EQ(t.error(op("sgd", {{"Param", {"w"}}, {"Grad", {"g"}}, {"LearningRate", {"lr2"}}},
                       {{"ParamOut", {"w"}}})),
            "block 0, op 'sgd': input LearningRate 'lr2' must hold one element, has 2");
  t.run(op("momentum",
           {{"Param", {"w"}}, {"Grad", {"g"}}, {"Velocity", {"vel"}}, {"LearningRate", {"lr"}}},
           {{"ParamOut", {"w"}}, {"VelocityOut", {"vel_out"}}}, {{"mu", Attribute(0.9f)}}));
  EXPECT_EQ(t.shape("vel_out"), (Shape{4, 2}));
  for (const char* type : {"adam", "adamw", "lamb"}) {
    const std::string p = type;
    t.run(op(type,
             {{"Param", {"w"}}, {"Grad", {"g"}}, {"LearningRate", {"lr"}}, {"Moment1", {"m1"}},
              {"Moment2", {"m2"}}, {"Beta1Pow", {"b1"}}, {"Beta2Pow", {"b2"}}},
             {{"ParamOut", {p + "_w"}}, {"Moment1Out", {p + "_m1"}}, {"Moment2Out", {p + "_m2"}},
              {"Beta1PowOut", {p + "_b1"}}, {"Beta2PowOut", {p + "_b2"}}},
             {{"weight_decay", Attribute(0.01f)}}));
    EXPECT_EQ(t.shape(p + "_w"), (Shape{4, 2}));
    EXPECT_EQ(t.shape(p + "_m2"), (Shape{4, 2}));
    EXPECT_EQ(t.shape(p + "_b1"), (Shape{1}));
  }
  t.var("ms", {4, 2}).var("mom", {4, 2}).var("mg", {4, 2});
  t.run(op("rmsprop",
           {{"Param", {"w"}}, {"MeanSquare", {"ms"}}, {"MeanGrad", {"mg"}}, {"LearningRate", {"lr"}},
            {"Grad", {"g"}}, {"Moment", {"mom"}}},
           {{"ParamOut", {"rms_w"}}, {"MomentOut", {"rms_mom"}}, {"MeanSquareOut", {"rms_ms"}},
            {"MeanGradOut", {"rms_mg"}}}));
  EXPECT_EQ(t.shape("rms_mom"), (Shape{4, 2}));
  EXPECT_EQ(t.shape("rms_mg"), (Shape{4, 2}));
  t.var("ms_bad", {3});
  EXPECT_EQ(t.error(op("rmsprop",
                       {{"Param", {"w"}}, {"MeanSquare", {"ms_bad"}}, {"LearningRate", {"lr"}},
                        {"Grad", {"g"}}, {"Moment", {"mom"}}},
                       {{"ParamOut", {"w"}}, {"MomentOut", {"mom"}}, {"MeanSquareOut", {"ms"}}})),
            "block 0, op 'rmsprop': input MeanSquare 'ms_bad' [3] FP32 does not match input Param "
            "'w' [4, 2] FP32");
}

TEST(OpDefs, Collectives) {
  Infer t;
  t.var("g", {3, 5}).var("dyn", {-1, 5}).var("scalar", {}).var("h", {7}, DataType::FP16);
  auto gather = [&](const char* x, const char* out) {
    t.run(op("c_allgather", {{"X", {x}}}, {{"Out", {out}}}, {{"nranks", Attribute(int32_t{4})}}));
    return t.shape(out);
  };
  EXPECT_EQ(gather("g", "g4"), (Shape{12, 5}));
  EXPECT_EQ(gather("dyn", "dyn4"), (Shape{-1, 5}));
  EXPECT_EQ(gather("scalar", "scalar4"), (Shape{4}));
  EXPECT_EQ(t.error(op("c_allgather", {{"X", {"g"}}}, {{"Out", {"x"}}})),
            "block 0, op 'c_allgather': attribute 'nranks' is missing and has no default");
  t.run(op("c_allreduce_max", {{"X", {"h"}}}, {{"Out", {"h_out"}}}));
  EXPECT_EQ(t.shape("h_out"), (Shape{7}));
  EXPECT_EQ(t.dtype("h_out"), DataType::FP16);
  t.run(op("c_broadcast", {{"X", {"g"}}}, {{"Out", {"g"}}}));
  EXPECT_EQ(t.shape("g"), (Shape{3, 5}));
  t.run(op("c_allreduce_xsum", {{"X", {"g", "h"}}}, {{"Out", {"xg", "xh"}}}));
  EXPECT_EQ(t.shape("xg"), (Shape{3, 5}));
  EXPECT_EQ(t.dtype("xh"), DataType::FP16);
  EXPECT_EQ(t.error(op("c_allreduce_xsum", {{"X", {"g", "h"}}}, {{"Out", {"xg"}}})),
            "block 0, op 'c_allreduce_xsum': input X has 2 vars but output Out has 1");
  t.run(op("c_sync_comm_stream", {{"X", {"g", "h"}}}, {{"Out", {"g", "h"}}}));
  EXPECT_EQ(t.shape("h"), (Shape{7}));
  // Outputs must be declared: Infer::run declares them, so call the definition directly.
  Block& b = t.block();
  const Op missing_out = op("c_allreduce_sum", {{"X", {"g"}}}, {{"Out", {"nowhere"}}});
  try {
    def("c_allreduce_sum").infer_shape(missing_out, b);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "block 0, op 'c_allreduce_sum': output Out 'nowhere' is not declared in block 0");
  }
}

TEST(OpDefs, CoalesceTensorAlignsChunks) {
  Infer t;
  t.var("a", {10}).var("b", {3, 5}).var("dyn", {-1, 2});
  auto fuse = [&](const char* out, std::vector<NamedAttribute> attrs,
                  std::vector<std::string> inputs = {"a", "b"}) {
    attrs.push_back({"dtype", Attribute(int32_t{5})});
    std::vector<std::string> outputs;
    for (const std::string& in : inputs) outputs.push_back(std::string(out) + "_" + in);
    t.run(op("coalesce_tensor", {{"Input", inputs}},
             {{"Output", outputs}, {"FusedOutput", {out}}}, std::move(attrs)));
    return t.shape(out);
  };
  // 40 and 60 bytes each round up to 256 bytes = 64 floats.
  EXPECT_EQ(fuse("f1", {}), (Shape{128}));
  EXPECT_EQ(t.shape("f1_b"), (Shape{3, 5}));
  EXPECT_EQ(t.dtype("f1"), DataType::FP32);
  EXPECT_EQ(fuse("f2", {{"use_align", Attribute(false)}}), (Shape{25}));
  EXPECT_EQ(fuse("f3", {{"align_size", Attribute(int32_t{512})}}), (Shape{256}));
  // user_defined_size_of_dtype may only restate the dtype's size: the kernels
  // fuse tensors of one element size.
  EXPECT_EQ(fuse("f4", {{"user_defined_size_of_dtype", Attribute(int32_t{4})}}), (Shape{128}));
  EXPECT_EQ(t.error(op("coalesce_tensor", {{"Input", {"a", "b"}}},
                       {{"Output", {"a", "b"}}, {"FusedOutput", {"f7"}}},
                       {{"dtype", Attribute(int32_t{5})},
                        {"user_defined_size_of_dtype", Attribute(int32_t{2})}})),
            "block 0, op 'coalesce_tensor': user_defined_size_of_dtype 2 differs from the 4-byte "
            "dtype FP32; mixed-size fusion is not supported");
  EXPECT_EQ(fuse("f5", {}, {"a", "dyn"}), (Shape{-1}));
  EXPECT_EQ(t.error(op("coalesce_tensor", {{"Input", {"a", "b"}}},
                       {{"Output", {"a"}}, {"FusedOutput", {"f6"}}},
                       {{"dtype", Attribute(int32_t{5})}})),
            "block 0, op 'coalesce_tensor': output Output has 1 vars but input Input has 2");
  // Every input has the fused dtype: the kernels view them in one buffer.
  EXPECT_EQ(t.error(op("coalesce_tensor", {{"Input", {"a", "b"}}},
                       {{"Output", {"a", "b"}}, {"FusedOutput", {"f8"}}},
                       {{"dtype", Attribute(int32_t{6})}})),
            "block 0, op 'coalesce_tensor': input Input 'a' has dtype FP32, but dtype is FP64");
  t.var("a64", {10}, DataType::FP64).var("b64", {3, 5}, DataType::FP64);
  t.run(op("coalesce_tensor", {{"Input", {"a64", "b64"}}},
           {{"Output", {"a64", "b64"}}, {"FusedOutput", {"f64"}}},
           {{"dtype", Attribute(int32_t{6})}}));
  EXPECT_EQ(t.shape("f64"), (Shape{64}));  // 80 and 120 bytes -> 256 each = 32 doubles
  EXPECT_EQ(t.dtype("f64"), DataType::FP64);
}

}  // namespace
}  // namespace ctp
