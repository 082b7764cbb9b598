#include "program_ir/json_convert.h"

#include <cmath>
#include <limits>
#include <optional>

#include "program_ir/framework_fields.h"
#include "program_ir/json_encoding.h"
#include "program_ir/json_values.h"
#include "program_ir/wire_format.h"

namespace ctp::json_convert {
namespace {

namespace je = json_encoding;

bool is_plain_key(std::string_view key) {
  if (key.empty()) return false;
  for (char c : key)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
          c == '_' || c == '@'))
      return false;
  return true;
}

Json::object_t& members(Json& j) { return j.get_ref<Json::object_t&>(); }

}  // namespace

std::string kind_of(const Json& j) {
  switch (j.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::boolean: return "a boolean";
    case Json::value_t::string: return "a string";
    case Json::value_t::array: return "an array";
    case Json::value_t::object: return "an object";
    case Json::value_t::number_float: return "a number with a fraction";
    default: return "a number";
  }
}

void JsonPlace::key(std::string_view name) {
  std::string& path = at_.path;
  if (is_plain_key(name)) {
    if (!path.empty()) path.push_back('.');
    path.append(name);
  } else {
    path.append("[");
    je::append_json_string(path, je::is_valid_utf8(name) ? name : std::string_view("?"));
    path.append("]");
  }
  // blocks[b].ops[o].attrs.NAME, blocks[b].ops[o].inputs.NAME, blocks[b].vars[v].attrs.NAME
  if (++steps_ == 6 && at_.has_block()) {
    if (last_key_ == "attrs") {
      at_.attr_name = name;
    } else if (at_.has_op() && (last_key_ == "inputs" || last_key_ == "outputs")) {
      at_.slot_side = last_key_ == "inputs" ? "input" : "output";
      at_.slot_name = name;
    }
  }
  last_key_ = name;
}

void JsonPlace::index(long i) {
  at_.path.append("[").append(std::to_string(i)).append("]");
  ++steps_;
  if (steps_ == 2 && last_key_ == "blocks") at_.block = i;
  if (steps_ == 4 && at_.has_block() && last_key_ == "ops") at_.op = i;
  if (steps_ == 4 && at_.has_block() && last_key_ == "vars") at_.var = i;
  last_key_.clear();
}

JsonPlace JPath::place() const {
  if (!parent) return JsonPlace();
  JsonPlace out = parent->place();
  if (index >= 0)
    out.index(index);
  else
    out.key(key);
  return out;
}

void Converter::fail(const JsonPlace& at, const std::string& message) const {
  SourceLocation place = at.location();
  place.source = source_;
  throw Error(std::move(place), message);
}

namespace {


AttrValue attr_value(const Values& v, AttrType type, Json& j, const JPath& at) {
  const std::string what = " for " + std::string(to_string(type));
  const JPath items = at.member("value");
  auto ints = [&](Json& e, const JPath& p) { return v.int32(e, p, what); };
  auto longs = [&](Json& e, const JPath& p) { return v.int64(e, p, what); };
  auto strings = [&](Json& e, const JPath& p) { return v.string(e, p, what); };
  switch (type) {
    case AttrType::INT:
    case AttrType::BLOCK: return v.int32(j, at, what);
    case AttrType::LONG: return v.int64(j, at, what);
    case AttrType::FLOAT: return v.float32(j, at, what);
    case AttrType::FLOAT64: return v.float64(j, at, what);
    case AttrType::STRING:
    case AttrType::VAR: return v.string(j, at, what);
    case AttrType::BOOLEAN: return v.boolean(j, at, what);
    case AttrType::SCALAR: return scalar_from_json(v, j, at, what);
    case AttrType::INTS:
    case AttrType::BLOCKS: return v.list<int32_t>(j, at, items, what, ints);
    case AttrType::LONGS: return v.list<int64_t>(j, at, items, what, longs);
    case AttrType::FLOATS:
      return v.list<float>(j, at, items, what,
                           [&](Json& e, const JPath& p) { return v.float32(e, p, what); });
    case AttrType::FLOAT64S:
      return v.list<double>(j, at, items, what,
                            [&](Json& e, const JPath& p) { return v.float64(e, p, what); });
    case AttrType::STRINGS:
    case AttrType::VARS: return v.list<std::string>(j, at, items, what, strings);
    case AttrType::BOOLEANS: {
      std::vector<bool> out = v.list<bool>(
          j, at, items, what, [&](Json& e, const JPath& p) { return v.boolean(e, p, what); });
      return out;
    }
    case AttrType::SCALARS:
      return v.list<std::string>(
          j, at, items, what, [&](Json& e, const JPath& p) { return scalar_from_json(v, e, p, what); });
  }
  return int32_t{0};
}

AttrType attr_type(const Converter& c, const Values& v, Json& j, const JPath& at) {
  std::string name = v.string(j, at);
  auto type = attr_type_from_string(name);
  if (!type) c.fail(at, "unknown attribute type '" + name + "'");
  return *type;
}

VarAttr var_attr(const Converter& c, const Values& v, std::string name, Json& spec,
                 const JPath& at) {
  VarAttr attr;
  attr.name = std::move(name);
  bool has_type = false;
  for (auto& [key, value] : v.object(spec, at)) {
    JPath field = at.member(key);
    if (key == "type") {
      attr.type = attr_type(c, v, value, field);
      has_type = true;
    } else if (key == "i") {
      attr.i = v.int32(value, field);
    } else if (key == "s") {
      attr.s = v.string(value, field);
    } else if (key == "ints") {
      attr.ints = v.list<int32_t>(value, field, field, {},
                                  [&](Json& e, const JPath& p) { return v.int32(e, p); });
    } else {
      c.fail(at, "unknown key '" + key + "' (a var attr has \"type\", \"i\", \"s\", \"ints\")");
    }
  }
  if (!has_type) c.fail(at, "var attr has no \"type\"");
  return attr;
}

VarKind var_kind(const Converter& c, const Values& v, Json& j, const JPath& at) {
  std::string name = v.string(j, at);
  auto kind = var_kind_from_string(name);
  if (!kind) c.fail(at, "unknown var type '" + name + "'");
  return *kind;
}

}  // namespace

void Converter::check_unknown_fields(std::string_view bytes, const JsonPlace& path,
                                     std::initializer_list<uint32_t> known,
                                     const char* message) const {
  try {
    wire::Reader r(bytes, 0);
    while (!r.done()) {
      const std::size_t start = r.position();
      const wire::Tag tag = r.read_tag();
      for (uint32_t field : known)
        if (tag.field == field)
          fail(path, "holds field " + std::to_string(field) + ", which is " + message +
                         "'s own, not an unknown one");
      r.skip_field(tag, start);
    }
  } catch (const wire::WireFault& e) {
    fail(path, std::string("is not a sequence of protobuf fields: ") + e.what() + " (at byte " +
                   std::to_string(e.offset()) + ")");
  }
}

UnknownFields Converter::unknown_fields(Json& j, const JPath& at,
                                        std::initializer_list<uint32_t> known,
                                        const char* message) const {
  Values v(*this);
  UnknownFields fields;
  if (j.is_string()) {
    std::string bytes = v.bytes(j, at);
    check_unknown_fields(bytes, at.place(), known, message);
    fields.append(UnknownFields::kAtEnd, bytes);
    return fields;
  }
  v.expect(j.is_array(), j, at, "a base64 string or an array of runs", {});
  std::size_t last = 0;
  long i = 0;
  for (Json& run : j) {
    const JPath run_at = at.at(i++);
    std::size_t after = UnknownFields::kAtEnd;
    std::optional<std::string> bytes;
    for (auto& [key, value] : v.object(run, run_at)) {
      const JPath field = run_at.member(key);
      if (key == "after")
        after = static_cast<std::size_t>(
            v.integer(value, field, 0, std::numeric_limits<int32_t>::max()));
      else if (key == "bytes")
        bytes = v.bytes(value, field);
      else
        fail(run_at, "unknown key '" + key + "' (a run has \"after\" and \"bytes\")");
    }
    if (!bytes || bytes->empty()) fail(run_at, "a run needs \"bytes\" (not empty)");
    if (after < last) fail(run_at, "runs must come in the order of their places (\"after\")");
    last = after;
    check_unknown_fields(*bytes, run_at.member("bytes").place(), known, message);
    fields.append(after, *bytes);
  }
  return fields;
}

namespace {

// The keys of a var that belong to its tensor description.
struct TensorDescKeys {
  bool dtype = false, shape = false, lod_level = false;
  std::optional<bool> has_tensor_desc;
};

std::vector<ReaderTensorDesc> reader_descs(const Converter& c, const Values& v, Json& j,
                                           const JPath& at) {
  return v.list<ReaderTensorDesc>(j, at, at, {}, [&](Json& e, const JPath& p) {
    ReaderTensorDesc d;
    for (auto& [key, value] : v.object(e, p)) {
      const JPath field = p.member(key);
      if (key == "dtype")
        d.dtype = data_type_of_wire_kind(var_kind(c, v, value, field));
      else if (key == "shape")
        d.shape = v.list<int64_t>(value, field, field, {},
                                  [&](Json& x, const JPath& xp) { return v.int64(x, xp); });
      else if (key == "lod_level")
        d.lod_level = v.int32(value, field);
      else
        c.fail(p, "unknown key '" + key + "' (a reader description has \"dtype\", \"shape\", \"lod_level\")");
    }
    return d;
  });
}

// Keep the JSON form exactly as expressive as the protobuf form: a tensor
// description only where the kind has one, lod_level only where it does.
void check_tensor_desc(const Converter& c, Var& var, const TensorDescKeys& keys, const JPath& at) {
  const bool any = keys.dtype || keys.shape || keys.lod_level;
  const std::string kind(to_string(var.type));
  if (!kind_has_tensor_desc(var.type)) {
    if (any || keys.has_tensor_desc.value_or(false))
      c.fail(at, "var '" + var.name + "' of type " + kind +
                   " has no tensor description: dtype, shape and lod_level do not apply");
    if (keys.has_tensor_desc) c.fail(at.member("has_tensor_desc"), "applies to tensor kinds only");
    return;
  }
  if (keys.has_tensor_desc == false) {
    if (any)
      c.fail(at, "var '" + var.name + "' has \"has_tensor_desc\": false and a dtype, shape or "
               "lod_level");
    var.tensor_desc_absent = true;
  }
  if (keys.lod_level && !kind_has_lod_level(var.type))
    c.fail(at.member("lod_level"), kind + " vars have no lod_level");
}

// The "is_distributed" key and an is_distributed attr say the same, or only
// one of them is there.
void set_distributed(const Converter& c, Var& var, std::optional<bool> key, const JPath& at) {
  const std::optional<bool> from_attr = read_is_distributed(var);
  if (key && from_attr && *key != *from_attr)
    c.fail(at.member("is_distributed"), "disagrees with the var's is_distributed attr");
  if (key) var.is_distributed = *key;
}

}  // namespace

Var Converter::var(Json& j, const JPath& at) const {
  Values v(*this);
  Var var;
  bool has_name = false;
  std::optional<bool> distributed_key;
  TensorDescKeys desc;
  Json* type_unknown = nullptr;
  std::optional<JPath> type_unknown_at;
  // An optional VarDesc bool: its value, and that the JSON gave it.
  auto flag = [&](Json& value, const JPath& field, bool& out, bool& explicit_default) {
    out = v.boolean(value, field);
    explicit_default = !out;
  };
  Var::ExplicitDefaults& e = var.explicit_defaults;
  for (auto& [key, value] : v.object(j, at)) {
    JPath field = at.member(key);
    if (key == "name") {
      var.name = v.string(value, field);
      has_name = true;
    } else if (key == "type") {
      var.type = var_kind(*this, v, value, field);
    } else if (key == "dtype") {
      // Named as the VarType.Type it is on the wire (see DataType).
      var.dtype = data_type_of_wire_kind(var_kind(*this, v, value, field));
      desc.dtype = true;
    } else if (key == "shape") {
      var.shape = v.list<int64_t>(value, field, field, {},
                                  [&](Json& e, const JPath& p) { return v.int64(e, p); });
      desc.shape = true;
    } else if (key == "lod_level") {
      var.lod_level = v.int32(value, field);
      desc.lod_level = true;
    } else if (key == "has_tensor_desc") {
      desc.has_tensor_desc = v.boolean(value, field);
    } else if (key == "persistable") {
      flag(value, field, var.persistable, e.persistable);
    } else if (key == "need_check_feed") {
      flag(value, field, var.need_check_feed, e.need_check_feed);
    } else if (key == "is_parameter") {
      flag(value, field, var.is_parameter, e.is_parameter);
    } else if (key == "stop_gradient") {
      flag(value, field, var.stop_gradient, e.stop_gradient);
    } else if (key == "is_distributed") {
      distributed_key = v.boolean(value, field);
    } else if (key == "attrs") {
      auto& attrs = v.object(value, field);
      var.attrs.reserve(attrs.size());
      for (auto& [name, spec] : attrs)
        var.attrs.push_back(var_attr(*this, v, name, spec, field.member(name)));
    } else if (key == "reader") {
      var.reader = reader_descs(*this, v, value, field);
    } else if (key == "tuple") {
      var.tuple = v.list<VarKind>(value, field, field, {}, [&](Json& e, const JPath& p) {
        return var_kind(*this, v, e, p);
      });
    } else if (key == "unknown_fields") {
      var.unknown_fields = unknown_fields(value, field, {1, 2, 3, 4, 5, 6, 7}, "VarDesc");
    } else if (key == "type_unknown_fields") {
      type_unknown = &value;
      type_unknown_at = field;
    } else {
      fail(at, "unknown key '" + key + "' in a var");
    }
  }
  if (!has_name) fail(at, "var has no \"name\"");
  // The type's own fields are its kind, the tensor description of that
  // kind, reader and tuple; descriptions of other kinds are unknown fields
  // (proto_io.h).
  if (type_unknown)
    var.type_unknown_fields =
        unknown_fields(*type_unknown, *type_unknown_at,
                       {fields::var_type::kType, fields::tensor_desc_field(var.type),
                        fields::var_type::kReader, fields::var_type::kTuple},
                       "VarType");
  check_tensor_desc(*this, var, desc, at);
  set_distributed(*this, var, distributed_key, at);
  return var;
}

Attribute Converter::attribute(const std::string& type_name, const JPath& type_at, Json& value,
                               const JPath& at) const {
  auto type = attr_type_from_string(type_name);
  if (!type) fail(type_at, "unknown attribute type '" + type_name + "'");
  return Attribute(*type, attr_value(Values(*this), *type, value, at));
}

void Converter::block_fields(Json& j, const JPath& at, Block& block) const {
  Values v(*this);
  bool has_idx = false, has_parent = false;
  for (auto& [key, value] : members(j)) {
    JPath field = at.member(key);
    if (key == "idx") {
      block.idx = v.int32(value, field);
      has_idx = true;
    } else if (key == "parent_idx") {
      block.parent_idx = v.int32(value, field);
      has_parent = true;
    } else if (key == "forward_block_idx") {
      block.forward_block_idx = v.int32(value, field);
      block.forward_block_idx_explicit = block.forward_block_idx == -1;
    } else if (key == "unknown_fields") {
      block.unknown_fields = unknown_fields(value, field, {1, 2, 3, 4, 5}, "BlockDesc");
    } else if (key == "vars" || key == "ops") {
      v.expect(value.is_array(), value, field, "an array", {});
    } else {
      fail(at, "unknown key '" + key + "' in a block");
    }
  }
  if (!has_idx) fail(at, "block has no \"idx\"");
  if (!has_parent) fail(at, "block has no \"parent_idx\"");
}

void Converter::program_fields(Json& j, Program& program) const {
  Values v(*this);
  JPath root;
  bool has_blocks = false;
  for (auto& [key, value] : members(j)) {
    JPath field = root.member(key);
    if (key == "version") {
      // null: a Version message without its number.
      program.version_number_absent = value.is_null();
      program.version = value.is_null() ? 0 : v.int64(value, field);
    } else if (key == "op_version_map") {
      program.op_version_map = v.list<OpVersionEntry>(
          value, field, field, {}, [&](Json& e, const JPath& p) {
            OpVersionEntry entry;
            bool has_name = false, has_version = false;
            for (auto& [k, val] : v.object(e, p)) {
              if (k == "op_name") {
                entry.op_name = v.string(val, p.member(k));
                has_name = true;
              } else if (k == "version") {
                entry.version = v.int32(val, p.member(k));
                has_version = true;
              } else {
                fail(p, "unknown key '" + k + "' (an entry has \"op_name\" and \"version\")");
              }
            }
            if (!has_name || !has_version) fail(p, "entry needs \"op_name\" and \"version\"");
            return entry;
          });
    } else if (key == "op_compatible_map") {
      program.op_compatible_map = op_compatible_map_from_json(v, value, field);
    } else if (key == "unknown_fields") {
      program.unknown_fields = unknown_fields(value, field, {1, 3, 4, 5}, "ProgramDesc");
    } else if (key == "blocks") {
      v.expect(value.is_array(), value, field, "an array", {});
      has_blocks = true;
    } else {
      fail(root, "unknown key '" + key + "' in the program");
    }
  }
  if (!has_blocks) fail(root, "program has no \"blocks\"");
}

}  // namespace ctp::json_convert
