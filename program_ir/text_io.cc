#include "program_ir/text_io.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string_view>
#include <variant>

#include "program_ir/op_compatible_map.h"
#include "program_ir/scalar.h"
#include "program_ir/wire_format.h"

namespace ctp {
namespace {

constexpr std::string_view kCallstackAttr = "op_callstack";

void append_json_string(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  for (char c : s) {
    auto byte = static_cast<unsigned char>(c);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (byte < 0x20 || byte == 0x7f) {
          out += "\\u00";
          out += kHex[byte >> 4];
          out += kHex[byte & 0xf];
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

// Names print bare unless they hold a character that would make the line
// ambiguous or split it; those are quoted like strings.
bool is_bare_name(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    auto byte = static_cast<unsigned char>(c);
    if (byte <= 0x20 || byte == 0x7f) return false;
    switch (c) {
      case '"': case '\\': case ',': case '[': case ']': case '(': case ')':
      case '{': case '}': case '=':
        return false;
      default: break;
    }
  }
  return true;
}

void append_name(std::string& out, std::string_view name) {
  if (is_bare_name(name)) {
    out += name;
  } else {
    append_json_string(out, name);
  }
}

template <typename T>
std::string shortest_decimal(T value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  (void)ec;  // 64 bytes hold any shortest float or double
  return std::string(buf, end);
}

void append_hex(std::string& out, std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (char c : bytes) {
    auto byte = static_cast<unsigned char>(c);
    out += kHex[byte >> 4];
    out += kHex[byte & 0xf];
  }
}

// A Scalar by its value (`7L`, `true`, `0.5`, `1.0+2.0j`), or its type alone
// when it has no value; bytes that are no Scalar message show as hex.
void append_scalar(std::string& out, const std::string& raw) {
  std::optional<Scalar> s;
  try {
    s = decode_scalar(raw);
  } catch (const wire::WireFault&) {
    append_hex(out, raw);
    return;
  }
  switch (s->type) {
    case Scalar::Type::BOOLEAN:
      if (s->b) return void(out += *s->b ? "true" : "false");
      break;
    case Scalar::Type::LONG:
      if (s->i) return void(out += std::to_string(*s->i) + "L");
      break;
    case Scalar::Type::FLOAT64:
      if (s->r) return void(out += double_to_text(*s->r));
      break;
    case Scalar::Type::COMPLEX128:
      if (s->c) {
        out += double_to_text(s->c->r);
        if (!std::signbit(s->c->i) || std::isnan(s->c->i)) out += '+';
        out += double_to_text(s->c->i) + "j";
        return;
      }
      break;
  }
  out += to_string(s->type);
}

template <typename T, typename AppendOne>
void append_list(std::string& out, AttrType type, std::string_view prefix,
                 const std::vector<T>& values, AppendOne append_one) {
  if (values.empty() && prefix.empty()) {
    out += to_string(type);
    out += "[]";
    return;
  }
  out += prefix;
  out += '[';
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i) out += ", ";
    append_one(out, values[i]);
  }
  out += ']';
}

void append_attribute(std::string& out, const Attribute& attr) {
  const AttrType type = attr.type();
  auto ints = [](std::string& o, int32_t v) { o += std::to_string(v); };
  auto longs = [](std::string& o, int64_t v) {
    o += std::to_string(v);
    o += 'L';
  };
  auto floats = [](std::string& o, float v) {
    o += float_to_text(v);
    o += 'f';
  };
  auto doubles = [](std::string& o, double v) { o += double_to_text(v); };
  auto strings = [](std::string& o, const std::string& v) { append_json_string(o, v); };
  auto names = [](std::string& o, const std::string& v) { append_name(o, v); };
  auto scalar = [](std::string& o, const std::string& v) { append_scalar(o, v); };
  auto bools = [](std::string& o, bool v) { o += v ? "true" : "false"; };

  switch (type) {
    case AttrType::INT: ints(out, attr.get<int32_t>()); return;
    case AttrType::LONG: longs(out, attr.get<int64_t>()); return;
    case AttrType::FLOAT: floats(out, attr.get<float>()); return;
    case AttrType::FLOAT64: doubles(out, attr.get<double>()); return;
    case AttrType::BOOLEAN: bools(out, attr.get<bool>()); return;
    case AttrType::STRING: strings(out, attr.get<std::string>()); return;
    case AttrType::BLOCK:
      out += "block(" + std::to_string(attr.get<int32_t>()) + ")";
      return;
    case AttrType::VAR:
      out += "var(";
      names(out, attr.get<std::string>());
      out += ')';
      return;
    case AttrType::SCALAR:
      out += "scalar(";
      scalar(out, attr.get<std::string>());
      out += ')';
      return;
    case AttrType::INTS: append_list(out, type, "", attr.get<std::vector<int32_t>>(), ints); return;
    case AttrType::LONGS: append_list(out, type, "", attr.get<std::vector<int64_t>>(), longs); return;
    case AttrType::FLOATS: append_list(out, type, "", attr.get<std::vector<float>>(), floats); return;
    case AttrType::FLOAT64S:
      append_list(out, type, "", attr.get<std::vector<double>>(), doubles);
      return;
    case AttrType::BOOLEANS:
      // std::vector<bool> hands out proxies, so copy to plain bools first.
      {
        const auto& packed = attr.get<std::vector<bool>>();
        std::vector<char> values(packed.begin(), packed.end());
        append_list(out, type, "", values, [&](std::string& o, char v) { bools(o, v != 0); });
      }
      return;
    case AttrType::STRINGS:
      append_list(out, type, "", attr.get<std::vector<std::string>>(), strings);
      return;
    case AttrType::BLOCKS:
      append_list(out, type, "blocks", attr.get<std::vector<int32_t>>(), ints);
      return;
    case AttrType::VARS:
      append_list(out, type, "vars", attr.get<std::vector<std::string>>(), names);
      return;
    case AttrType::SCALARS:
      append_list(out, type, "scalars", attr.get<std::vector<std::string>>(), scalar);
      return;
  }
  out += "<invalid attribute type " + std::to_string(static_cast<int>(type)) + ">";
}

void append_slots(std::string& out, const std::vector<Slot>& slots) {
  if (slots.empty()) {
    out += "()";
    return;
  }
  for (std::size_t i = 0; i < slots.size(); ++i) {
    if (i) out += ", ";
    append_name(out, slots[i].name);
    out += "=[";
    for (std::size_t j = 0; j < slots[i].args.size(); ++j) {
      if (j) out += ", ";
      append_name(out, slots[i].args[j]);
    }
    out += ']';
  }
}

void append_op(std::string& out, const Op& op) {
  append_name(out, op.type);
  out += ' ';
  append_slots(out, op.inputs());
  out += " -> ";
  append_slots(out, op.outputs());
  out += " {";
  std::vector<const NamedAttribute*> sorted;
  sorted.reserve(op.attrs().size());
  for (const NamedAttribute& a : op.attrs())
    if (a.name != kCallstackAttr) sorted.push_back(&a);
  std::sort(sorted.begin(), sorted.end(),
            [](const NamedAttribute* a, const NamedAttribute* b) { return a->name < b->name; });
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    if (i) out += ", ";
    append_name(out, sorted[i]->name);
    out += '=';
    append_attribute(out, sorted[i]->value);
  }
  out += '}';
}

void append_shape(std::string& out, const std::vector<int64_t>& shape) {
  out += '[';
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(shape[i]);
  }
  out += ']';
}

void append_var_attr(std::string& out, const VarAttr& attr) {
  append_name(out, attr.name);
  out += ": ";
  out += to_string(attr.type);
  if (attr.i) out += " i=" + std::to_string(*attr.i);
  if (attr.s) {
    out += " s=";
    append_json_string(out, *attr.s);
  }
  if (!attr.ints.empty()) {
    out += " ints=";
    append_list(out, AttrType::INTS, "", attr.ints,
                [](std::string& o, int32_t v) { o += std::to_string(v); });
  }
}

void append_var(std::string& out, const Var& var) {
  out += "var ";
  append_name(out, var.name);
  out += " : ";
  out += to_string(var.type);
  if (var.has_tensor_desc()) {
    out += ' ';
    out += to_string(var.dtype);
    out += ' ';
    append_shape(out, var.shape);
    if (var.lod_level.value_or(0) != 0) out += " lod=" + std::to_string(*var.lod_level);
  } else if (kind_has_tensor_desc(var.type)) {
    out += " (no tensor desc)";
  }
  if (var.persistable) out += " persistable";
  if (var.is_parameter) out += " parameter";
  if (var.stop_gradient) out += " stop_gradient";
  if (var.is_distributed) out += " distributed";
  if (var.need_check_feed) out += " need_check_feed";
  if (var.reader) {
    out += " reader=[";
    for (std::size_t i = 0; i < var.reader->size(); ++i) {
      const ReaderTensorDesc& d = (*var.reader)[i];
      if (i) out += ", ";
      out += to_string(d.dtype);
      out += ' ';
      append_shape(out, d.shape);
      if (d.lod_level.value_or(0) != 0) out += " lod=" + std::to_string(*d.lod_level);
    }
    out += ']';
  }
  if (var.tuple) {
    out += " tuple=[";
    for (std::size_t i = 0; i < var.tuple->size(); ++i) {
      if (i) out += ", ";
      out += to_string((*var.tuple)[i]);
    }
    out += ']';
  }
  // is_distributed shows as the flag above, not again as an attr.
  bool first = true;
  for (const VarAttr& attr : var.attrs) {
    if (is_distributed_attr(attr)) continue;
    out += first ? " attrs={" : ", ";
    first = false;
    append_var_attr(out, attr);
  }
  if (!first) out += '}';
}

// Paddle 1.x's op_compatible_map, on one line after the program line.
void append_op_compatible_map(std::string& out, const std::string& raw) {
  out += "op_compatible_map";
  OpCompatibleMap map;
  try {
    map = decode_op_compatible_map(raw);
  } catch (const wire::WireFault&) {
    out += " bytes=";
    append_hex(out, raw);
    out += '\n';
    return;
  }
  if (map.default_required_version) {
    out += " default_required_version=";
    append_json_string(out, *map.default_required_version);
  }
  for (std::size_t i = 0; i < map.pairs.size(); ++i) {
    const OpCompatibleMap::Pair& pair = map.pairs[i];
    out += i ? ", " : " ";
    append_name(out, pair.op_name);
    out += '=';
    append_json_string(out, pair.version);
    out += ':';
    out += to_string(pair.kind);
  }
  out += '\n';
}

}  // namespace

std::string float_to_text(float value) { return shortest_decimal(value); }

std::string double_to_text(double value) {
  std::string s = shortest_decimal(value);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

std::string attribute_to_text(const Attribute& attr) {
  std::string out;
  append_attribute(out, attr);
  return out;
}

std::string op_to_text(const Op& op) {
  std::string out;
  append_op(out, op);
  return out;
}

std::string block_ops_to_text(const Block& block) {
  std::string out;
  for (const Op& op : block.ops()) {
    append_op(out, op);
    out += '\n';
  }
  return out;
}

std::string program_ops_to_text(const Program& program) {
  if (program.blocks.size() == 1) return block_ops_to_text(program.blocks.front());
  std::string out;
  for (const Block& block : program.blocks) {
    out += "block " + std::to_string(block.idx) + "\n";
    out += block_ops_to_text(block);
  }
  return out;
}

std::string program_to_text(const Program& program) {
  std::string out = "program";
  if (program.version) out += " version=" + std::to_string(*program.version);
  if (program.op_version_map) {
    out += " op_versions={";
    for (std::size_t i = 0; i < program.op_version_map->size(); ++i) {
      const OpVersionEntry& entry = (*program.op_version_map)[i];
      if (i) out += ", ";
      append_name(out, entry.op_name);
      out += '=' + std::to_string(entry.version);
    }
    out += '}';
  }
  out += '\n';
  if (program.op_compatible_map) append_op_compatible_map(out, *program.op_compatible_map);
  for (const Block& block : program.blocks) {
    out += "block " + std::to_string(block.idx) + " parent=" + std::to_string(block.parent_idx) +
           " forward=" + std::to_string(block.forward_block_idx) + "\n";
    for (const Var& var : block.vars()) {
      out += "  ";
      append_var(out, var);
      out += '\n';
    }
    for (const Op& op : block.ops()) {
      out += "  op ";
      append_op(out, op);
      out += '\n';
    }
  }
  return out;
}

}  // namespace ctp
