// The JSON forms of the messages ctp keeps as bytes (SCALAR values, the
// op_compatible_map): objects where the bytes are exactly what the object
// encodes to, base64 otherwise (docs/json-format.md).
#include "program_ir/json_values.h"
#include "program_ir/op_compatible_map.h"
#include "program_ir/scalar.h"
#include "program_ir/wire_format.h"

namespace ctp::json_convert {

namespace {

// The base64 form: bytes that must decode as `message`.
template <typename Decode>
std::string checked_bytes(const Values& v, Json& j, const JPath& at, std::string_view what,
                          const char* message, Decode decode) {
  std::string raw = v.bytes(j, at, what);
  try {
    decode(raw);
  } catch (const wire::WireFault& e) {
    v.fail(at, std::string("is not ") + message + " message: " + e.what());
  }
  return raw;
}

}  // namespace

std::string scalar_from_json(const Values& v, Json& j, const JPath& at, std::string_view what) {
  if (!j.is_object())
    return checked_bytes(v, j, at, what, "a Scalar",
                         [](std::string_view b) { decode_scalar(b); });
  Scalar s;
  bool has_type = false;
  for (auto& [key, value] : v.object(j, at)) {
    const JPath field = at.member(key);
    if (key == "type") {
      const std::string name = v.string(value, field);
      auto type = scalar_type_from_string(name);
      if (!type) v.fail(field, "unknown Scalar type '" + name + "'");
      s.type = *type;
      has_type = true;
    } else if (key == "b") {
      s.b = v.boolean(value, field);
    } else if (key == "i") {
      s.i = v.int64(value, field);
    } else if (key == "r") {
      s.r = v.float64(value, field);
    } else if (key == "c") {
      Scalar::Complex c;
      bool has_r = false, has_i = false;
      for (auto& [part, number] : v.object(value, field)) {
        if (part == "r") {
          c.r = v.float64(number, field.member(part));
          has_r = true;
        } else if (part == "i") {
          c.i = v.float64(number, field.member(part));
          has_i = true;
        } else {
          v.fail(field, "unknown key '" + part + "' (a complex number has \"r\" and \"i\")");
        }
      }
      if (!has_r || !has_i) v.fail(field, "a complex number needs \"r\" and \"i\"");
      s.c = c;
    } else {
      v.fail(at, "unknown key '" + key + "' (a Scalar has \"type\", \"b\", \"i\", \"r\", \"c\")");
    }
  }
  if (!has_type) v.fail(at, "Scalar has no \"type\"");
  return encode_scalar(s);
}

std::string op_compatible_map_from_json(const Values& v, Json& j, const JPath& at) {
  if (!j.is_object())
    return checked_bytes(v, j, at, {}, "an OpCompatibleMap",
                         [](std::string_view b) { decode_op_compatible_map(b); });
  OpCompatibleMap map;
  for (auto& [key, value] : v.object(j, at)) {
    const JPath field = at.member(key);
    if (key == "default_required_version") {
      map.default_required_version = v.string(value, field);
    } else if (key == "pairs") {
      map.pairs = v.list<OpCompatibleMap::Pair>(value, field, field, {}, [&](Json& e,
                                                                             const JPath& p) {
        OpCompatibleMap::Pair pair;
        bool has_name = false, has_version = false, has_type = false;
        for (auto& [k, val] : v.object(e, p)) {
          if (k == "op_name") {
            pair.op_name = v.string(val, p.member(k));
            has_name = true;
          } else if (k == "version") {
            pair.version = v.string(val, p.member(k));
            has_version = true;
          } else if (k == "type") {
            const std::string name = v.string(val, p.member(k));
            auto kind = compatible_kind_from_string(name);
            if (!kind) v.fail(p.member(k), "unknown CompatibleInfo type '" + name + "'");
            pair.kind = *kind;
            has_type = true;
          } else {
            v.fail(p, "unknown key '" + k + "' (a pair has \"op_name\", \"version\", \"type\")");
          }
        }
        if (!has_name || !has_version || !has_type)
          v.fail(p, "a pair needs \"op_name\", \"version\" and \"type\"");
        return pair;
      });
    } else {
      v.fail(at, "unknown key '" + key + "' (op_compatible_map has \"pairs\" and "
                 "\"default_required_version\")");
    }
  }
  return encode_op_compatible_map(map);
}

}  // namespace ctp::json_convert
