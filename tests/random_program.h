// Random programs for property tests (json_io_property_test.cc,
// libprotobuf_check_test.cc): every AttrType, every var kind with and
// without its tensor description, reader and tuple descriptions, defaults
// written and not, random float bits including NaN payloads, subnormals and
// -0, int64 extremes, unicode and control characters in names, unknown fields
// at each level and place, Scalar values and op compatibility maps as
// protobuf writes them and otherwise. Each program is as a reader would give
// it back (flags only where they carry something), so that it compares equal
// to itself after a round trip.
#pragma once
#include <bit>
#include <cmath>
#include <limits>
#include <random>

#include "program_ir/op_compatible_map.h"
#include "program_ir/program.h"
#include "program_ir/scalar.h"
#include "tests/pb_test_encoder.h"

namespace ctp::test {

class RandomProgram {
 public:
  explicit RandomProgram(uint64_t seed) : rng_(seed) {}

  Program make() {
    Program p;
    const int blocks = 1 + below(3);
    for (int b = 0; b < blocks; ++b) {
      Block& block = p.blocks.emplace_back(b, b == 0 ? -1 : below(b));
      if (chance(4)) block.forward_block_idx = below(blocks);
      else block.forward_block_idx_explicit = chance(3);
      if (chance(5)) block.unknown_fields = placed_unknown_fields(2);
      const int vars = below(8);
      for (int v = 0; v < vars; ++v) {
        Var var = random_var();
        if (!block.has_var(var.name)) block.add_var(std::move(var));
      }
      const int ops = below(10);
      for (int o = 0; o < ops; ++o) block.append_op(random_op());
    }
    if (chance(2)) p.version = int64();
    if (chance(8)) {
      p.version = 0;
      p.version_number_absent = true;
    }
    if (chance(4)) {
      p.op_version_map.emplace();
      for (int i = below(3); i > 0; --i) p.op_version_map->push_back({name(), int32()});
    }
    if (chance(4)) p.op_compatible_map = op_compatible_map();
    if (chance(4)) p.unknown_fields = unknown_fields();
    return p;
  }

  bool made_nan() const { return made_nan_; }

 private:
  int below(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  bool chance(int one_in) { return below(one_in) == 0; }

  int32_t int32() {
    switch (below(4)) {
      case 0: return std::numeric_limits<int32_t>::min();
      case 1: return std::numeric_limits<int32_t>::max();
      case 2: return below(200) - 100;
      default: return static_cast<int32_t>(rng_());
    }
  }
  int64_t int64() {
    switch (below(4)) {
      case 0: return std::numeric_limits<int64_t>::min();
      case 1: return std::numeric_limits<int64_t>::max();
      case 2: return below(200) - 100;
      default: return static_cast<int64_t>(rng_());
    }
  }
  float float32() {
    float f;
    switch (below(6)) {
      case 0: f = std::bit_cast<float>(static_cast<uint32_t>(rng_()) & 0x807fffffu); break;  // subnormal / zero
      case 1: f = -0.0f; break;
      case 2: f = std::bit_cast<float>(0x7f800000u | static_cast<uint32_t>(rng_()) | (below(2) ? 0x80000000u : 0)); break;  // NaN or inf
      case 3: f = static_cast<float>(below(1000)) / 10.0f; break;
      default: f = std::bit_cast<float>(static_cast<uint32_t>(rng_()));
    }
    made_nan_ |= std::isnan(f);
    return f;
  }
  double float64() {
    double d;
    switch (below(5)) {
      case 0: d = std::bit_cast<double>(rng_() & 0x800fffffffffffffull); break;
      case 1: d = -0.0; break;
      case 2: d = std::bit_cast<double>(0x7ff0000000000000ull | rng_()); break;
      default: d = std::bit_cast<double>(rng_());
    }
    made_nan_ |= std::isnan(d);
    return d;
  }
  std::string name() {
    static const char* const pieces[] = {"fc_0", ".w_0", "@GRAD", "x", "变量", "é", "🙂",
                                         "\"q\"", "\\", "\n", "\x01", " ", "a.b", ""};
    std::string s;
    for (int i = 1 + below(3); i > 0; --i) s += pieces[below(std::size(pieces))];
    return s;
  }
  std::string bytes() {
    std::string s(static_cast<std::size_t>(below(12)), '\0');
    for (char& c : s) c = static_cast<char>(rng_());
    return s;
  }
  // Valid wire bytes with field numbers no framework.proto message uses.
  std::string unknown_fields() {
    testing_pb::Pb pb;
    for (int i = 1 + below(3); i > 0; --i) {
      const auto field = static_cast<uint32_t>(100 + below(1000));
      switch (below(5)) {
        case 0: pb.varint(field, rng_()); break;
        case 1: pb.f32(field, 1.5f); break;
        case 2: pb.f64(field, -3.0); break;
        case 3: pb.str(field, bytes()); break;
        default: pb.raw("\xa3\x06\x08\x01\xa4\x06");  // group 100 { 1: 1 }
      }
    }
    return pb.bytes();
  }

  // Unknown fields in one of the places a reader finds them: before the
  // first known field, before the second (for messages that always have
  // `known` of them), and at the end.
  UnknownFields placed_unknown_fields(std::size_t known) {
    UnknownFields fields;
    if (chance(3)) fields.append(0, unknown_fields());
    if (known > 1 && chance(3)) fields.append(1, unknown_fields());
    if (fields.empty() || chance(2)) fields.append(UnknownFields::kAtEnd, unknown_fields());
    return fields;
  }

  // An optional bool: true, or false and written anyway, or false.
  void flag(bool& value, bool& explicit_default) {
    value = chance(2);
    explicit_default = !value && chance(2);
  }

  Var random_var() {
    Var v;
    v.name = name();
    v.type = static_cast<VarKind>(below(34));
    if (kind_has_tensor_desc(v.type) && chance(6)) v.tensor_desc_absent = true;
    if (v.has_tensor_desc()) {
      v.dtype = static_cast<DataType>(below(34));
      for (int i = below(5); i > 0; --i) v.shape.push_back(chance(3) ? -1 : int64());
      if (kind_has_lod_level(v.type) && chance(2)) v.lod_level = chance(2) ? 0 : int32();
    }
    flag(v.persistable, v.explicit_defaults.persistable);
    flag(v.need_check_feed, v.explicit_defaults.need_check_feed);
    flag(v.is_parameter, v.explicit_defaults.is_parameter);
    flag(v.stop_gradient, v.explicit_defaults.stop_gradient);
    v.is_distributed = chance(3);
    for (int i = below(3); i > 0; --i) {
      VarAttr a{.name = "va" + std::to_string(i) + name(), .type = static_cast<AttrType>(below(18))};
      if (i == 1 && chance(6)) a.name = "is_distributed";  // in another form than ctp's own
      if (chance(2)) a.i = int32();
      if (chance(2)) a.s = name();
      for (int k = below(3); k > 0; --k) a.ints.push_back(int32());
      v.attrs.push_back(std::move(a));
    }
    // As a reader sees it: the flag in the attr that holds it, and ctp's own
    // form of that attr as the flag alone.
    v.attrs = v.written_attrs();
    read_is_distributed(v);
    if (chance(6)) {
      v.reader.emplace();
      for (int i = below(3); i > 0; --i) {
        ReaderTensorDesc& d = v.reader->emplace_back();
        d.dtype = static_cast<DataType>(below(34));
        for (int k = below(3); k > 0; --k) d.shape.push_back(int64());
        if (chance(2)) d.lod_level = int32();
      }
    }
    if (chance(6)) v.tuple = list<VarKind>([&] { return static_cast<VarKind>(below(34)); });
    if (chance(5)) v.unknown_fields = placed_unknown_fields(2);
    if (chance(5)) v.type_unknown_fields = placed_unknown_fields(1);
    return v;
  }

  // A Scalar as protobuf writes it, or now and then in another valid form
  // (a field before `type`, an unknown field) that JSON keeps as base64.
  std::string scalar() {
    Scalar s;
    s.type = static_cast<Scalar::Type>(1 + below(4));
    if (chance(2)) s.b = chance(2);
    if (chance(2)) s.i = int64();
    if (chance(2)) s.r = float64();
    if (chance(2)) s.c = Scalar::Complex{float64(), float64()};
    std::string bytes = encode_scalar(s);
    if (chance(5)) bytes = testing_pb::Pb().int64(3, int64()).raw(bytes).bytes();
    if (chance(5)) bytes += unknown_fields();
    return bytes;
  }

  std::string op_compatible_map() {
    OpCompatibleMap map;
    for (int i = below(3); i > 0; --i)
      map.pairs.push_back({name(), name(), static_cast<OpCompatibleMap::Kind>(below(5))});
    if (chance(2)) map.default_required_version = name();
    std::string bytes = encode_op_compatible_map(map);
    if (chance(5)) bytes += unknown_fields();
    return bytes;
  }

  template <typename T, typename Make>
  std::vector<T> list(Make&& make) {
    std::vector<T> out;
    for (int i = below(4); i > 0; --i) out.push_back(make());
    return out;
  }

  Attribute random_attr() {
    auto type = static_cast<AttrType>(below(18));
    switch (type) {
      case AttrType::INT: return Attribute(int32());
      case AttrType::FLOAT: return Attribute(float32());
      case AttrType::STRING: return Attribute(name());
      case AttrType::INTS: return Attribute(list<int32_t>([&] { return int32(); }));
      case AttrType::FLOATS: return Attribute(list<float>([&] { return float32(); }));
      case AttrType::STRINGS: return Attribute(list<std::string>([&] { return name(); }));
      case AttrType::BOOLEAN: return Attribute(chance(2));
      case AttrType::BOOLEANS: return Attribute(list<bool>([&] { return chance(2); }));
      case AttrType::BLOCK: return Attribute::block(int32());
      case AttrType::LONG: return Attribute(int64());
      case AttrType::BLOCKS: return Attribute::blocks(list<int32_t>([&] { return int32(); }));
      case AttrType::LONGS: return Attribute(list<int64_t>([&] { return int64(); }));
      case AttrType::FLOAT64S: return Attribute(list<double>([&] { return float64(); }));
      case AttrType::VAR: return Attribute::var(name());
      case AttrType::VARS: return Attribute::vars(list<std::string>([&] { return name(); }));
      case AttrType::FLOAT64: return Attribute(float64());
      case AttrType::SCALAR: return Attribute::scalar(scalar());
      case AttrType::SCALARS: return Attribute::scalars(list<std::string>([&] { return scalar(); }));
    }
    return Attribute();
  }

  Op random_op() {
    Op op(name());
    for (int i = below(4); i > 0; --i)
      op.set_input("In" + std::to_string(i) + name(), list<std::string>([&] { return name(); }));
    for (int i = below(3); i > 0; --i)
      op.set_output("Out" + std::to_string(i) + name(), list<std::string>([&] { return name(); }));
    for (int i = below(7); i > 0; --i) op.set_attr("a" + std::to_string(i) + name(), random_attr());
    if (chance(3)) op.set_attr("op_role", int32_t{below(2) ? 1 : 256});
    op.is_target = chance(5);
    op.is_target_explicit = !op.is_target && chance(4);
    if (chance(5)) op.unknown_fields = placed_unknown_fields(1);
    return op;
  }

  std::mt19937_64 rng_;
  bool made_nan_ = false;
};

}  // namespace ctp::test
