#include "ops/schema/grad_maker.h"

#include "program_ir/error.h"

namespace ctp {
namespace {

bool ends_with_grad(std::string_view slot) {
  return slot.size() > kGradVarSuffix.size() && slot.ends_with(kGradVarSuffix);
}

std::string_view forward_slot_of(std::string_view grad_slot) {
  return grad_slot.substr(0, grad_slot.size() - kGradVarSuffix.size());
}

}  // namespace

std::string grad_var_name(std::string_view var) {
  return std::string(var) + std::string(kGradVarSuffix);
}

std::string_view strip_grad_suffix(std::string_view name) {
  const std::size_t pos = name.find(kGradVarSuffix);
  return pos == std::string_view::npos ? name : name.substr(0, pos);
}

std::vector<std::string> GradMakerContext::input(std::string_view slot) const {
  const std::vector<std::string>* vars = forward_.input(slot);
  return vars ? *vars : std::vector<std::string>{};
}

std::vector<std::string> GradMakerContext::output(std::string_view slot) const {
  const std::vector<std::string>* vars = forward_.output(slot);
  return vars ? *vars : std::vector<std::string>{};
}

std::vector<std::string> GradMakerContext::output_grad(std::string_view slot) const {
  std::vector<std::string> grads;
  for (const std::string& var : output(slot)) grads.push_back(grad_var_name(var));
  return grads;
}

std::vector<std::string> GradMakerContext::input_grad(std::string_view slot,
                                                      bool drop_empty) const {
  std::vector<std::string> grads;
  for (const std::string& var : input(slot))
    grads.push_back(no_grad_vars_.contains(var) ? std::string(kEmptyVarName)
                                                : grad_var_name(var));
  if (drop_empty && grads.size() == 1 && grads[0] == kEmptyVarName) grads.clear();
  return grads;
}

GradMaker grad_op(std::string type, std::vector<std::string> inputs,
                  std::vector<std::string> outputs) {
  for (const std::string& slot : outputs)
    if (!ends_with_grad(slot))
      throw Error("grad op '" + type + "': output slot '" + slot +
                  "' is not the gradient of a forward input (S@GRAD)");
  return GradMaker::ops([type = std::move(type), inputs = std::move(inputs),
                         outputs = std::move(outputs)](const GradMakerContext& ctx) {
    Op grad(type);
    for (const std::string& slot : inputs) {
      if (ends_with_grad(slot)) {
        const std::string_view forward = forward_slot_of(slot);
        if (ctx.forward().has_output(forward)) grad.set_input(slot, ctx.output_grad(forward));
      } else if (ctx.forward().has_input(slot)) {
        grad.set_input(slot, ctx.input(slot));
      } else if (ctx.forward().has_output(slot)) {
        grad.set_input(slot, ctx.output(slot));
      }
    }
    for (const std::string& slot : outputs) {
      const std::string_view forward = forward_slot_of(slot);
      if (ctx.forward().has_input(forward)) grad.set_output(slot, ctx.input_grad(forward));
    }
    grad.mutable_attrs() = ctx.forward().attrs();
    return std::vector<Op>{std::move(grad)};
  });
}

}  // namespace ctp
