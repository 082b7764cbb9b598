// An operator (framework.proto's OpDesc): type, ordered input and output
// slots, and ordered typed attributes.
#pragma once
#include <atomic>
#include <cstdint>
#include <optional>
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

// An op's attributes as they were read from protobuf: the OpDesc.attrs
// fields (tag, length and Attr message each, valid and in file order),
// `count` of them. A rewrite reads only a few attributes of most ops
// (op_role, op_role_var), so the others stay as these bytes until asked for
// and are written back as they came (program_ir/wire_attrs.h decodes them).
struct WireAttrs {
  std::string fields;
  uint32_t count = 0;
  // Every Attr message starts with its name and holds no other name field
  // (as protobuf libraries write them): finding an attribute by name then
  // reads one field of each, not all of them (op_callstack has dozens).
  bool names_lead = false;
  bool empty() const { return count == 0; }
};

class Op {
 public:
  std::string type;
  std::vector<Slot> inputs;
  std::vector<Slot> outputs;
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
        attrs_(std::move(attributes)) {}
  Op(const Op& other);
  Op(Op&& other) noexcept;
  Op& operator=(const Op& other);
  Op& operator=(Op&& other) noexcept;
  ~Op();

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

  // --- attributes, in order ---
  // An op read from protobuf holds them as wire bytes (wire_attrs()); the
  // first call decodes them, once: concurrent const calls are safe (the
  // decoded list is published through an atomic and never changes after).
  const std::vector<NamedAttribute>& attrs() const;
  // The list for editing (decoded for good; the wire bytes are dropped).
  std::vector<NamedAttribute>& mutable_attrs();
  // nullptr when absent. Decodes the attributes (attrs()).
  const Attribute* attr(std::string_view name) const;
  // A copy of one attribute, read from the wire bytes without decoding the
  // others: what a pass that asks every op (op_role, op_role_var) uses.
  std::optional<Attribute> attr_value(std::string_view name) const;
  bool has_attr(std::string_view name) const;  // decodes nothing
  // Replaces the attribute's value, appending it if it is new.
  void set_attr(std::string_view name, Attribute value);
  bool remove_attr(std::string_view name);

  // The undecoded attributes (empty once decoded or when built in memory).
  const WireAttrs& wire_attrs() const { return wire_; }
  // For the protobuf reader: the op's attributes become `wire`, which must
  // hold valid OpDesc.attrs fields.
  void set_wire_attrs(WireAttrs wire);

  // Attributes compare by value, whether decoded or not.
  bool operator==(const Op& other) const;

 private:
  void drop_decoded();

  std::vector<NamedAttribute> attrs_;
  WireAttrs wire_;
  // attrs() of an op with wire attributes: set once, by the first reader.
  mutable std::atomic<std::vector<NamedAttribute>*> decoded_{nullptr};
};

}  // namespace ctp
