#include "transpilers/backward_path.h"

#include <unordered_map>

#include "ops/schema/op_def.h"
#include "program_ir/error.h"

namespace ctp {
namespace {

struct OpAt {
  const Op& op;
  std::size_t position;
  Block::ConstOpHandle handle;
};

GradMaker::Kind grad_kind(const Op& op) {
  const OpDef* def = OpRegistry::global().find(op.type);
  return def ? def->grad.kind : GradMaker::Kind::kUndeclared;
}

// For every var that a trainable parameter reaches through the block's ops,
// one parameter it depends on (to name it in errors).
std::unordered_map<std::string, std::string> parameter_sources(
    const std::vector<OpAt>& ops, const std::vector<std::string>& parameters,
    const std::unordered_set<std::string>& no_grad) {
  std::unordered_map<std::string, std::string> source;
  for (const std::string& p : parameters)
    if (!no_grad.contains(p)) source.emplace(p, p);
  for (const OpAt& at : ops) {
    std::string from;
    for (const std::string& in : at.op.input_arg_names()) {
      auto it = source.find(in);
      if (it != source.end() && !no_grad.contains(in)) {
        from = it->second;
        break;
      }
    }
    if (from.empty()) continue;
    for (const std::string& out : at.op.output_arg_names())
      if (!no_grad.contains(out)) source.emplace(out, from);
  }
  return source;
}

[[noreturn]] void fail_at(const Block& block, const OpAt& at, std::string_view pass,
                          std::string what) {
  throw Error(SourceLocation{.pass = std::string(pass),
                             .block = block.idx,
                             .op = static_cast<int64_t>(at.position),
                             .op_type = at.op.type},
              std::move(what));
}

// An op that feeds the loss but has no grad maker: fine when nothing that
// needs a gradient flows in (Paddle leaves it off the path), an error when a
// parameter does, since the parameter's gradient would silently stop here.
void check_undeclared(const Block& block, const OpAt& at, const std::string& loss,
                      const std::unordered_map<std::string, std::string>& sources,
                      const std::unordered_set<std::string>& no_grad, std::string_view pass) {
  if (grad_kind(at.op) != GradMaker::Kind::kUndeclared) return;
  for (const Slot& slot : at.op.inputs())
    for (const std::string& in : slot.args) {
      auto it = sources.find(in);
      if (it == sources.end() || no_grad.contains(in)) continue;
      const bool known = OpRegistry::global().find(at.op.type) != nullptr;
      fail_at(block, at, pass,
              "lies on the way from parameter '" + it->second + "' to the loss '" + loss +
                  "' (input " + slot.name + " '" + in + "'), but " +
                  (known ? "the schema of '" + at.op.type + "' declares no grad maker"
                         : "ctp has no schema for op type '" + at.op.type + "'") +
                  ", so its gradient cannot be written (docs/extending.md, 'The gradient')");
    }
}

// Paddle's _find_no_grad_vars: outputs of path ops that do not lead to the
// loss (the Softmax beside a loss) get no gradient.
void add_unused_outputs(const Block& block, const std::vector<OpAt>& path,
                        const std::string& loss, std::unordered_set<std::string>& no_grad) {
  std::unordered_set<std::string> wanted = {loss};
  std::unordered_set<std::string> unused;
  for (auto it = path.rbegin(); it != path.rend(); ++it) {
    const std::vector<std::string> inputs = it->op.input_arg_names();
    const std::unordered_set<std::string> input_set(inputs.begin(), inputs.end());
    for (const std::string& out : it->op.output_arg_names()) {
      const Var* var = block.find_var(out);
      if (!wanted.contains(out) && !input_set.contains(out) && !(var && var->stop_gradient))
        unused.insert(out);
    }
    for (const std::string& in : inputs)
      if (!no_grad.contains(in)) wanted.insert(in);
  }
  no_grad.insert(unused.begin(), unused.end());
}

}  // namespace

BackwardPath find_backward_path(const Block& block, const std::string& loss,
                                std::unordered_set<std::string> no_grad_vars,
                                const std::vector<std::string>& parameters,
                                std::string_view pass) {
  std::vector<OpAt> ops;
  std::size_t position = 0;
  for (auto it = block.ops().begin(); it != block.ops().end(); ++it, ++position)
    ops.push_back(OpAt{*it, position, it});
  const auto sources = parameter_sources(ops, parameters, no_grad_vars);

  // Paddle's _find_op_path_: from the loss back, an op is on the path when
  // it writes a wanted var and has a grad maker; its inputs become wanted.
  std::unordered_set<std::string> wanted = {loss};
  std::vector<bool> on_path(ops.size(), false);
  for (std::size_t i = ops.size(); i-- > 0;) {
    const Op& op = ops[i].op;
    bool feeds_loss = false;
    for (const std::string& out : op.output_arg_names()) feeds_loss |= wanted.contains(out);
    if (!feeds_loss) continue;
    if (grad_kind(op) != GradMaker::Kind::kOps) {
      check_undeclared(block, ops[i], loss, sources, no_grad_vars, pass);
      continue;
    }
    if (op.has_attr("sub_block"))
      fail_at(block, ops[i], pass,
              "is on the way to the loss '" + loss +
                  "' and runs a sub-block; the backward pass does not differentiate control "
                  "flow");
    on_path[i] = true;
    for (const std::string& in : op.input_arg_names())
      if (!no_grad_vars.contains(in)) wanted.insert(in);
  }

  BackwardPath path;
  std::vector<OpAt> path_ops;
  for (std::size_t i = 0; i < ops.size(); ++i)
    if (on_path[i]) {
      path_ops.push_back(ops[i]);
      path.ops.push_back(ops[i].handle);
      path.positions.push_back(ops[i].position);
    }
  add_unused_outputs(block, path_ops, loss, no_grad_vars);
  path.no_grad_vars = std::move(no_grad_vars);
  return path;
}

}  // namespace ctp
