#include "program_ir/json_convert.h"

#include <cmath>
#include <limits>
#include <optional>

#include "program_ir/framework_fields.h"
#include "program_ir/json_encoding.h"
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

void append_path_key(std::string& path, std::string_view key) {
  if (is_plain_key(key)) {
    if (!path.empty()) path.push_back('.');
    path.append(key);
  } else {
    path.append("[");
    je::append_json_string(path, je::is_valid_utf8(key) ? key : std::string_view("?"));
    path.append("]");
  }
}

void append_path_index(std::string& path, long index) {
  path.append("[").append(std::to_string(index)).append("]");
}

std::string JPath::str() const {
  std::string path = parent ? parent->str() : std::string();
  if (!parent) return path;
  if (index >= 0)
    append_path_index(path, index);
  else
    append_path_key(path, key);
  return path;
}

void Converter::fail(const std::string& path, const std::string& message) const {
  throw Error(source_ + ": " + (path.empty() ? std::string() : path + ": ") + message);
}

namespace {

// Reading typed values out of parsed JSON; `what` ends the message, as in
// "expected an integer for INTS".
class Values {
 public:
  explicit Values(const Converter& c) : c_(c) {}

  void expect(bool ok, const Json& j, const JPath& at, const char* expected,
              std::string_view what) const {
    if (!ok)
      c_.fail(at, std::string("expected ") + expected + std::string(what) + ", got " + kind_of(j));
  }

  int64_t integer(const Json& j, const JPath& at, int64_t min, int64_t max,
                  std::string_view what = {}) const {
    expect(j.is_number_integer(), j, at, "an integer", what);
    if (j.is_number_unsigned()) {
      auto u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(max))
        c_.fail(at, "value " + std::to_string(u) + " is out of range" + std::string(what));
      return static_cast<int64_t>(u);
    }
    auto v = j.get<int64_t>();
    if (v < min || v > max)
      c_.fail(at, "value " + std::to_string(v) + " is out of range" + std::string(what));
    return v;
  }
  int32_t int32(const Json& j, const JPath& at, std::string_view what = {}) const {
    return static_cast<int32_t>(integer(j, at, std::numeric_limits<int32_t>::min(),
                                        std::numeric_limits<int32_t>::max(), what));
  }
  int64_t int64(const Json& j, const JPath& at, std::string_view what = {}) const {
    return integer(j, at, std::numeric_limits<int64_t>::min(),
                   std::numeric_limits<int64_t>::max(), what);
  }
  bool boolean(const Json& j, const JPath& at, std::string_view what = {}) const {
    expect(j.is_boolean(), j, at, "true or false", what);
    return j.get<bool>();
  }
  std::string string(Json& j, const JPath& at, std::string_view what = {}) const {
    expect(j.is_string(), j, at, "a string", what);
    return std::move(j.get_ref<std::string&>());
  }
  std::string bytes(const Json& j, const JPath& at, std::string_view what = {}) const {
    expect(j.is_string(), j, at, "a base64 string", what);
    auto decoded = je::base64_decode(j.get_ref<const std::string&>());
    if (!decoded) c_.fail(at, "not valid base64" + std::string(what));
    return std::move(*decoded);
  }
  double float64(const Json& j, const JPath& at, std::string_view what = {}) const {
    if (j.is_string()) {
      if (auto special = je::double_from_special(j.get_ref<const std::string&>())) return *special;
      c_.fail(at, "expected a number, \"NaN\", \"Infinity\" or \"-Infinity\"" + std::string(what) +
                      ", got the string \"" + j.get<std::string>() + "\"");
    }
    expect(j.is_number(), j, at, "a number", what);
    const double d = j.get<double>();
    // 1e999 reads as infinity; infinities are spelled "Infinity".
    if (!std::isfinite(d)) c_.fail(at, "value is out of range" + std::string(what));
    return d;
  }
  float float32(const Json& j, const JPath& at, std::string_view what = {}) const {
    if (j.is_string()) {
      if (auto special = je::float_from_special(j.get_ref<const std::string&>())) return *special;
      c_.fail(at, "expected a number, \"NaN\", \"Infinity\" or \"-Infinity\"" + std::string(what) +
                      ", got the string \"" + j.get<std::string>() + "\"");
    }
    expect(j.is_number(), j, at, "a number", what);
    auto f = static_cast<float>(j.get<double>());
    if (!std::isfinite(f)) c_.fail(at, "value is out of range" + std::string(what));
    return f;
  }

  template <typename T, typename One>
  std::vector<T> list(Json& j, const JPath& at, const JPath& items_at, std::string_view what,
                      One&& one) const {
    expect(j.is_array(), j, at, "an array", what);
    std::vector<T> out;
    out.reserve(j.size());
    long i = 0;
    for (Json& item : j) {
      out.push_back(one(item, items_at.at(i)));
      ++i;
    }
    return out;
  }

  Json::object_t& object(Json& j, const JPath& at, std::string_view what = {}) const {
    expect(j.is_object(), j, at, "an object", what);
    return members(j);
  }

 private:
  const Converter& c_;
};

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
    case AttrType::SCALAR: return v.bytes(j, at, what);
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
      return v.list<std::string>(j, at, items, what,
                                 [&](Json& e, const JPath& p) { return v.bytes(e, p, what); });
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

void Converter::check_unknown_fields(std::string_view bytes, const std::string& path,
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

Var Converter::var(Json& j, const JPath& at) const {
  Values v(*this);
  Var var;
  bool has_name = false;
  std::optional<std::string> type_unknown_at;
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
    } else if (key == "shape") {
      var.shape = v.list<int64_t>(value, field, field, {},
                                  [&](Json& e, const JPath& p) { return v.int64(e, p); });
    } else if (key == "lod_level") {
      var.lod_level = v.int32(value, field);
    } else if (key == "persistable") {
      var.persistable = v.boolean(value, field);
    } else if (key == "need_check_feed") {
      var.need_check_feed = v.boolean(value, field);
    } else if (key == "is_parameter") {
      var.is_parameter = v.boolean(value, field);
    } else if (key == "stop_gradient") {
      var.stop_gradient = v.boolean(value, field);
    } else if (key == "is_distributed") {
      var.is_distributed = v.boolean(value, field);
    } else if (key == "attrs") {
      auto& attrs = v.object(value, field);
      var.attrs.reserve(attrs.size());
      for (auto& [name, spec] : attrs)
        var.attrs.push_back(var_attr(*this, v, name, spec, field.member(name)));
    } else if (key == "unknown_fields") {
      var.unknown_fields = v.bytes(value, field);
      check_unknown_fields(var.unknown_fields, field.str(), {1, 2, 3, 4, 5, 6, 7}, "VarDesc");
    } else if (key == "type_unknown_fields") {
      var.type_unknown_fields = v.bytes(value, field);
      type_unknown_at = field.str();
    } else {
      fail(at, "unknown key '" + key + "' in a var");
    }
  }
  if (!has_name) fail(at, "var has no \"name\"");
  // The type's own fields are its kind and the tensor description of that
  // kind; descriptions of other kinds are unknown fields (proto_io.h).
  if (type_unknown_at)
    check_unknown_fields(var.type_unknown_fields, *type_unknown_at,
                         {fields::var_type::kType, fields::tensor_desc_field(var.type)}, "VarType");
  // Keep the JSON form exactly as expressive as the protobuf form.
  if (!var.has_tensor_desc() &&
      (var.dtype != DataType::FP32 || !var.shape.empty() || var.lod_level != 0))
    fail(at, "var '" + var.name + "' of type " + std::string(to_string(var.type)) +
                 " has no tensor description: dtype, shape and lod_level do not apply");
  if (var.type == VarKind::SELECTED_ROWS && var.lod_level != 0)
    fail(at.member("lod_level"), "SELECTED_ROWS vars have no lod_level");
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
    } else if (key == "unknown_fields") {
      block.unknown_fields = v.bytes(value, field);
      check_unknown_fields(block.unknown_fields, field.str(), {1, 2, 3, 4, 5}, "BlockDesc");
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
      program.version = v.int64(value, field);
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
      program.op_compatible_map = v.bytes(value, field);
    } else if (key == "unknown_fields") {
      program.unknown_fields = v.bytes(value, field);
      check_unknown_fields(program.unknown_fields, field.str(), {1, 3, 4, 5}, "ProgramDesc");
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
