#include "tests/libprotobuf/program_compare.h"

#include <cstring>
#include <optional>

#include "program_ir/framework_fields.h"

namespace ctp::libprotobuf_check {
namespace {

// Floats compare by their bits, so that NaN payloads and -0 count.
template <typename F>
bool same_bits(F a, F b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

template <typename T>
std::string show(const T& v) {
  if constexpr (std::is_same_v<T, std::string>)
    return "\"" + v + "\"";
  else if constexpr (std::is_same_v<T, bool>)
    return v ? "true" : "false";
  else
    return std::to_string(v);
}

template <typename T>
std::string show(const std::vector<T>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + show(T(v[i]));
  return out + "]";
}

// The bytes of `fields` as libprotobuf writes them when it reads them as a
// `Msg`: fields it knows in number order, then the unknown ones.
template <typename Msg>
std::string canonical(const std::string& fields) {
  Msg m;
  if (!m.ParsePartialFromString(fields)) return "(unparsable: " + std::to_string(fields.size()) + " bytes)";
  return m.SerializePartialAsString();
}

// Walks both programs and keeps the first difference with its place.
class Differ {
 public:
  std::string first;

  bool ok() const { return first.empty(); }

  void differ(const std::string& place, const std::string& what) {
    if (first.empty()) first = place + ": " + what;
  }

  template <typename A, typename B>
  void eq(const std::string& place, const char* field, const A& ctp, const B& proto) {
    if (!(ctp == proto))
      differ(place, std::string(field) + ": ctp " + show(ctp) + ", libprotobuf " + show(proto));
  }

  // An optional field: whether it is set, and its value when it is.
  template <typename T>
  void optional(const std::string& place, const char* field, bool ctp_has, const T& ctp,
                bool proto_has, const T& proto) {
    if (ctp_has != proto_has)
      differ(place, std::string(field) + ": set in " + (ctp_has ? "ctp" : "libprotobuf") +
                        " only");
    else if (ctp_has && !(ctp == proto))
      differ(place, std::string(field) + ": ctp " + show(ctp) + ", libprotobuf " + show(proto));
  }

  // What ctp keeps as bytes (`ctp`, read as a `Msg`) against the part of
  // libprotobuf's message that ctp does not model (`rest`).
  template <typename Msg>
  void bytes(const std::string& place, const char* what, const std::string& ctp, const Msg& rest) {
    if (canonical<Msg>(ctp) != rest.SerializePartialAsString())
      differ(place, std::string(what) + " differ");
  }

  template <typename Proto>
  void tensor(const std::string& place, DataType dtype, const std::vector<int64_t>& shape,
              const Proto& t) {
    eq(place, "data_type", static_cast<int32_t>(dtype), static_cast<int32_t>(t.data_type()));
    eq(place, "dims", shape, std::vector<int64_t>(t.dims().begin(), t.dims().end()));
  }

  template <typename Proto>
  void lod_tensor(const std::string& place, DataType dtype, const std::vector<int64_t>& shape,
                  const std::optional<int32_t>& lod_level, const Proto& d) {
    tensor(place, dtype, shape, d.tensor());
    optional(place, "lod_level", lod_level.has_value(), lod_level.value_or(0),
             d.has_lod_level(), d.lod_level());
  }

  void var_type(const std::string& place, const Var& v, const pb::VarType& t) {
    eq(place, "type", static_cast<int32_t>(v.type), static_cast<int32_t>(t.type()));
    pb::VarType rest = t;
    rest.clear_type();
    const uint32_t desc = v.has_tensor_desc() ? fields::tensor_desc_field(v.type) : 0;
    const auto* reflection = t.GetReflection();
    const auto* descriptor = t.GetDescriptor();
    if (desc != 0) {
      const auto* field = descriptor->FindFieldByNumber(static_cast<int>(desc));
      if (!reflection->HasField(t, field)) return differ(place, "tensor description: ctp only");
      const auto& m = reflection->GetMessage(t, field);
      // LoDTensorArrayDesc has LoDTensorDesc's fields but is a class of its
      // own: each is read as what it is.
      if (v.type == VarKind::LOD_TENSOR_ARRAY)
        lod_tensor(place, v.dtype, v.shape, v.lod_level,
                   static_cast<const pb::VarType::LoDTensorArrayDesc&>(m));
      else if (kind_has_lod_level(v.type))
        lod_tensor(place, v.dtype, v.shape, v.lod_level,
                   static_cast<const pb::VarType::LoDTensorDesc&>(m));
      else
        tensor(place, v.dtype, v.shape, static_cast<const pb::VarType::TensorDesc&>(m));
      rest.GetReflection()->ClearField(&rest, field);
    }
    if (v.reader.has_value() != t.has_reader()) return differ(place, "reader: set in one only");
    if (v.reader) {
      eq(place, "reader size", v.reader->size(), static_cast<std::size_t>(t.reader().lod_tensor_size()));
      for (std::size_t i = 0; ok() && i < v.reader->size(); ++i) {
        const ReaderTensorDesc& d = (*v.reader)[i];
        lod_tensor(place + ", reader " + std::to_string(i), d.dtype, d.shape, d.lod_level,
                   t.reader().lod_tensor(static_cast<int>(i)));
      }
      rest.clear_reader();
    }
    if (v.tuple.has_value() != t.has_tuple()) return differ(place, "tuple: set in one only");
    if (v.tuple) {
      std::vector<int32_t> kinds;
      for (VarKind k : *v.tuple) kinds.push_back(static_cast<int32_t>(k));
      eq(place, "tuple", kinds, std::vector<int32_t>(t.tuple().element_type().begin(),
                                                     t.tuple().element_type().end()));
      rest.clear_tuple();
    }
    // A tensor kind without its description has none in libprotobuf either.
    if (v.tensor_desc_absent) {
      const auto* field =
          descriptor->FindFieldByNumber(static_cast<int>(fields::tensor_desc_field(v.type)));
      if (reflection->HasField(t, field)) differ(place, "tensor description: libprotobuf only");
    }
    bytes(place, "VarType's unknown fields", v.type_unknown_fields.bytes(), rest);
  }

  void var(const std::string& place, const Var& v, const pb::VarDesc& d) {
    eq(place, "name", v.name, d.name());
    var_type(place, v, d.type());
    const Var::ExplicitDefaults& e = v.explicit_defaults;
    optional(place, "persistable", v.persistable || e.persistable, v.persistable,
             d.has_persistable(), d.persistable());
    optional(place, "need_check_feed", v.need_check_feed || e.need_check_feed, v.need_check_feed,
             d.has_need_check_feed(), d.need_check_feed());
    optional(place, "is_parameter", v.is_parameter || e.is_parameter, v.is_parameter,
             d.has_is_parameter(), d.is_parameter());
    optional(place, "stop_gradient", v.stop_gradient || e.stop_gradient, v.stop_gradient,
             d.has_stop_gradient(), d.stop_gradient());
    const std::vector<VarAttr> attrs = v.written_attrs();
    eq(place, "attrs size", attrs.size(), static_cast<std::size_t>(d.attrs_size()));
    for (std::size_t i = 0; ok() && i < attrs.size(); ++i) {
      const VarAttr& a = attrs[i];
      const auto& p = d.attrs(static_cast<int>(i));
      const std::string at = place + ", attr " + std::to_string(i);
      eq(at, "name", a.name, p.name());
      eq(at, "type", static_cast<int32_t>(a.type), static_cast<int32_t>(p.type()));
      optional(at, "i", a.i.has_value(), a.i.value_or(0), p.has_i(), p.i());
      optional(at, "s", a.s.has_value(), a.s.value_or(""), p.has_s(), p.s());
      eq(at, "ints", a.ints, std::vector<int32_t>(p.ints().begin(), p.ints().end()));
    }
    pb::VarDesc rest;
    rest.mutable_unknown_fields()->MergeFrom(d.unknown_fields());
    bytes(place, "VarDesc's unknown fields", v.unknown_fields.bytes(), rest);
  }

  void attr_value(const std::string& at, const Attribute& a, const pb::OpDesc::Attr& p);

  void op(const std::string& place, const Op& o, const pb::OpDesc& d) {
    eq(place, "type", o.type, d.type());
    auto slots = [&](const char* side, const std::vector<Slot>& ctp, const auto& proto) {
      eq(place, side, ctp.size(), static_cast<std::size_t>(proto.size()));
      for (std::size_t i = 0; ok() && i < ctp.size(); ++i) {
        const auto& s = proto[static_cast<int>(i)];
        eq(place, side, ctp[i].name, s.parameter());
        eq(place, side, ctp[i].args, std::vector<std::string>(s.arguments().begin(),
                                                              s.arguments().end()));
      }
    };
    slots("inputs", o.inputs(), d.inputs());
    slots("outputs", o.outputs(), d.outputs());
    eq(place, "attrs size", o.attrs().size(), static_cast<std::size_t>(d.attrs_size()));
    for (std::size_t i = 0; ok() && i < o.attrs().size(); ++i) {
      const auto& p = d.attrs(static_cast<int>(i));
      const std::string at = place + ", attr '" + o.attrs()[i].name + "'";
      eq(at, "name", o.attrs()[i].name, p.name());
      eq(at, "type", static_cast<int32_t>(o.attrs()[i].value.type()), static_cast<int32_t>(p.type()));
      if (ok()) attr_value(at, o.attrs()[i].value, p);
    }
    optional(place, "is_target", o.is_target || o.is_target_explicit, o.is_target,
             d.has_is_target(), d.is_target());
    pb::OpDesc rest;
    rest.mutable_unknown_fields()->MergeFrom(d.unknown_fields());
    bytes(place, "OpDesc's unknown fields", o.unknown_fields.bytes(), rest);
  }

  void block(const std::string& place, const Block& b, const pb::BlockDesc& d) {
    eq(place, "idx", b.idx, d.idx());
    eq(place, "parent_idx", b.parent_idx, d.parent_idx());
    optional(place, "forward_block_idx", b.forward_block_idx != -1 || b.forward_block_idx_explicit,
             b.forward_block_idx, d.has_forward_block_idx(), d.forward_block_idx());
    eq(place, "vars", b.var_count(), static_cast<std::size_t>(d.vars_size()));
    int i = 0;
    for (const Var& v : b.vars()) {
      if (!ok()) return;
      var(place + ", var '" + v.name + "'", v, d.vars(i++));
    }
    eq(place, "ops", b.op_count(), static_cast<std::size_t>(d.ops_size()));
    i = 0;
    for (const Op& o : b.ops()) {
      if (!ok()) return;
      op(place + ", op " + std::to_string(i) + " '" + o.type + "'", o, d.ops(i));
      ++i;
    }
    pb::BlockDesc rest;
    rest.mutable_unknown_fields()->MergeFrom(d.unknown_fields());
    bytes(place, "BlockDesc's unknown fields", b.unknown_fields.bytes(), rest);
  }

  void program(const Program& p, const pb::ProgramDesc& d) {
    eq("program", "blocks", p.blocks.size(), static_cast<std::size_t>(d.blocks_size()));
    for (std::size_t i = 0; ok() && i < p.blocks.size(); ++i)
      block("block " + std::to_string(i), p.blocks[i], d.blocks(static_cast<int>(i)));
    if (p.version.has_value() != d.has_version()) differ("program", "version: set in one only");
    if (ok() && p.version)
      optional("program", "version.version", !p.version_number_absent, *p.version,
               d.version().has_version(), static_cast<int64_t>(d.version().version()));
    if (p.op_version_map.has_value() != d.has_op_version_map())
      differ("program", "op_version_map: set in one only");
    if (ok() && p.op_version_map) {
      const auto& pairs = d.op_version_map().pair();
      eq("program", "op_version_map size", p.op_version_map->size(),
         static_cast<std::size_t>(pairs.size()));
      for (std::size_t i = 0; ok() && i < p.op_version_map->size(); ++i) {
        eq("op_version_map", "op_name", (*p.op_version_map)[i].op_name,
           pairs[static_cast<int>(i)].op_name());
        eq("op_version_map", "version", (*p.op_version_map)[i].version,
           pairs[static_cast<int>(i)].op_version().version());
      }
    }
    if (p.op_compatible_map.has_value() != d.has_op_compatible_map())
      differ("program", "op_compatible_map: set in one only");
    if (ok() && p.op_compatible_map)
      bytes("program", "op_compatible_map", *p.op_compatible_map, d.op_compatible_map());
    pb::ProgramDesc rest;
    rest.mutable_unknown_fields()->MergeFrom(d.unknown_fields());
    bytes("program", "ProgramDesc's unknown fields", p.unknown_fields.bytes(), rest);
  }
};

template <typename T, typename R>
std::vector<T> as_vector(const R& repeated) {
  return std::vector<T>(repeated.begin(), repeated.end());
}

template <typename F, typename R>
bool same_float_bits(const std::vector<F>& a, const R& b) {
  if (a.size() != static_cast<std::size_t>(b.size())) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!same_bits(a[i], b[static_cast<int>(i)])) return false;
  return true;
}

void Differ::attr_value(const std::string& at, const Attribute& a, const pb::OpDesc::Attr& p) {
  switch (a.type()) {
    case AttrType::INT: return optional(at, "i", true, a.get<int32_t>(), p.has_i(), p.i());
    case AttrType::FLOAT:
      if (!p.has_f() || !same_bits(a.get<float>(), p.f())) differ(at, "f differs");
      return;
    case AttrType::STRING: return optional(at, "s", true, a.get<std::string>(), p.has_s(), p.s());
    case AttrType::INTS: return eq(at, "ints", a.get<std::vector<int32_t>>(), as_vector<int32_t>(p.ints()));
    case AttrType::FLOATS:
      if (!same_float_bits(a.get<std::vector<float>>(), p.floats())) differ(at, "floats differ");
      return;
    case AttrType::STRINGS:
      return eq(at, "strings", a.get<std::vector<std::string>>(), as_vector<std::string>(p.strings()));
    case AttrType::BOOLEAN: return optional(at, "b", true, a.get<bool>(), p.has_b(), p.b());
    case AttrType::BOOLEANS:
      return eq(at, "bools", a.get<std::vector<bool>>(), as_vector<bool>(p.bools()));
    case AttrType::BLOCK:
      return optional(at, "block_idx", true, a.get<int32_t>(), p.has_block_idx(), p.block_idx());
    case AttrType::LONG: return optional(at, "l", true, a.get<int64_t>(), p.has_l(), static_cast<int64_t>(p.l()));
    case AttrType::BLOCKS:
      return eq(at, "blocks_idx", a.get<std::vector<int32_t>>(), as_vector<int32_t>(p.blocks_idx()));
    case AttrType::LONGS:
      return eq(at, "longs", a.get<std::vector<int64_t>>(), as_vector<int64_t>(p.longs()));
    case AttrType::FLOAT64S:
      if (!same_float_bits(a.get<std::vector<double>>(), p.float64s())) differ(at, "float64s differ");
      return;
    case AttrType::VAR:
      return optional(at, "var_name", true, a.get<std::string>(), p.has_var_name(), p.var_name());
    case AttrType::VARS:
      return eq(at, "vars_name", a.get<std::vector<std::string>>(), as_vector<std::string>(p.vars_name()));
    case AttrType::FLOAT64:
      if (!p.has_float64() || !same_bits(a.get<double>(), p.float64())) differ(at, "float64 differs");
      return;
    case AttrType::SCALAR:
      if (!p.has_scalar()) return differ(at, "scalar: ctp only");
      return bytes(at, "scalar", a.get<std::string>(), p.scalar());
    case AttrType::SCALARS: {
      const auto& values = a.get<std::vector<std::string>>();
      eq(at, "scalars size", values.size(), static_cast<std::size_t>(p.scalars_size()));
      for (std::size_t i = 0; ok() && i < values.size(); ++i)
        bytes(at, "scalar", values[i], p.scalars(static_cast<int>(i)));
      return;
    }
  }
}

}  // namespace

bool parse(std::string_view bytes, pb::ProgramDesc& out) {
  return out.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
}

std::string difference(const Program& program, const pb::ProgramDesc& message) {
  Differ d;
  d.program(program, message);
  return d.first;
}

}  // namespace ctp::libprotobuf_check
