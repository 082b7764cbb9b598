#include "program_ir/op.h"

#include <algorithm>

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

const Attribute* Op::attr(std::string_view name) const {
  for (const NamedAttribute& a : attrs)
    if (a.name == name) return &a.value;
  return nullptr;
}

void Op::set_attr(std::string_view name, Attribute value) {
  for (NamedAttribute& a : attrs) {
    if (a.name == name) {
      a.value = std::move(value);
      return;
    }
  }
  attrs.push_back(NamedAttribute{std::string(name), std::move(value)});
}

bool Op::remove_attr(std::string_view name) {
  auto it = std::find_if(attrs.begin(), attrs.end(),
                         [&](const NamedAttribute& a) { return a.name == name; });
  if (it == attrs.end()) return false;
  attrs.erase(it);
  return true;
}

}  // namespace ctp
