#include "program_ir/var.h"

namespace ctp {

bool kind_has_tensor_desc(VarKind kind) {
  switch (kind) {
    case VarKind::LOD_TENSOR: case VarKind::SELECTED_ROWS: case VarKind::LOD_TENSOR_ARRAY:
    case VarKind::STRING: case VarKind::STRINGS: case VarKind::VOCAB:
    case VarKind::SPARSE_COO: case VarKind::SPARSE_CSR:
      return true;
    default: return false;
  }
}

bool kind_has_lod_level(VarKind kind) {
  return kind == VarKind::LOD_TENSOR || kind == VarKind::LOD_TENSOR_ARRAY;
}

bool is_distributed_attr(const VarAttr& attr) {
  return attr.name == kIsDistributedAttr &&
         (attr.type == AttrType::BOOLEAN || attr.type == AttrType::INT);
}

std::optional<bool> read_is_distributed(Var& var) {
  for (auto it = var.attrs.begin(); it != var.attrs.end(); ++it) {
    if (!is_distributed_attr(*it)) continue;
    const bool value = it->i.value_or(0) != 0;
    var.is_distributed = value;
    const bool as_added = std::next(it) == var.attrs.end() && it->type == AttrType::BOOLEAN &&
                          it->i == 1 && !it->s && it->ints.empty();
    if (as_added) var.attrs.erase(it);
    return value;
  }
  return std::nullopt;
}

std::vector<VarAttr> Var::written_attrs() const {
  std::vector<VarAttr> out = attrs;
  for (VarAttr& attr : out) {
    if (!is_distributed_attr(attr)) continue;
    if ((attr.i.value_or(0) != 0) != is_distributed) attr.i = is_distributed ? 1 : 0;
    return out;
  }
  if (is_distributed)
    out.push_back(VarAttr{.name = kIsDistributedAttr, .type = AttrType::BOOLEAN, .i = 1});
  return out;
}

}  // namespace ctp
