// Property: for randomly generated programs (every AttrType, every var kind,
// random float bits including NaN payloads, subnormals and -0, int64
// extremes, unicode and control characters in names, unknown fields at each
// level), proto -> JSON -> proto gives the same Program and the same bytes.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>

#include "program_ir/json_io.h"
#include "program_ir/proto_io.h"
#include "tests/pb_test_encoder.h"

namespace ctp {
namespace {

class RandomProgram {
 public:
  explicit RandomProgram(uint64_t seed) : rng_(seed) {}

  Program make() {
    Program p;
    const int blocks = 1 + below(3);
    for (int b = 0; b < blocks; ++b) {
      Block& block = p.blocks.emplace_back(b, b == 0 ? -1 : below(b));
      if (chance(4)) block.forward_block_idx = below(blocks);
      if (chance(5)) block.unknown_fields = unknown_fields();
      const int vars = below(8);
      for (int v = 0; v < vars; ++v) {
        Var var = random_var();
        if (!block.has_var(var.name)) block.add_var(std::move(var));
      }
      const int ops = below(10);
      for (int o = 0; o < ops; ++o) block.append_op(random_op());
    }
    if (chance(2)) p.version = int64();
    if (chance(4)) {
      p.op_version_map.emplace();
      for (int i = below(3); i > 0; --i) p.op_version_map->push_back({name(), int32()});
    }
    if (chance(4)) p.op_compatible_map = bytes();
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

  Var random_var() {
    Var v;
    v.name = name();
    v.type = static_cast<VarKind>(below(25));
    if (v.has_tensor_desc()) {
      v.dtype = static_cast<DataType>(below(25));
      for (int i = below(5); i > 0; --i) v.shape.push_back(chance(3) ? -1 : int64());
      if (v.type != VarKind::SELECTED_ROWS && chance(3)) v.lod_level = int32();
    }
    v.persistable = chance(2);
    v.need_check_feed = chance(2);
    v.is_parameter = chance(2);
    v.stop_gradient = chance(2);
    v.is_distributed = chance(3);
    for (int i = below(3); i > 0; --i) {
      VarAttr a{.name = "va" + std::to_string(i) + name(), .type = static_cast<AttrType>(below(18))};
      if (chance(2)) a.i = int32();
      if (chance(2)) a.s = name();
      for (int k = below(3); k > 0; --k) a.ints.push_back(int32());
      v.attrs.push_back(std::move(a));
    }
    if (chance(5)) v.unknown_fields = unknown_fields();
    if (chance(5)) v.type_unknown_fields = unknown_fields();
    return v;
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
      case AttrType::SCALAR: return Attribute::scalar(bytes());
      case AttrType::SCALARS: return Attribute::scalars(list<std::string>([&] { return bytes(); }));
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
    if (chance(5)) op.unknown_fields = unknown_fields();
    return op;
  }

  std::mt19937_64 rng_;
  bool made_nan_ = false;
};

TEST(JsonIoProperty, ProtoToJsonToProtoIsIdentity) {
  int with_nan = 0;
  for (uint64_t seed = 1; seed <= 400; ++seed) {
    RandomProgram gen(seed);
    const Program original = gen.make();
    SCOPED_TRACE("seed " + std::to_string(seed));

    const std::string proto = serialize_program_proto(original);
    const Program from_proto = parse_program_proto(proto, "random.pb");
    const std::string json = program_to_json(from_proto);
    const Program from_json = parse_program_json(json, "random.json");
    const std::string proto_again = serialize_program_proto(from_json);

    ASSERT_EQ(proto_again, proto);
    ASSERT_EQ(program_to_json(from_json), json);
    // Program == compares floats by value, and NaN equals nothing; the byte
    // comparisons above cover those programs.
    if (gen.made_nan()) {
      ++with_nan;
    } else {
      ASSERT_EQ(from_proto, original);
      ASSERT_EQ(from_json, original);
    }
  }
  // Both halves of the check ran.
  EXPECT_GT(with_nan, 20);
  EXPECT_LT(with_nan, 380);
}

}  // namespace
}  // namespace ctp
