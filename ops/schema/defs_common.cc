#include "ops/schema/defs_common.h"

#include <cstdint>
#include <memory>

namespace ctp::defs {

const Var& InferContext::input(std::string_view slot, std::size_t i) const {
  const auto& args = input_names(slot);
  if (i >= args.size())
    fail("input slot " + std::string(slot) + " has no var #" + std::to_string(i));
  const std::string& name = args[i];
  const Var* var = block_.find_var(name);
  if (!var)
    fail(describe_input(slot, i) + " is not declared in block " + std::to_string(block_.idx));
  return *var;
}

Var* InferContext::output_var(std::string_view slot, std::size_t i) {
  const auto& args = output_names(slot);
  if (i >= args.size()) return nullptr;
  const std::string& name = args[i];
  Var* var = block_.find_var(name);
  if (!var)
    fail("output " + std::string(slot) + " '" + name + "' is not declared in block " +
         std::to_string(block_.idx));
  return var;
}

void InferContext::set_output(std::string_view slot, std::size_t i, const Shape& shape,
                              DataType dtype) {
  if (Var* var = output_var(slot, i)) {
    var->shape = shape;
    var->dtype = dtype;
  }
}

void InferContext::set_output_dtype(std::string_view slot, DataType dtype) {
  if (Var* var = output_var(slot, 0)) var->dtype = dtype;
}

void InferContext::pass_through(std::string_view in_slot, std::string_view out_slot) {
  const std::size_t outs = output_count(out_slot);
  if (outs > input_count(in_slot))
    fail("output " + std::string(out_slot) + " has " + std::to_string(outs) + " vars but input " +
         std::string(in_slot) + " has " + std::to_string(input_count(in_slot)));
  for (std::size_t i = 0; i < outs; ++i) {
    // Copy first: the output may be the input var itself.
    const Var& in = input(in_slot, i);
    Shape shape = in.shape;
    set_output(out_slot, i, shape, in.dtype);
  }
}

InferShapeFn make_infer(const std::vector<AttrDef>& attrs, InferBody body) {
  auto defaults = std::make_shared<const std::vector<AttrDef>>(attrs);
  return [defaults, body = std::move(body)](const Op& op, Block& block) {
    InferContext ctx(op, block, *defaults);
    body(ctx);
  };
}

void add_def(OpRegistry& registry, OpDef def, InferBody body, GradMaker grad) {
  if (body) def.infer_shape = make_infer(def.attrs, std::move(body));
  if (grad.declared()) def.grad = std::move(grad);
  registry.add(std::move(def));
}

}  // namespace ctp::defs
