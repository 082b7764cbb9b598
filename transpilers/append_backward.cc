#include "transpilers/append_backward.h"

#include <unordered_map>
#include <unordered_set>

#include "ops/schema/op_def.h"
#include "program_ir/error.h"
#include "transpilers/backward_path.h"
#include "transpilers/grad_accumulation.h"

namespace ctp {
namespace {

constexpr std::string_view kPass = "append_backward";

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

bool is_float(DataType dtype) {
  return dtype == DataType::FP16 || dtype == DataType::BF16 || dtype == DataType::FP32 ||
         dtype == DataType::FP64;
}

SourceLocation var_place(const Block& block, const std::string& var) {
  return SourceLocation{.pass = std::string(kPass), .block = block.idx, .var_name = var};
}

SourceLocation op_place(const Block& block, std::size_t position, const Op& op) {
  return SourceLocation{.pass = std::string(kPass),
                        .block = block.idx,
                        .op = static_cast<int64_t>(position),
                        .op_type = op.type};
}

// The loss must be a float scalar that an op writes; returns the last such op.
Op& check_loss(Block& block, const std::string& loss) {
  const Var* var = block.find_var(loss);
  if (!var)
    throw Error(var_place(block, loss),
                "the loss is not declared in block " + std::to_string(block.idx));
  if (!is_float(var->dtype))
    throw Error(var_place(block, loss), "the loss must be a floating-point tensor, not " +
                                            std::string(to_string(var->dtype)));
  if (!(var->shape.empty() || var->shape == std::vector<int64_t>{1}))
    throw Error(var_place(block, loss),
                "the loss must be a scalar (shape [1] or [], as Paddle requires), but its shape "
                "is " + shape_text(var->shape) + "; reduce it first (mean, reduce_mean)");
  Op* writer = nullptr;
  for (Op& op : block.ops())
    for (const std::string& out : op.output_arg_names())
      if (out == loss) writer = &op;
  if (!writer) throw Error(var_place(block, loss), "no op writes the loss");
  return *writer;
}

void refuse_existing_backward(const Block& block) {
  std::size_t position = 0;
  for (const Op& op : block.ops()) {
    std::optional<int64_t> role;
    try {
      role = get_op_role(op);
    } catch (Error& e) {
      e.locate(op_place(block, position, op));
      throw;
    }
    if (role && (*role & (op_role::kBackward | op_role::kOptimize)))
      throw Error(op_place(block, position, op),
                  "has role " + std::string(*role & op_role::kBackward ? "Backward" : "Optimize") +
                      ": the program already has a backward; append_backward takes a forward "
                      "program");
    ++position;
  }
}

// Paddle's _create_loss_op_desc_: loss@GRAD = 1 in the loss's shape.
Op loss_grad_op(const Var& loss, const Op& loss_op) {
  const Attribute* device = loss_op.attr("op_device");
  return Op("fill_constant", {}, {{"Out", {grad_var_name(loss.name)}}},
            {{"shape", Attribute(loss.shape.empty() ? std::vector<int64_t>{}
                                                    : std::vector<int64_t>{1})},
             {"value", Attribute(1.0f)},
             {"dtype", Attribute(static_cast<int32_t>(loss.dtype))},
             {"force_cpu", Attribute(false)},
             {kOpRoleAttr, Attribute(op_role::kBackward | op_role::kLoss)},
             {"op_device", device ? *device : Attribute("")}});
}

// The grad ops of the path's ops, last forward op first.
std::vector<Op> make_grad_ops(const Block& block, const BackwardPath& path) {
  std::vector<Op> grad_ops;
  for (std::size_t i = path.ops.size(); i-- > 0;) {
    const Op& forward = *path.ops[i];
    const OpDef* def = OpRegistry::global().find(forward.type);
    std::vector<Op> made;
    try {
      made = def->grad.make(GradMakerContext(forward, path.no_grad_vars));
    } catch (Error& e) {
      e.locate(op_place(block, path.positions[i], forward));
      throw;
    }
    const Attribute* device = forward.attr("op_device");
    for (Op& op : made) {
      if (device) op.set_attr("op_device", *device);
      grad_ops.push_back(std::move(op));
    }
  }
  return grad_ops;
}

// A new grad var takes its forward var's dtype and shape
// (_infer_var_data_type_shape_); one without a forward var keeps what the
// grad op's inference gives.
void declare_grad_var(Block& block, const std::string& name) {
  Var var;
  var.name = name;
  if (const Var* forward = block.find_var(strip_grad_suffix(name))) {
    var.dtype = forward->dtype;
    var.shape = forward->shape;
  }
  block.add_var(std::move(var));
}

void infer_in_place(Block& block, const Op& op, std::size_t position,
                    const std::vector<std::string>& declared) {
  const OpDef* def = OpRegistry::global().find(op.type);
  if (!def || !def->infer_shape) return;
  std::vector<Var> kept;
  for (const std::string& name : declared)
    if (block.find_var(strip_grad_suffix(name)) != nullptr) kept.push_back(block.var(name));
  try {
    def->infer_shape(op, block);
  } catch (Error& e) {
    e.locate(op_place(block, position, op));
    throw;
  }
  for (const Var& var : kept) block.var(var.name) = var;  // the forward var's, as Paddle
}

// Appends the grad ops (the loss gradient first) that write something and
// read a gradient that exists (_append_backward_vars_), declaring their
// vars; returns each forward var's gradient.
std::unordered_map<std::string, std::string> place_grad_ops(Block& block,
                                                           std::vector<Op>& grad_ops) {
  std::unordered_map<std::string, std::string> grad_of;
  std::unordered_set<std::string> written;
  std::size_t position = block.op_count();
  for (Op& op : grad_ops) {
    std::vector<std::string> outputs;
    for (const std::string& out : op.output_arg_names())
      if (out != kEmptyVarName) outputs.push_back(out);
    if (outputs.empty()) continue;
    bool reads_grad = false, reads_written_grad = false;
    for (const std::string& in : op.input_arg_names())
      if (in.find(kGradVarSuffix) != std::string::npos) {
        reads_grad = true;
        reads_written_grad |= written.contains(in);
      }
    if (reads_grad && !reads_written_grad) continue;
    std::vector<std::string> declared;
    for (const std::string& out : outputs) {
      written.insert(out);
      if (!block.has_var(out)) {
        declare_grad_var(block, out);
        declared.push_back(out);
      }
      const std::string forward(strip_grad_suffix(out));
      if (out == grad_var_name(forward)) grad_of[forward] = out;
    }
    // Every grad op is Backward (a copied forward role, the loss op's
    // Forward|Loss included, is replaced); the loss gradient stays Backward|Loss.
    if (&op != &grad_ops.front()) op.set_attr(kOpRoleAttr, Attribute(op_role::kBackward));
    const Op& placed = *block.append_op(std::move(op));
    infer_in_place(block, placed, position, declared);
    ++position;
  }
  return grad_of;
}

// Paddle's append_backward tail: op_role_var [param, grad] (before what the
// op had) on the last op that writes each parameter's gradient.
BackwardResult mark_param_grads(Block& block,
                                const std::unordered_map<std::string, std::string>& grad_of) {
  BackwardResult result;
  for (const std::string& param : trainable_parameters(block)) {
    auto it = grad_of.find(param);
    if (it == grad_of.end()) {
      result.unreached_parameters.push_back(param);
      continue;
    }
    Op* writer = nullptr;
    for (Op& op : block.ops())
      for (const std::string& out : op.output_arg_names())
        if (out == it->second) writer = &op;
    std::vector<std::string> role_var = {param, it->second};
    const Attribute* old = writer->attr(kOpRoleVarAttr);
    if (old && old->type() == AttrType::STRINGS)
      for (const std::string& s : old->get<std::vector<std::string>>()) role_var.push_back(s);
    writer->set_attr(kOpRoleVarAttr, Attribute(std::move(role_var)));
    result.params_grads.push_back(ParamGrad{param, it->second});
  }
  return result;
}

// The program's fed inputs (non-persistable vars that no op writes) get no
// gradient: Paddle's data layers are stop_gradient, but a program saved by
// Paddle 1.x does not record the flag (the PaddleFL trainer's x), and such a
// gradient would reach nothing.
void add_fed_inputs(const Block& block, std::unordered_set<std::string>& no_grad) {
  std::unordered_set<std::string> written;
  for (const Op& op : block.ops())
    for (const std::string& out : op.output_arg_names()) written.insert(out);
  for (const Var& var : block.vars())
    if (!var.persistable && !written.contains(var.name)) no_grad.insert(var.name);
}

}  // namespace

std::vector<std::string> trainable_parameters(const Block& block) {
  bool any_marked = false;
  for (const Var& var : block.vars()) any_marked |= var.is_parameter;
  std::vector<std::string> params;
  for (const Var& var : block.vars()) {
    if (var.stop_gradient) continue;
    const bool parameter =
        any_marked ? var.is_parameter
                   : var.persistable && var.type == VarKind::LOD_TENSOR && is_float(var.dtype);
    if (parameter) params.push_back(var.name);
  }
  return params;
}

BackwardResult append_backward(Program& program, const BackwardOptions& options) {
  Program out = program;
  Block& block = out.global_block();
  Op& loss_op = check_loss(block, options.loss);
  refuse_existing_backward(block);
  std::unordered_set<std::string> no_grad(options.no_grad_vars.begin(),
                                          options.no_grad_vars.end());
  for (const Var& var : block.vars())
    if (var.stop_gradient) no_grad.insert(var.name);
  add_fed_inputs(block, no_grad);
  const std::vector<std::string> parameters = trainable_parameters(block);
  const BackwardPath path = find_backward_path(block, options.loss, no_grad, parameters, kPass);

  loss_op.set_attr(kOpRoleAttr, Attribute(op_role::kForward | op_role::kLoss));
  std::vector<Op> grad_ops = make_grad_ops(block, path);
  add_up_repeated_grads(grad_ops, block.idx);
  std::unordered_set<std::string> no_grad_grads;
  for (const std::string& var : path.no_grad_vars) no_grad_grads.insert(grad_var_name(var));
  remove_no_grad_branches(grad_ops, no_grad_grads);
  grad_ops.insert(grad_ops.begin(), loss_grad_op(block.var(options.loss), loss_op));

  const auto grad_of = place_grad_ops(block, grad_ops);
  BackwardResult result = mark_param_grads(block, grad_of);
  if (result.params_grads.empty())
    throw Error(var_place(block, options.loss),
                parameters.empty()
                    ? std::string("the program has no trainable parameter (no var marked "
                                  "is_parameter, nor a persistable float tensor without "
                                  "stop_gradient)")
                    : "no trainable parameter reaches the loss (" +
                          std::to_string(parameters.size()) + " parameter(s), the first '" +
                          parameters.front() + "')");
  program = std::move(out);
  return result;
}

}  // namespace ctp
