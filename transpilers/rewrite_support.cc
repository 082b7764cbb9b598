#include "transpilers/rewrite_support.h"

#include <algorithm>
#include <span>

#include "program_ir/error.h"
#include "program_ir/op_packing.h"
#include "program_ir/var_packing.h"

namespace ctp {
namespace {

std::string shape_to_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

}  // namespace

SourceLocation OpSite::location() const {
  return SourceLocation{.pass = std::string(pass),
                        .block = block.idx,
                        .op = static_cast<int64_t>(index),
                        .op_type = op.type};
}

void OpSite::fail(std::string what) const { throw Error(location(), std::move(what)); }

namespace {

[[noreturn]] void fail_undeclared(const OpSite& site, const std::string& name,
                                  std::string_view role) {
  site.fail(std::string(role) + " '" + name + "' is not declared in block " +
            std::to_string(site.block.idx));
}

}  // namespace

const Var& require_var(const OpSite& site, const std::string& name, std::string_view role) {
  if (const Var* v = site.block.find_var(name)) return *v;
  fail_undeclared(site, name, role);
}

Block::VarEntry require_var_entry(const OpSite& site, const std::string& name,
                                  std::string_view role) {
  if (std::optional<Block::VarEntry> v = site.block.find_var_entry(name)) return *v;
  fail_undeclared(site, name, role);
}

Var require_var_copy(const OpSite& site, const std::string& name, std::string_view role) {
  if (std::optional<Var> v = site.block.copy_var(name)) return std::move(*v);
  fail_undeclared(site, name, role);
}

std::optional<int64_t> op_role_at(const OpSite& site) {
  try {
    return get_op_role(site.op);
  } catch (const Error& e) {
    SourceLocation at = site.location();
    at.attr_name = kOpRoleAttr;
    throw Error(at, e.message());
  }
}

bool is_backward_at(const OpSite& site) {
  auto role = op_role_at(site);
  return role && (*role & op_role::kBackward);
}

bool is_optimizer_at(const OpSite& site) {
  auto role = op_role_at(site);
  return role && (*role & op_role::kOptimize);
}

bool is_loss_grad_at(const OpSite& site) {
  auto role = op_role_at(site);
  return role && (*role & op_role::kBackward) && (*role & op_role::kLoss);
}

std::vector<ParamGrad> param_grad_pairs_at(const OpSite& site) {
  try {
    return param_grad_pairs(site.op);
  } catch (Error& e) {
    e.locate(site.location());
    throw;
  }
}

std::string first_input(const OpSite& site, std::string_view slot) {
  std::optional<std::vector<std::string>> args = site.op.input_args(slot);
  if (!args) site.fail("has no input slot '" + std::string(slot) + "'");
  if (args->empty()) site.fail("input slot '" + std::string(slot) + "' is empty");
  return std::move(args->front());
}

std::string first_output(const OpSite& site, std::string_view slot) {
  std::optional<std::vector<std::string>> args = site.op.output_args(slot);
  if (!args) site.fail("has no output slot '" + std::string(slot) + "'");
  if (args->empty()) site.fail("output slot '" + std::string(slot) + "' is empty");
  return std::move(args->front());
}

Attribute require_attr(const OpSite& site, std::string_view name) {
  if (std::optional<Attribute> a = site.op.attr_value(name)) return std::move(*a);
  site.fail("has no attribute '" + std::string(name) + "'");
}

std::string create_var(Block& block, const VarRequest& request, std::string_view pass) {
  return create_var(block, VarRequest(request), pass);
}

namespace {

// The var a request asks for (its name and shape moved from it).
Var requested_var(VarRequest&& request) {
  Var v;
  v.name = std::move(request.name);
  v.type = request.type;
  if (request.shape) v.shape = std::move(*request.shape);
  if (request.dtype) v.dtype = *request.dtype;
  if (request.persistable) v.persistable = *request.persistable;
  v.stop_gradient = request.stop_gradient;
  return v;
}

// Paddle's create_var on a name the block declares: the var must agree with
// `want` (the var requested under that name) in every field the request
// gave; it then takes the request's stop_gradient.
void agree_with_declared(Block& block, const std::string& name, const Var& want,
                         const VarRequest& request, std::string_view pass) {
  Var& existing = block.var(name);
  auto clash = [&](const std::string& field, const std::string& have,
                   const std::string& wanted) {
    throw Error(std::string(pass) + ": block " + std::to_string(block.idx) + " already has var '" +
                name + "' with " + field + " " + have + "; the rewrite needs " + wanted);
  };
  if (existing.type != want.type)
    clash("type", std::string(to_string(existing.type)), std::string(to_string(want.type)));
  if (request.shape && existing.shape != want.shape)
    clash("shape", shape_to_string(existing.shape), shape_to_string(want.shape));
  if (request.dtype && existing.dtype != want.dtype)
    clash("dtype", std::string(to_string(existing.dtype)), std::string(to_string(want.dtype)));
  if (request.persistable && existing.persistable != want.persistable)
    clash("persistable", existing.persistable ? "true" : "false",
          want.persistable ? "true" : "false");
  existing.stop_gradient = request.stop_gradient;
}

}  // namespace

std::string create_var(Block& block, VarRequest&& request, std::string_view pass) {
  Var v = requested_var(std::move(request));
  if (add_packed_var(block, v)) return std::move(v.name);
  agree_with_declared(block, v.name, v, request, pass);
  return std::move(v.name);
}

void create_vars(Block& block, std::span<const std::string> names, const VarRequest& alike,
                 std::string_view pass) {
  const Var v = requested_var(VarRequest(alike));
  for (std::size_t i : add_packed_vars(block, v, names))
    agree_with_declared(block, names[i], v, alike, pass);
}

namespace {

// Paddle's default role, written last for an op whose caller gave it none.
const NamedAttribute kDefaultRole{std::string(kOpRoleAttr), Attribute(op_role::kForward)};

// `parts` packed, Paddle's default role written after its attributes when
// they hold no op_role.
Op packed_with_a_role(OpParts parts) {
  const bool has_role = std::any_of(parts.attrs.begin(), parts.attrs.end(),
                                    [](const NamedAttribute& a) { return a.name == kOpRoleAttr; });
  if (!has_role) parts.more_attrs = {&kDefaultRole, 1};
  return packed_op(parts);
}

}  // namespace

Op make_op(std::string_view type, std::vector<Slot> inputs, std::vector<Slot> outputs,
           std::vector<NamedAttribute> attrs) {
  return packed_with_a_role({.type = type, .inputs = inputs, .outputs = outputs, .attrs = attrs});
}

Op make_op_from_views(std::string_view type, std::span<const Slot> inputs,
                      std::span<const Slot> outputs, std::initializer_list<NamedAttribute> attrs) {
  return packed_with_a_role(
      {.type = type, .inputs = inputs, .outputs = outputs, .attrs = {attrs.begin(), attrs.size()}});
}

Op make_var_op(std::string_view type, std::initializer_list<VarSlot> inputs,
               std::initializer_list<VarSlot> outputs,
               std::initializer_list<NamedAttribute> attrs) {
  return packed_with_a_role({.type = type,
                             .var_inputs = {inputs.begin(), inputs.size()},
                             .var_outputs = {outputs.begin(), outputs.size()},
                             .attrs = {attrs.begin(), attrs.size()}});
}

Op make_in_place_op(std::string_view type, std::string_view var,
                    std::initializer_list<NamedAttribute> attrs) {
  return make_var_op(type, {{"X", var}}, {{"Out", var}}, attrs);
}

Block::OpHandle find_first_optimizer_op(Block& block, std::string_view pass) {
  std::size_t index = 0;
  for (auto it = block.ops().begin(); it != block.ops().end(); ++it, ++index)
    if (is_optimizer_at(OpSite{pass, block, index, *it})) return it;
  return block.ops().end();
}

std::string unique_var_name(const Program& startup, const Program& main, const std::string& key) {
  for (int i = 0;; ++i) {
    std::string name = key + "_" + std::to_string(i);
    if (!startup.global_block().has_var(name) && !main.global_block().has_var(name)) return name;
  }
}

void add_state(Program& startup, Program& main, const std::string& name, DataType dtype,
               const std::vector<int64_t>& shape, float value) {
  Var var;
  var.name = name;
  var.dtype = dtype;
  var.shape = shape;
  var.persistable = true;
  var.stop_gradient = true;
  main.global_block().add_var(var);
  startup.global_block().add_var(var);
  startup.global_block().append_op(Op("fill_constant", {}, {{"Out", {name}}},
                                      {{"shape", Attribute(shape)},
                                       {"dtype", Attribute(static_cast<int32_t>(dtype))},
                                       {"value", Attribute(value)},
                                       {kOpRoleAttr, Attribute(op_role::kForward)}}));
}

}  // namespace ctp
