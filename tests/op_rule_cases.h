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
  for (const Slot& slot : c.op.outputs)
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
  return cases;
}

}  // namespace ctp::test
