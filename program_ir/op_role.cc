#include "program_ir/op_role.h"

namespace ctp {
namespace {

// Calls use(the attribute or nullptr). A transpile asks this of every op:
// an op that keeps its attributes as wire bytes decodes only this one.
template <typename Use>
auto with_attr(const Op& op, std::string_view name, Use&& use) {
  if (op.wire_attrs().empty()) return use(op.attr(name));
  const std::optional<Attribute> value = op.attr_value(name);
  return use(value ? &*value : nullptr);
}

}  // namespace

std::optional<int64_t> get_op_role(const Op& op) {
  return with_attr(op, kOpRoleAttr, [](const Attribute* a) -> std::optional<int64_t> {
    if (!a) return std::nullopt;
    return a->as_int64();
  });
}

bool is_backward_op(const Op& op) {
  auto role = get_op_role(op);
  return role && (*role & op_role::kBackward);
}

bool is_optimizer_op(const Op& op) {
  auto role = get_op_role(op);
  return role && (*role & op_role::kOptimize);
}

bool is_loss_grad_op(const Op& op) {
  auto role = get_op_role(op);
  return role && (*role & op_role::kBackward) && (*role & op_role::kLoss);
}

bool is_update_op(const Op& op) {
  return op.has_input("Param") && op.has_input("Grad") && op.has_input("LearningRate");
}

namespace {

std::vector<ParamGrad> pairs_of(const Op& op, const Attribute* a) {
  if (!a) return {};
  // The op is named by its type; code that knows its block and position
  // adds them (Error::locate). Built only for an error: a transpile asks
  // every op, and the place copies the op's type.
  const auto at = [&op] {
    return SourceLocation{.op_type = op.type, .attr_name = std::string(kOpRoleVarAttr)};
  };
  if (a->type() != AttrType::STRINGS)
    throw Error(at(), "has type " + std::string(to_string(a->type())) + ", expected STRINGS");
  const auto& names = a->get<std::vector<std::string>>();
  if (names.size() % 2 != 0)
    throw Error(at(), "has odd length " + std::to_string(names.size()) +
                          "; it must list pairs of param and grad");
  std::vector<ParamGrad> pairs;
  pairs.reserve(names.size() / 2);
  for (std::size_t i = 0; i < names.size(); i += 2) pairs.push_back({names[i], names[i + 1]});
  return pairs;
}

}  // namespace

std::vector<ParamGrad> param_grad_pairs(const Op& op) {
  return with_attr(op, kOpRoleVarAttr, [&op](const Attribute* a) { return pairs_of(op, a); });
}

}  // namespace ctp
