// Writing a Program in ctp's JSON form (docs/json-format.md), one var or op
// per line so that diffs of two programs read well.
#include <algorithm>
#include <charconv>
#include <unordered_set>

#include "program_ir/json_encoding.h"
#include "program_ir/json_io.h"
#include "program_ir/op_compatible_map.h"
#include "program_ir/scalar.h"

namespace ctp {
namespace {

namespace je = json_encoding;

// The index of the first item whose name repeats an earlier one, or npos.
// JSON objects cannot hold such items; hashing keeps the check linear.
template <typename Items, typename Name>
std::size_t first_repeat(const Items& items, Name&& name) {
  if (items.size() <= 16) {
    for (std::size_t i = 1; i < items.size(); ++i)
      for (std::size_t k = 0; k < i; ++k)
        if (name(items[k]) == name(items[i])) return i;
    return std::string::npos;
  }
  std::unordered_set<std::string_view> seen;
  seen.reserve(items.size());
  for (std::size_t i = 0; i < items.size(); ++i)
    if (!seen.insert(name(items[i])).second) return i;
  return std::string::npos;
}

class JsonWriter {
 public:
  explicit JsonWriter(std::string& out) : out_(out) {}

  void program(const Program& p) {
    out_.append("{");
    bool first = true;
    auto member = [&](std::string_view key) {
      out_.append(first ? "\n  \"" : ",\n  \"").append(key).append("\": ");
      first = false;
    };
    if (p.version) {
      member("version");
      if (p.version_number_absent && *p.version == 0)
        out_.append("null");
      else
        integer(*p.version);
    }
    if (p.op_version_map) {
      member("op_version_map");
      out_.push_back('[');
      for (std::size_t i = 0; i < p.op_version_map->size(); ++i) {
        const OpVersionEntry& e = (*p.op_version_map)[i];
        out_.append(i ? ", {\"op_name\": " : "{\"op_name\": ");
        string(e.op_name, [&] {
          return SourceLocation{.path = "op_version_map[" + std::to_string(i) + "]"};
        });
        out_.append(", \"version\": ");
        integer(e.version);
        out_.push_back('}');
      }
      out_.push_back(']');
    }
    if (p.op_compatible_map) {
      member("op_compatible_map");
      op_compatible_map(*p.op_compatible_map);
    }
    if (!p.unknown_fields.empty()) {
      member("unknown_fields");
      unknown(p.unknown_fields);
    }
    member("blocks");
    out_.push_back('[');
    for (std::size_t i = 0; i < p.blocks.size(); ++i) {
      out_.append(i ? ",\n    " : "\n    ");
      block(p.blocks[i], i);
    }
    out_.append(p.blocks.empty() ? "]\n}\n" : "\n  ]\n}\n");
  }

 private:
  void block(const Block& b, std::size_t index) {
    block_ = index;
    out_.append("{\n      \"idx\": ");
    integer(b.idx);
    out_.append(",\n      \"parent_idx\": ");
    integer(b.parent_idx);
    if (b.forward_block_idx != -1 || b.forward_block_idx_explicit) {
      out_.append(",\n      \"forward_block_idx\": ");
      integer(b.forward_block_idx);
    }
    if (!b.unknown_fields.empty()) {
      out_.append(",\n      \"unknown_fields\": ");
      unknown(b.unknown_fields);
    }
    out_.append(",\n      \"vars\": [");
    bool first = true;
    for (const Var& v : b.vars()) {
      out_.append(first ? "\n        " : ",\n        ");
      first = false;
      var(v);
    }
    out_.append(first ? "]" : "\n      ]");
    out_.append(",\n      \"ops\": [");
    first = true;
    std::size_t op_index = 0;
    for (const Op& o : b.ops()) {
      out_.append(first ? "\n        " : ",\n        ");
      first = false;
      op(o, op_index++);
    }
    out_.append(first ? "]\n    }" : "\n      ]\n    }");
  }

  void var(const Var& v) {
    auto where = [&] {
      SourceLocation at = block_place();
      at.var_name = v.name;
      return at;
    };
    out_.append("{\"name\": ");
    string(v.name, where);
    out_.append(", \"type\": \"").append(to_string(v.type)).push_back('"');
    if (v.has_tensor_desc()) {
      out_.append(", \"dtype\": \"").append(to_string(v.dtype)).append("\", \"shape\": ");
      list(v.shape, [&](int64_t d) { integer(d); });
      if (v.lod_level) {
        out_.append(", \"lod_level\": ");
        integer(*v.lod_level);
      }
    } else if (kind_has_tensor_desc(v.type)) {
      out_.append(", \"has_tensor_desc\": false");
    }
    const Var::ExplicitDefaults& e = v.explicit_defaults;
    flag("persistable", v.persistable, e.persistable);
    flag("is_parameter", v.is_parameter, e.is_parameter);
    flag("stop_gradient", v.stop_gradient, e.stop_gradient);
    // is_distributed as a key, unless an attr of the file's own holds it.
    const bool attr_holds_distributed =
        std::any_of(v.attrs.begin(), v.attrs.end(), is_distributed_attr);
    if (v.is_distributed && !attr_holds_distributed) out_.append(", \"is_distributed\": true");
    flag("need_check_feed", v.need_check_feed, e.need_check_feed);
    if (attr_holds_distributed)
      var_attrs(v.written_attrs(), where);
    else if (!v.attrs.empty())
      var_attrs(v.attrs, where);
    if (v.reader) {
      out_.append(", \"reader\": ");
      list(*v.reader, [&](const ReaderTensorDesc& d) {
        out_.append("{\"dtype\": \"").append(to_string(d.dtype)).append("\", \"shape\": ");
        list(d.shape, [&](int64_t x) { integer(x); });
        if (d.lod_level) {
          out_.append(", \"lod_level\": ");
          integer(*d.lod_level);
        }
        out_.push_back('}');
      });
    }
    if (v.tuple) {
      out_.append(", \"tuple\": ");
      list(*v.tuple, [&](VarKind k) { out_.append("\"").append(to_string(k)).push_back('"'); });
    }
    if (!v.unknown_fields.empty()) {
      out_.append(", \"unknown_fields\": ");
      unknown(v.unknown_fields);
    }
    if (!v.type_unknown_fields.empty()) {
      out_.append(", \"type_unknown_fields\": ");
      unknown(v.type_unknown_fields);
    }
    out_.push_back('}');
  }

  template <typename Where>
  void var_attrs(const std::vector<VarAttr>& attrs, const Where& where) {
    std::size_t repeat =
        first_repeat(attrs, [](const VarAttr& a) -> std::string_view { return a.name; });
    if (repeat != std::string::npos)
      duplicate(with_attr(where(), attrs[repeat].name), "var attr");
    out_.append(", \"attrs\": {");
    for (std::size_t i = 0; i < attrs.size(); ++i) {
      const VarAttr& a = attrs[i];
      auto attr_where = [&] { return with_attr(where(), a.name); };
      if (i) out_.append(", ");
      string(a.name, attr_where);
      out_.append(": {\"type\": \"").append(to_string(a.type)).push_back('"');
      if (a.i) {
        out_.append(", \"i\": ");
        integer(*a.i);
      }
      if (a.s) {
        out_.append(", \"s\": ");
        string(*a.s, attr_where);
      }
      if (!a.ints.empty()) {
        out_.append(", \"ints\": ");
        list(a.ints, [&](int32_t x) { integer(x); });
      }
      out_.push_back('}');
    }
    out_.push_back('}');
  }

  void op(const Op& o, std::size_t index) {
    auto where = [&] {
      SourceLocation at = block_place();
      at.op = static_cast<int64_t>(index);
      at.op_type = o.type;
      return at;
    };
    out_.append("{\"type\": ");
    string(o.type, where);
    slots("input", "inputs", o.inputs(), where);
    slots("output", "outputs", o.outputs(), where);
    const std::vector<NamedAttribute>& attrs = o.attrs();
    std::size_t repeat =
        first_repeat(attrs, [](const NamedAttribute& a) -> std::string_view { return a.name; });
    if (repeat != std::string::npos)
      duplicate(with_attr(where(), attrs[repeat].name), "attribute");
    out_.append(", \"attrs\": {");
    for (std::size_t i = 0; i < attrs.size(); ++i) {
      const NamedAttribute& a = attrs[i];
      auto attr_where = [&] { return with_attr(where(), a.name); };
      if (i) out_.append(", ");
      string(a.name, attr_where);
      out_.append(": {\"type\": \"").append(to_string(a.value.type())).append("\", \"value\": ");
      attr_value(a.value, attr_where);
      out_.push_back('}');
    }
    out_.push_back('}');
    if (o.is_target || o.is_target_explicit)
      out_.append(o.is_target ? ", \"is_target\": true" : ", \"is_target\": false");
    if (!o.unknown_fields.empty()) {
      out_.append(", \"unknown_fields\": ");
      unknown(o.unknown_fields);
    }
    out_.push_back('}');
  }

  template <typename Where>
  void slots(const char* side, std::string_view key, const std::vector<Slot>& slots,
             const Where& where) {
    auto at_slot = [&](const std::string& name) {
      SourceLocation at = where();
      at.slot_side = side;
      at.slot_name = name;
      return at;
    };
    std::size_t repeat = first_repeat(slots, [](const Slot& s) -> std::string_view { return s.name; });
    if (repeat != std::string::npos) duplicate(at_slot(slots[repeat].name), "slot");
    out_.append(", \"").append(key).append("\": {");
    for (std::size_t i = 0; i < slots.size(); ++i) {
      const Slot& s = slots[i];
      auto slot_where = [&] { return at_slot(s.name); };
      if (i) out_.append(", ");
      string(s.name, slot_where);
      out_.append(": ");
      list(s.args, [&](const std::string& arg) { string(arg, slot_where); });
    }
    out_.push_back('}');
  }

  template <typename Where>
  void attr_value(const Attribute& attr, const Where& where) {
    const AttrType type = attr.type();
    if (type == AttrType::SCALAR) return scalar(attr.get<std::string>());
    if (type == AttrType::SCALARS)
      return list(attr.get<std::vector<std::string>>(), [&](const std::string& s) { scalar(s); });
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, bool>) {
            out_.append(v ? "true" : "false");
          } else if constexpr (std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>) {
            integer(v);
          } else if constexpr (std::is_same_v<T, float>) {
            je::append_float(out_, v);
          } else if constexpr (std::is_same_v<T, double>) {
            je::append_double(out_, v);
          } else if constexpr (std::is_same_v<T, std::string>) {
            string(v, where);
          } else if constexpr (std::is_same_v<T, std::vector<bool>>) {
            list(v, [&](bool b) { out_.append(b ? "true" : "false"); });
          } else if constexpr (std::is_same_v<T, std::vector<float>>) {
            list(v, [&](float f) { je::append_float(out_, f); });
          } else if constexpr (std::is_same_v<T, std::vector<double>>) {
            list(v, [&](double d) { je::append_double(out_, d); });
          } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
            list(v, [&](const std::string& s) { string(s, where); });
          } else {
            list(v, [&](auto x) { integer(x); });
          }
        },
        attr.value());
  }

  template <typename Container, typename Each>
  void list(const Container& items, Each&& each) {
    out_.push_back('[');
    bool first = true;
    for (const auto& item : items) {
      if (!first) out_.append(", ");
      first = false;
      each(item);
    }
    out_.push_back(']');
  }

  void integer(int64_t v) {
    char buf[24];
    auto res = std::to_chars(buf, buf + sizeof buf, v);
    out_.append(buf, res.ptr);
  }

  // An optional bool: written when set, or when the file wrote it false.
  void flag(std::string_view key, bool v, bool explicit_default) {
    if (v || explicit_default) out_.append(", \"").append(key).append(v ? "\": true" : "\": false");
  }

  // As an object when the bytes are what that object encodes to; else as
  // base64 (docs/json-format.md).
  void scalar(const std::string& raw) {
    const std::optional<Scalar> s = canonical_scalar(raw);
    if (!s) return bytes(raw);
    out_.append("{\"type\": \"").append(to_string(s->type)).push_back('"');
    if (s->b) out_.append(*s->b ? ", \"b\": true" : ", \"b\": false");
    if (s->i) {
      out_.append(", \"i\": ");
      integer(*s->i);
    }
    if (s->r) {
      out_.append(", \"r\": ");
      je::append_double(out_, *s->r);
    }
    if (s->c) {
      out_.append(", \"c\": {\"r\": ");
      je::append_double(out_, s->c->r);
      out_.append(", \"i\": ");
      je::append_double(out_, s->c->i);
      out_.push_back('}');
    }
    out_.push_back('}');
  }

  void op_compatible_map(const std::string& raw) {
    const std::optional<OpCompatibleMap> map = canonical_op_compatible_map(raw);
    auto where = [] { return SourceLocation{.part = "op_compatible_map"}; };
    // Strings JSON cannot hold go as base64 too.
    bool text = map.has_value();
    for (std::size_t i = 0; text && i < map->pairs.size(); ++i)
      text = je::is_valid_utf8(map->pairs[i].op_name) && je::is_valid_utf8(map->pairs[i].version);
    if (text && map->default_required_version)
      text = je::is_valid_utf8(*map->default_required_version);
    if (!text) return bytes(raw);
    out_.append("{\"pairs\": ");
    list(map->pairs, [&](const OpCompatibleMap::Pair& p) {
      out_.append("{\"op_name\": ");
      string(p.op_name, where);
      out_.append(", \"version\": ");
      string(p.version, where);
      out_.append(", \"type\": \"").append(to_string(p.kind)).append("\"}");
    });
    if (map->default_required_version) {
      out_.append(", \"default_required_version\": ");
      string(*map->default_required_version, where);
    }
    out_.push_back('}');
  }

  // One base64 string when every field comes after the known ones; else
  // the runs with their places.
  void unknown(const UnknownFields& fields) {
    const auto& runs = fields.runs();
    if (runs.size() == 1 && runs[0].after == UnknownFields::kAtEnd) return bytes(runs[0].bytes);
    list(runs, [&](const UnknownFields::Run& run) {
      out_.push_back('{');
      if (run.after != UnknownFields::kAtEnd) {
        out_.append("\"after\": ");
        integer(static_cast<int64_t>(run.after));
        out_.append(", ");
      }
      out_.append("\"bytes\": ");
      bytes(run.bytes);
      out_.push_back('}');
    });
  }

  template <typename Where>
  void string(std::string_view text, const Where& where) {
    if (!je::is_valid_utf8(text))
      throw Error(where(), "string is not valid UTF-8, which JSON cannot hold");
    je::append_json_string(out_, text);
  }

  void bytes(std::string_view raw) {
    out_.push_back('"');
    out_.append(je::base64_encode(raw));
    out_.push_back('"');
  }

  [[noreturn]] static void duplicate(SourceLocation where, const char* what) {
    throw Error(std::move(where), "a second " + std::string(what) +
                                      " of this name, which a JSON object cannot hold");
  }

  static SourceLocation with_attr(SourceLocation at, const std::string& name) {
    at.attr_name = name;
    return at;
  }

  SourceLocation block_place() const { return SourceLocation{.block = static_cast<int64_t>(block_)}; }

  std::string& out_;
  std::size_t block_ = 0;
};

}  // namespace

std::string program_to_json(const Program& program) {
  // Growing a string of hundreds of MB by doubling copies it and touches
  // fresh pages at every step; a generous reservation is only address
  // space until written (a million-op program: ~600 bytes per op).
  std::size_t ops = 0, vars = 0;
  for (const Block& b : program.blocks) {
    ops += b.op_count();
    vars += b.var_count();
  }
  std::string out;
  out.reserve(4096 + ops * 768 + vars * 256);
  JsonWriter(out).program(program);
  return out;
}

}  // namespace ctp
