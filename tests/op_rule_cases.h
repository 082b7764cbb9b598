// Bad ops whose rules (ops/schema/meta_*.h) the schema's shape inference and
// the kernels share: each case is one op and its input tensors, and the text
// both must fail with. tests/op_rules_test.cc runs them on the CPU kernels,
// tests/gpu/op_rules_gpu_test.cc on the CUDA kernels.
#pragma once
#include <gtest/gtest.h>

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "executor/executor.h"
#include "ops/schema/op_def.h"

namespace ctp::test {

struct RuleCase {
  std::string name;
  Op op;
  std::map<std::string, Tensor> inputs;  // by var name
  std::string message;                   // what follows the op's place
};

// gtest prints a case by its name.
inline void PrintTo(const RuleCase& c, std::ostream* os) { *os << c.name; }

inline Tensor filled(DataType dtype, std::vector<int64_t> shape, double value = 0.5) {
  Tensor t(dtype, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) {
    switch (dtype) {
      case DataType::FP32: t.data<float>()[i] = static_cast<float>(value); break;
      case DataType::FP64: t.data<double>()[i] = value; break;
      case DataType::INT64: t.data<int64_t>()[i] = static_cast<int64_t>(value); break;
      case DataType::INT32: t.data<int32_t>()[i] = static_cast<int32_t>(value); break;
      default: ADD_FAILURE() << "filled: unexpected dtype";
    }
  }
  return t;
}
inline Tensor f32(std::vector<int64_t> shape) { return filled(DataType::FP32, std::move(shape)); }

// The program a case runs in: an assign first (so that the case's op is op 1
// of block 0, not op 0), every var declared with its tensor's shape and dtype.
inline Program rule_program(const RuleCase& c) {
  Program program = Program::with_global_block();
  Block& block = program.global_block();
  block.add_var(Var{.name = "lead", .shape = {1}});
  block.add_var(Var{.name = "lead_copy", .shape = {1}});
  for (const auto& [name, t] : c.inputs)
    block.add_var(Var{.name = name, .dtype = t.dtype(), .shape = t.shape()});
  for (const Slot& slot : c.op.outputs())
    for (const std::string& name : slot.args)
      if (!block.has_var(name)) block.add_var(Var{.name = name, .shape = {-1}});
  block.append_op(Op("assign", {{"X", {"lead"}}}, {{"Out", {"lead_copy"}}}));
  block.append_op(c.op);
  return program;
}

// The error the schema's shape inference of the case's op raises.
inline std::string infer_error(const RuleCase& c) {
  Program program = rule_program(c);
  Block& block = program.global_block();
  const OpDef* def = OpRegistry::global().find(c.op.type);
  if (!def || !def->infer_shape) return "(no inference for " + c.op.type + ")";
  try {
    def->infer_shape(*std::next(block.ops().begin()), block);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// The error running the case's program on `services`' device raises.
inline std::string run_error(const RuleCase& c, RunServices services = {}) {
  const Program program = rule_program(c);
  Scope scope;
  scope.var("lead") = f32({1});
  for (const auto& [name, t] : c.inputs) scope.var(name) = t;
  try {
    Executor(program, std::move(services)).run(scope);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

inline Op rule_op(std::string type, std::vector<Slot> in, std::vector<Slot> out,
                  std::vector<NamedAttribute> attrs = {}) {
  return Op(std::move(type), std::move(in), std::move(out), std::move(attrs));
}

inline std::vector<RuleCase> rule_cases() {
  const Slot x{"X", {"x"}}, y{"Y", {"y"}}, out{"Out", {"out"}};
  const Slot dout{"Out@GRAD", {"dout"}}, dx{"X@GRAD", {"dx"}}, dy{"Y@GRAD", {"dy"}};
  std::vector<RuleCase> cases;
  cases.push_back({"MatmulContractedDims", rule_op("matmul_v2", {x, y}, {out}),
                   {{"x", f32({2, 3})}, {"y", f32({2, 3})}},
                   "contracted dims of input X 'x' [2, 3] and input Y 'y' [2, 3] (trans_x false, "
                   "trans_y false) differ: 3 vs 2"});
  cases.push_back({"MatmulBatchDims", rule_op("matmul_v2", {x, y}, {out}),
                   {{"x", f32({5, 2, 3})}, {"y", f32({4, 3, 6})}},
                   "the batch dims of input X 'x' [5, 2, 3] and input Y 'y' [4, 3, 6] at dim 0: "
                   "5 vs 4 do not broadcast"});
  cases.push_back({"MatmulGradOutGrad",
                   rule_op("matmul_v2_grad", {x, y, dout}, {dx, dy},
                           {{"trans_y", Attribute(true)}}),
                   {{"x", f32({2, 3})}, {"y", f32({4, 3})}, {"dout", f32({2, 3})}},
                   "input Out@GRAD 'dout' has shape [2, 3], expected [2, 4]"});
  cases.push_back({"MulFlattenedWidths", rule_op("mul", {x, y}, {out}),
                   {{"x", f32({2, 3, 4})}, {"y", f32({4, 5})}},
                   "input X 'x' [2, 3, 4] flattens to width 12, but input Y 'y' [4, 5] flattens "
                   "to height 4"});
  cases.push_back({"MulNumColDims",
                   rule_op("mul", {x, y}, {out}, {{"x_num_col_dims", Attribute(int32_t{2})}}),
                   {{"x", f32({2, 3})}, {"y", f32({3, 5})}},
                   "x_num_col_dims 2 does not split input X 'x' [2, 3] (it must be at least 1 and "
                   "below the rank)"});
  cases.push_back({"MulGradOutGrad", rule_op("mul_grad", {x, y, dout}, {dx, dy}),
                   {{"x", f32({2, 3})}, {"y", f32({3, 5})}, {"dout", f32({2, 4})}},
                   "input Out@GRAD 'dout' [2, 4] has 8 elements, expected 10 (Out is [2, 5])"});
  cases.push_back({"ElementwiseAxis",
                   rule_op("elementwise_add", {x, y}, {out}, {{"axis", Attribute(int32_t{3})}}),
                   {{"x", f32({2, 3, 4})}, {"y", f32({3})}},
                   "axis 3 cannot align input X 'x' [2, 3, 4] and input Y 'y' [3]"});
  cases.push_back({"ElementwiseDims", rule_op("elementwise_mul", {x, y}, {out}),
                   {{"x", f32({2, 3, 4})}, {"y", f32({3})}},
                   "input X 'x' [2, 3, 4] and input Y 'y' [3] at dim 2: 4 vs 3 do not broadcast"});
  cases.push_back({"ElementwiseDtypes", rule_op("elementwise_sub", {x, y}, {out}),
                   {{"x", f32({2, 3})}, {"y", filled(DataType::FP64, {2, 3})}},
                   "input X 'x' has dtype FP32, but input Y 'y' has FP64"});
  cases.push_back({"ElementwiseGradOutGrad",
                   rule_op("elementwise_add_grad", {x, y, dout}, {dx, dy}),
                   {{"x", f32({2, 3})}, {"y", f32({3})}, {"dout", f32({3, 2})}},
                   "input Out@GRAD 'dout' has shape [3, 2], expected [2, 3]"});
  cases.push_back({"SumShapes", rule_op("sum", {{"X", {"x", "y"}}}, {out}),
                   {{"x", f32({2, 3})}, {"y", f32({3, 2})}},
                   "input X 'y' has shape [3, 2], but input X 'x' has [2, 3]"});
  cases.push_back({"MeanGradOutGrad", rule_op("mean_grad", {x, dout}, {dx}),
                   {{"x", f32({2, 3})}, {"dout", f32({2})}},
                   "input Out@GRAD 'dout' [2] must hold one element"});
  cases.push_back({"ReduceMeanDim",
                   rule_op("reduce_mean", {x}, {out},
                           {{"dim", Attribute(std::vector<int32_t>{3})}}),
                   {{"x", f32({2, 3, 4})}}, "dim 3 is out of range for rank 3"});
  cases.push_back({"ReduceMeanGradOutGrad", rule_op("reduce_mean_grad", {x, dout}, {dx}),
                   {{"x", f32({2, 3})}, {"dout", f32({2})}},
                   "input Out@GRAD 'dout' [2] has 2 elements, expected 3 (Out is [3])"});
  cases.push_back({"ReluGradShapes",
                   rule_op("relu_grad", {{"Out", {"x"}}, dout}, {dx}),
                   {{"x", f32({2, 3})}, {"dout", f32({3, 2})}},
                   "input Out@GRAD 'dout' [3, 2] does not match the forward tensor [2, 3]"});
  cases.push_back({"ElementwiseDivGradOut",
                   rule_op("elementwise_div_grad", {x, y, {"Out", {"o"}}, dout}, {dx, dy}),
                   {{"x", f32({2, 3})}, {"y", f32({3})}, {"o", f32({3, 2})}, {"dout", f32({2, 3})}},
                   "input Out 'o' has shape [3, 2], expected [2, 3]"});
  cases.push_back({"ActivationDtype", rule_op("sigmoid", {x}, {out}),
                   {{"x", filled(DataType::INT64, {2, 3})}},
                   "input X 'x' has dtype INT64; the op takes FP32, FP64, FP16 or BF16"});
  cases.push_back({"ActivationGradShapes", rule_op("tanh_grad", {{"Out", {"x"}}, dout}, {dx}),
                   {{"x", f32({2, 3})}, {"dout", f32({3, 2})}},
                   "input Out@GRAD 'dout' has shape [3, 2], expected [2, 3]"});
  cases.push_back({"ClipBounds",
                   rule_op("clip", {x}, {out},
                           {{"min", Attribute(2.0f)}, {"max", Attribute(1.0f)}}),
                   {{"x", f32({2, 3})}}, "max 1 is below min 2 (clip needs min <= max)"});
  cases.push_back({"ClipMinTensor",
                   rule_op("clip", {x, {"Min", {"lo"}}}, {out},
                           {{"min", Attribute(0.0f)}, {"max", Attribute(1.0f)}}),
                   {{"x", f32({2, 3})}, {"lo", f32({2})}},
                   "input Min 'lo' [2] must hold one element"});
  cases.push_back({"DropoutProb",
                   rule_op("dropout", {x}, {out, {"Mask", {"mask"}}},
                           {{"dropout_prob", Attribute(1.5f)}}),
                   {{"x", f32({2, 3})}}, "dropout_prob 1.5 is outside [0, 1]"});
  cases.push_back({"DropoutImplementation",
                   rule_op("dropout", {x}, {out, {"Mask", {"mask"}}},
                           {{"dropout_implementation", Attribute(std::string("scale"))}}),
                   {{"x", f32({2, 3})}},
                   "dropout_implementation 'scale' is neither 'downgrade_in_infer' nor "
                   "'upscale_in_train'"});
  cases.push_back({"DropoutGradMaskDtype",
                   rule_op("dropout_grad", {{"Mask", {"m"}}, dout}, {dx}),
                   {{"m", f32({2, 3})}, {"dout", f32({2, 3})}},
                   "input Mask 'm' has dtype FP32; dropout's mask is UINT8"});
  cases.push_back({"SoftmaxHardLabelShape",
                   rule_op("softmax_with_cross_entropy", {{"Logits", {"x"}}, {"Label", {"y"}}},
                           {{"Softmax", {"sm"}}, {"Loss", {"loss"}}}),
                   {{"x", f32({4, 10})}, {"y", filled(DataType::INT64, {4, 2})}},
                   "input Label 'y' has shape [4, 2], expected [4, 1] for input Logits 'x' "
                   "[4, 10] (hard labels)"});
  cases.push_back({"SoftmaxAxis",
                   rule_op("softmax", {x}, {out}, {{"axis", Attribute(int32_t{2})}}),
                   {{"x", f32({2, 3})}}, "axis 2 is out of range for rank 2"});
  cases.push_back({"SoftmaxGradShapes", rule_op("softmax_grad", {{"Out", {"x"}}, dout}, {dx}),
                   {{"x", f32({2, 3})}, {"dout", f32({3, 2})}},
                   "input Out@GRAD 'dout' has shape [3, 2], expected the shape of input Out 'x' "
                   "[2, 3]"});
  const std::vector<Slot> xent_out = {{"Y", {"loss"}}, {"XShape", {"xs"}}, {"MatchX", {"mx"}}};
  cases.push_back({"CrossEntropy2LabelShape",
                   rule_op("cross_entropy2", {x, {"Label", {"y"}}}, xent_out),
                   {{"x", f32({4, 10})}, {"y", filled(DataType::INT64, {4, 2})}},
                   "input Label 'y' has shape [4, 2], expected [4, 1] or [4] for input X 'x' "
                   "[4, 10] (one class per row)"});
  cases.push_back({"CrossEntropy2LabelDtype",
                   rule_op("cross_entropy2", {x, {"Label", {"y"}}}, xent_out),
                   {{"x", f32({4, 10})}, {"y", f32({4, 1})}},
                   "input Label 'y' has dtype FP32; hard labels are INT64 or INT32"});
  cases.push_back({"CrossEntropyGrad2OutGrad",
                   rule_op("cross_entropy_grad2",
                           {{"Label", {"y"}}, {"MatchX", {"mx"}}, {"XShape", {"xs"}}, dy}, {dx}),
                   {{"y", filled(DataType::INT64, {4, 1})},
                    {"mx", f32({4, 1})},
                    {"xs", f32({4, 10, 0})},
                    {"dy", f32({5, 1})}},
                   "input Y@GRAD 'dy' has shape [5, 1], expected [4, 1]"});
  cases.push_back({"SplitSections",
                   rule_op("split", {x}, {{"Out", {"p", "q"}}},
                           {{"sections", Attribute(std::vector<int32_t>{2, 3})}}),
                   {{"x", f32({4, 3})}},
                   "sections [2, 3] sum to 5, but input X 'x' has dim 4 on axis 0"});
  cases.push_back({"ConcatRanks", rule_op("concat", {{"X", {"x", "y"}}}, {out}),
                   {{"x", f32({2, 3})}, {"y", f32({2})}},
                   "input X 'y' has rank 1, but input X 'x' has rank 2"});
  cases.push_back({"CastInDtype",
                   rule_op("cast", {x}, {out},
                           {{"in_dtype", Attribute(static_cast<int32_t>(DataType::FP64))},
                            {"out_dtype", Attribute(static_cast<int32_t>(DataType::FP32))}}),
                   {{"x", f32({3})}}, "input X 'x' has dtype FP32, but in_dtype is FP64"});
  cases.push_back({"CoalesceDtype",
                   rule_op("coalesce_tensor", {{"Input", {"x", "y"}}},
                           {{"Output", {"x", "y"}}, {"FusedOutput", {"fused"}}},
                           {{"dtype", Attribute(static_cast<int32_t>(DataType::FP32))}}),
                   {{"x", f32({3})}, {"y", filled(DataType::FP64, {2})}},
                   "input Input 'y' has dtype FP64, but dtype is FP32"});
  cases.push_back({"SgdGradShape",
                   rule_op("sgd", {{"Param", {"x"}}, {"Grad", {"y"}}, {"LearningRate", {"lr"}}},
                           {{"ParamOut", {"x"}}}),
                   {{"x", f32({3})}, {"y", f32({4})}, {"lr", f32({1})}},
                   "input Grad 'y' [4] FP32 does not match input Param 'x' [3] FP32"});
  cases.push_back({"MomentumRegularization",
                   rule_op("momentum",
                           {{"Param", {"x"}}, {"Grad", {"y"}}, {"Velocity", {"v"}},
                            {"LearningRate", {"lr"}}},
                           {{"ParamOut", {"x"}}, {"VelocityOut", {"v"}}},
                           {{"mu", Attribute(0.9f)}, {"regularization_method", Attribute("l1")}}),
                   {{"x", f32({3})}, {"y", f32({3})}, {"v", f32({3})}, {"lr", f32({1})}},
                   "regularization_method 'l1' is not supported (use '' or 'l2_decay')"});
  // The shape ops (ops/schema/meta_shape.h).
  const Slot xshape_out{"XShape", {"xs"}}, xshape_in{"XShape", {"xs"}};
  const auto ints = [](std::vector<int32_t> v) { return Attribute(std::move(v)); };
  cases.push_back({"Reshape2TwoUnknownDims",
                   rule_op("reshape2", {x}, {out, xshape_out}, {{"shape", ints({-1, 2, -1})}}),
                   {{"x", f32({2, 3, 4})}}, "attribute 'shape' [-1, 2, -1] has more than one -1"});
  cases.push_back({"Reshape2ElementCount",
                   rule_op("reshape2", {x}, {out, xshape_out}, {{"shape", ints({0, 5})}}),
                   {{"x", f32({2, 3})}},
                   "attribute 'shape' [0, 5] gives [2, 5] holds 10 elements, but input X 'x' "
                   "[2, 3] holds 6"});
  cases.push_back({"Reshape2GradXShape",
                   rule_op("reshape2_grad", {xshape_in, dout}, {dx}),
                   {{"xs", f32({2, 3})}, {"dout", f32({6})}},
                   "input XShape 'xs' [2, 3] must be [0] followed by the forward input's shape"});
  cases.push_back({"Reshape2GradOutGrad",
                   rule_op("reshape2_grad", {xshape_in, dout}, {dx}),
                   {{"xs", f32({0, 2, 3})}, {"dout", f32({5})}},
                   "input Out@GRAD 'dout' [5] holds 5 elements, but the forward X [2, 3] holds 6"});
  cases.push_back({"FlattenAxesOrder",
                   rule_op("flatten_contiguous_range", {x}, {out},
                           {{"start_axis", Attribute(int32_t{2})},
                            {"stop_axis", Attribute(int32_t{1})}}),
                   {{"x", f32({2, 3, 4})}},
                   "start_axis 2 comes after stop_axis 1 in input X 'x' [2, 3, 4]"});
  cases.push_back({"Squeeze2Axis",
                   rule_op("squeeze2", {x}, {out}, {{"axes", ints({3})}}),
                   {{"x", f32({2, 1, 4})}}, "axes entry 3 is out of range for rank 3"});
  cases.push_back({"Unsqueeze2Axis",
                   rule_op("unsqueeze2", {x}, {out}, {{"axes", ints({-4})}}),
                   {{"x", f32({2, 3})}}, "axes entry -4 is out of range for rank 3"});
  cases.push_back({"Transpose2AxisCount",
                   rule_op("transpose2", {x}, {out, xshape_out}, {{"axis", ints({1, 0})}}),
                   {{"x", f32({2, 3, 4})}},
                   "attribute 'axis' [1, 0] has 2 entries, but input X 'x' [2, 3, 4] has rank 3"});
  cases.push_back({"Transpose2NotAPermutation",
                   rule_op("transpose2", {x}, {out, xshape_out}, {{"axis", ints({0, 2, -1})}}),
                   {{"x", f32({2, 3, 4})}}, "attribute 'axis' [0, 2, -1] names dim 2 twice"});
  cases.push_back({"Transpose2GradOutGrad",
                   rule_op("transpose2_grad", {xshape_in, dout}, {dx}, {{"axis", ints({1, 0})}}),
                   {{"xs", f32({0, 2, 3})}, {"dout", f32({2, 3})}},
                   "input Out@GRAD 'dout' [2, 3] has not the forward Out's shape [3, 2]"});
  const Slot input{"Input", {"x"}};
  cases.push_back({"SliceLengths",
                   rule_op("slice", {input}, {out},
                           {{"axes", ints({0, 1})}, {"starts", ints({0})}, {"ends", ints({1, 2})}}),
                   {{"x", f32({2, 3})}},
                   "attributes 'axes' [0, 1], 'starts' [0] and 'ends' [1, 2] must have one "
                   "length"});
  cases.push_back({"SliceDecreaseAxis",
                   rule_op("slice", {input}, {out},
                           {{"axes", ints({1})}, {"starts", ints({0})}, {"ends", ints({2})},
                            {"decrease_axis", ints({1})}}),
                   {{"x", f32({2, 3})}},
                   "decrease_axis drops dim 1 of the slice [2, 2] of input Input 'x' [2, 3], "
                   "which is not 1"});
  cases.push_back({"SliceStartsTensorRefused",
                   rule_op("slice", {input, {"StartsTensor", {"y"}}}, {out},
                           {{"axes", ints({0})}, {"starts", ints({0})}, {"ends", ints({1})}}),
                   {{"x", f32({2, 3})}, {"y", filled(DataType::INT64, {1}, 0)}},
                   "input StartsTensor 'y' gives 'starts' at run time, which ctp does not "
                   "support; set the 'starts' attribute"});
  cases.push_back({"StackShapes", rule_op("stack", {{"X", {"x", "y"}}}, {{"Y", {"out"}}}),
                   {{"x", f32({2, 3})}, {"y", f32({3, 2})}},
                   "input X 'y' has shape [3, 2], but input X 'x' has [2, 3]"});
  cases.push_back({"StackAxis",
                   rule_op("stack", {{"X", {"x", "y"}}}, {{"Y", {"out"}}},
                           {{"axis", Attribute(int32_t{3})}}),
                   {{"x", f32({2, 3})}, {"y", f32({2, 3})}}, "axis 3 is out of range for rank 3"});
  cases.push_back({"StackGradCount",
                   rule_op("stack_grad", {{"Y@GRAD", {"dout"}}}, {{"X@GRAD", {"dx", "dy"}}}),
                   {{"dout", f32({3, 4})}},
                   "input Y@GRAD 'dout' [3, 4] stacks 3 inputs along axis 0, but X@GRAD has 2"});
  // layer_norm, lookup_table_v2 (ops/schema/meta_norm.h, meta_embedding.h), reduce_sum.
  const std::vector<Slot> ln_out = {{"Y", {"out"}}, {"Mean", {"mean"}}, {"Variance", {"var"}}};
  cases.push_back({"LayerNormBeginAxis",
                   rule_op("layer_norm", {x}, ln_out, {{"begin_norm_axis", Attribute(int32_t{2})}}),
                   {{"x", f32({4, 6})}}, "begin_norm_axis 2 must be in [1, 2) for input X 'x' [4, 6]"});
  cases.push_back({"LayerNormEpsilon",
                   rule_op("layer_norm", {x}, ln_out, {{"epsilon", Attribute(0.5f)}}),
                   {{"x", f32({4, 6})}}, "epsilon 0.500000 must be in [0, 0.001]"});
  cases.push_back({"LayerNormScaleSize",
                   rule_op("layer_norm", {x, {"Scale", {"y"}}}, ln_out),
                   {{"x", f32({4, 2, 3})}, {"y", f32({3})}},
                   "input Scale 'y' [3] must be [6] (the normalised dims of input X 'x' [4, 2, 3] "
                   "at begin_norm_axis 1 hold 6 elements)"});
  cases.push_back({"LayerNormScaleDtype",
                   rule_op("layer_norm", {x, {"Bias", {"y"}}}, ln_out),
                   {{"x", f32({4, 6})}, {"y", filled(DataType::FP64, {6})}},
                   "input Bias 'y' has dtype FP64, expected FP32 (for X of dtype FP32)"});
  cases.push_back({"LayerNormGradVariance",
                   rule_op("layer_norm_grad",
                           {x, {"Mean", {"mean"}}, {"Variance", {"var"}}, {"Y@GRAD", {"dout"}}},
                           {dx}),
                   {{"x", f32({4, 6})}, {"mean", f32({4})}, {"var", f32({3})}, {"dout", f32({4, 6})}},
                   "input Variance 'var' [3] must be [4] (one statistic per row of input X 'x' "
                   "[4, 6])"});
  const Slot w{"W", {"x"}}, ids{"Ids", {"y"}};
  cases.push_back({"LookupTableRank", rule_op("lookup_table_v2", {w, ids}, {out}),
                   {{"x", f32({4, 3, 2})}, {"y", filled(DataType::INT64, {5}, 1)}},
                   "input W 'x' [4, 3, 2] must have rank 2 ([rows, width])"});
  cases.push_back({"LookupTableIdsDtype", rule_op("lookup_table_v2", {w, ids}, {out}),
                   {{"x", f32({4, 3})}, {"y", f32({5})}},
                   "input Ids 'y' has dtype FP32; ids are INT64 or INT32"});
  cases.push_back({"LookupTableGradOutGrad",
                   rule_op("lookup_table_v2_grad", {w, ids, dout}, {{"W@GRAD", {"dx"}}}),
                   {{"x", f32({4, 3})}, {"y", filled(DataType::INT64, {5}, 1)},
                    {"dout", f32({5, 4})}},
                   "input Out@GRAD 'dout' [5, 4] FP32 does not match the forward Out [5, 3] FP32"});
  cases.push_back({"ReduceSumOutDtype",
                   rule_op("reduce_sum", {x}, {out},
                           {{"out_dtype", Attribute(static_cast<int32_t>(DataType::FP64))}}),
                   {{"x", f32({4, 3})}},
                   "out_dtype FP64 differs from input X 'x''s dtype FP32; ctp sums in X's dtype "
                   "(cast X first)"});
  return cases;
}

}  // namespace ctp::test
