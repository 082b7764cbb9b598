#include "program_ir/op.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "program_ir/wire_attrs.h"

namespace ctp {
namespace {

const std::vector<std::string>* find_slot(const std::vector<Slot>& slots,
                                          std::string_view name) {
  for (const Slot& s : slots)
    if (s.name == name) return &s.args;
  return nullptr;
}

void put_slot(std::vector<Slot>& slots, std::string_view name,
              std::vector<std::string> args) {
  for (Slot& s : slots) {
    if (s.name == name) {
      s.args = std::move(args);
      return;
    }
  }
  slots.push_back(Slot{std::string(name), std::move(args)});
}

std::vector<std::string> flatten(const std::vector<Slot>& slots) {
  std::vector<std::string> names;
  for (const Slot& s : slots) names.insert(names.end(), s.args.begin(), s.args.end());
  return names;
}

}  // namespace

const std::vector<std::string>* Op::input(std::string_view slot) const {
  return find_slot(inputs, slot);
}
const std::vector<std::string>* Op::output(std::string_view slot) const {
  return find_slot(outputs, slot);
}
void Op::set_input(std::string_view slot, std::vector<std::string> args) {
  put_slot(inputs, slot, std::move(args));
}
void Op::set_output(std::string_view slot, std::vector<std::string> args) {
  put_slot(outputs, slot, std::move(args));
}
std::vector<std::string> Op::input_arg_names() const { return flatten(inputs); }
std::vector<std::string> Op::output_arg_names() const { return flatten(outputs); }

Op::Op(const Op& other)
    : type(other.type), inputs(other.inputs), outputs(other.outputs),
      is_target(other.is_target), is_target_explicit(other.is_target_explicit),
      unknown_fields(other.unknown_fields), attrs_(other.attrs_), wire_(other.wire_) {}

Op::Op(Op&& other) noexcept
    : type(std::move(other.type)), inputs(std::move(other.inputs)),
      outputs(std::move(other.outputs)), is_target(other.is_target),
      is_target_explicit(other.is_target_explicit),
      unknown_fields(std::move(other.unknown_fields)), attrs_(std::move(other.attrs_)),
      wire_(std::exchange(other.wire_, {})),
      decoded_(other.decoded_.exchange(nullptr, std::memory_order_acq_rel)) {}

Op& Op::operator=(const Op& other) {
  if (this != &other) *this = Op(other);
  return *this;
}

Op& Op::operator=(Op&& other) noexcept {
  if (this == &other) return *this;
  type = std::move(other.type);
  inputs = std::move(other.inputs);
  outputs = std::move(other.outputs);
  is_target = other.is_target;
  is_target_explicit = other.is_target_explicit;
  unknown_fields = std::move(other.unknown_fields);
  attrs_ = std::move(other.attrs_);
  wire_ = std::exchange(other.wire_, {});
  drop_decoded();
  decoded_.store(other.decoded_.exchange(nullptr, std::memory_order_acq_rel),
                 std::memory_order_release);
  return *this;
}

Op::~Op() { drop_decoded(); }

void Op::drop_decoded() { delete decoded_.exchange(nullptr, std::memory_order_acq_rel); }

const std::vector<NamedAttribute>& Op::attrs() const {
  if (wire_.empty()) return attrs_;
  if (const auto* decoded = decoded_.load(std::memory_order_acquire)) return *decoded;
  // Several threads may decode at once; the first to publish wins and the
  // others drop their copy.
  auto mine = std::make_unique<std::vector<NamedAttribute>>(decode_wire_attrs(wire_));
  std::vector<NamedAttribute>* expected = nullptr;
  if (decoded_.compare_exchange_strong(expected, mine.get(), std::memory_order_acq_rel,
                                       std::memory_order_acquire))
    return *mine.release();
  return *expected;
}

std::vector<NamedAttribute>& Op::mutable_attrs() {
  if (!wire_.empty()) {
    std::unique_ptr<std::vector<NamedAttribute>> decoded(
        decoded_.exchange(nullptr, std::memory_order_acq_rel));
    attrs_ = decoded ? std::move(*decoded) : decode_wire_attrs(wire_);
    wire_ = {};
  }
  return attrs_;
}

const Attribute* Op::attr(std::string_view name) const {
  for (const NamedAttribute& a : attrs())
    if (a.name == name) return &a.value;
  return nullptr;
}

std::optional<Attribute> Op::attr_value(std::string_view name) const {
  if (wire_.empty() || decoded_.load(std::memory_order_acquire)) {
    const Attribute* a = attr(name);
    return a ? std::optional<Attribute>(*a) : std::nullopt;
  }
  return decode_wire_attr(wire_, name);
}

bool Op::has_attr(std::string_view name) const {
  if (wire_.empty()) return attr(name) != nullptr;
  return has_wire_attr(wire_, name);
}

void Op::set_attr(std::string_view name, Attribute value) {
  std::vector<NamedAttribute>& list = mutable_attrs();
  for (NamedAttribute& a : list) {
    if (a.name == name) {
      a.value = std::move(value);
      return;
    }
  }
  list.push_back(NamedAttribute{std::string(name), std::move(value)});
}

bool Op::remove_attr(std::string_view name) {
  std::vector<NamedAttribute>& list = mutable_attrs();
  auto it = std::find_if(list.begin(), list.end(),
                         [&](const NamedAttribute& a) { return a.name == name; });
  if (it == list.end()) return false;
  list.erase(it);
  return true;
}

void Op::set_wire_attrs(WireAttrs wire) {
  drop_decoded();
  attrs_.clear();
  wire_ = std::move(wire);
}

bool Op::operator==(const Op& other) const {
  if (type != other.type || inputs != other.inputs || outputs != other.outputs ||
      is_target != other.is_target || is_target_explicit != other.is_target_explicit ||
      unknown_fields != other.unknown_fields)
    return false;
  // The same bytes are the same attributes; otherwise compare the values.
  if (!wire_.empty() && !other.wire_.empty() && wire_.fields == other.wire_.fields) return true;
  return attrs() == other.attrs();
}

}  // namespace ctp
