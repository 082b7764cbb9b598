#include <algorithm>
#include <array>

#include "ops/schema/op_def.h"

namespace ctp {
namespace {

const AttrDef* find_in(const std::vector<AttrDef>& defs, std::string_view name) {
  for (const AttrDef& d : defs)
    if (d.name == name) return &d;
  return nullptr;
}

const SlotDef* find_slot(const std::vector<SlotDef>& defs, std::string_view name) {
  for (const SlotDef& d : defs)
    if (d.name == name) return &d;
  return nullptr;
}

}  // namespace

const AttrDef* OpDef::find_attr(std::string_view name) const { return find_in(attrs, name); }
const SlotDef* OpDef::find_input(std::string_view name) const { return find_slot(inputs, name); }
const SlotDef* OpDef::find_output(std::string_view name) const { return find_slot(outputs, name); }

OpRegistry& OpRegistry::global() {
  static OpRegistry registry;
  return registry;
}

void OpRegistry::add(OpDef def) {
  std::string type = def.type;
  if (!defs_.emplace(type, std::move(def)).second)
    throw Error("op '" + type + "' is registered twice");
}

const OpDef* OpRegistry::find(std::string_view type) const {
  auto it = defs_.find(type);
  return it == defs_.end() ? nullptr : &it->second;
}

std::vector<std::string> OpRegistry::types() const {
  std::vector<std::string> out;
  for (const auto& [type, def] : defs_) out.push_back(type);
  std::sort(out.begin(), out.end());
  return out;
}

const AttrDef* OpRegistry::common_attr(std::string_view name) {
  static const std::vector<AttrDef> common = {
      {"op_role", AttrType::INT, Attribute(int32_t{0})},
      {"op_role_var", AttrType::STRINGS, Attribute(std::vector<std::string>{})},
      {"op_namescope", AttrType::STRING, Attribute("/")},
      {"op_callstack", AttrType::STRINGS, Attribute(std::vector<std::string>{})},
      {"op_device", AttrType::STRING, Attribute("")},
      {"with_quant_attr", AttrType::BOOLEAN, Attribute(false)},
  };
  return find_in(common, name);
}

const AttrDef* OpRegistry::find_attr(std::string_view type, std::string_view attr) const {
  if (const OpDef* def = find(type))
    if (const AttrDef* a = def->find_attr(attr)) return a;
  return common_attr(attr);
}

}  // namespace ctp
