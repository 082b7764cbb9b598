// An operator (framework.proto's OpDesc): type, ordered input and output
// slots, and ordered typed attributes.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "program_ir/attribute.h"
#include "program_ir/unknown_fields.h"

namespace ctp {

struct Slot {
  std::string name;
  std::vector<std::string> args;
  bool operator==(const Slot&) const = default;
};

class Op {
 public:
  std::string type;
  std::vector<Slot> inputs;
  std::vector<Slot> outputs;
  std::vector<NamedAttribute> attrs;
  bool is_target = false;
  // The file wrote is_target although it is false (proto2 presence; see
  // Var::ExplicitDefaults).
  bool is_target_explicit = false;
  UnknownFields unknown_fields;  // OpDesc fields ctp does not know

  Op() = default;
  explicit Op(std::string op_type) : type(std::move(op_type)) {}
  Op(std::string op_type, std::vector<Slot> in, std::vector<Slot> out,
     std::vector<NamedAttribute> attributes = {})
      : type(std::move(op_type)), inputs(std::move(in)), outputs(std::move(out)),
        attrs(std::move(attributes)) {}

  // nullptr when the slot is absent.
  const std::vector<std::string>* input(std::string_view slot) const;
  const std::vector<std::string>* output(std::string_view slot) const;
  bool has_input(std::string_view slot) const { return input(slot) != nullptr; }
  bool has_output(std::string_view slot) const { return output(slot) != nullptr; }
  // Replaces the slot's arguments, appending the slot if it is new.
  void set_input(std::string_view slot, std::vector<std::string> args);
  void set_output(std::string_view slot, std::vector<std::string> args);
  // All argument names in slot order, as Paddle's input_arg_names().
  std::vector<std::string> input_arg_names() const;
  std::vector<std::string> output_arg_names() const;

  const Attribute* attr(std::string_view name) const;
  bool has_attr(std::string_view name) const { return attr(name) != nullptr; }
  // Replaces the attribute's value, appending it if it is new.
  void set_attr(std::string_view name, Attribute value);
  bool remove_attr(std::string_view name);

  bool operator==(const Op&) const = default;
};

}  // namespace ctp
