// proto2 presence through the IR (issue 15): explicit defaults stay
// explicit, absent descriptions stay absent, unknown fields keep their bytes
// and their place, the is_distributed attr keeps its form, and SCALAR values
// and the op_compatible_map are checked, shown and kept exactly; in protobuf
// and through JSON.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "program_ir/json_io.h"
#include "program_ir/proto_io.h"
#include "program_ir/scalar.h"
#include "program_ir/text_io.h"
#include "tests/pb_test_encoder.h"

namespace ctp {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing_pb::Pb;

Pb tensor(int32_t dtype, std::initializer_list<int64_t> dims) {
  Pb t;
  t.int32(1, dtype);
  for (int64_t d : dims) t.int64(2, d);
  return t;
}

std::string program_of(const Pb& block_body) {
  Pb block;
  block.int32(1, 0).int32(2, -1).raw(block_body.bytes());
  return Pb().msg(1, block).bytes();
}

// Reads `bytes`, writes them back, and goes through JSON too: both must give
// the bytes again. Returns the program read.
Program round_trip(const std::string& bytes) {
  Program p = parse_program_proto(bytes, "in.pb");
  EXPECT_EQ(serialize_program_proto(p), bytes);
  const std::string json = program_to_json(p);
  const Program from_json = parse_program_json(json, "in.json");
  EXPECT_EQ(from_json, p) << json;
  EXPECT_EQ(serialize_program_proto(from_json), bytes) << json;
  return p;
}

TEST(ProtoIoPresence, ExplicitDefaultsAreKeptAndShownInJson) {
  Pb var;
  var.str(1, "v")
      .msg(2, Pb().int32(1, 7).msg(3, Pb().msg(1, tensor(5, {2})).int32(2, 0)))
      .varint(3, 0)
      .varint(4, 0)
      .varint(5, 0)
      .varint(6, 0);
  Pb op;
  op.str(3, "relu").varint(5, 0);
  const std::string bytes = program_of(Pb().msg(3, var).msg(4, op).int32(5, -1));
  Program p = round_trip(bytes);
  const Var& v = p.blocks[0].var("v");
  EXPECT_EQ(v.lod_level, 0);
  EXPECT_EQ(v.explicit_defaults, (Var::ExplicitDefaults{true, true, true, true}));
  EXPECT_TRUE(p.blocks[0].ops().front().is_target_explicit);
  EXPECT_TRUE(p.blocks[0].forward_block_idx_explicit);
  // JSON says so by having the keys.
  const std::string json = program_to_json(p);
  EXPECT_THAT(json, HasSubstr("\"lod_level\": 0, \"persistable\": false, \"is_parameter\": false, "
                              "\"stop_gradient\": false, \"need_check_feed\": false}"));
  EXPECT_THAT(json, HasSubstr("\"is_target\": false"));
  EXPECT_THAT(json, HasSubstr("\"forward_block_idx\": -1"));

  // Without them nothing is written for the defaults.
  Var plain = v;
  plain.lod_level.reset();
  plain.explicit_defaults = {};
  Program q = p;
  q.blocks[0].mutable_vars().front() = plain;
  q.blocks[0].ops().front().is_target_explicit = false;
  q.blocks[0].forward_block_idx_explicit = false;
  Pb short_var;
  short_var.str(1, "v").msg(2, Pb().int32(1, 7).msg(3, Pb().msg(1, tensor(5, {2}))));
  EXPECT_EQ(serialize_program_proto(q),
            program_of(Pb().msg(3, short_var).msg(4, Pb().str(3, "relu"))));
  EXPECT_EQ(round_trip(serialize_program_proto(q)), q);
}

TEST(ProtoIoPresence, AbsentTensorDescriptionsStayAbsent) {
  for (int32_t kind : {7, 8, 13, 25, 26, 27, 30, 31}) {
    SCOPED_TRACE(kind);
    Program p = round_trip(program_of(Pb().msg(3, Pb().str(1, "v").msg(2, Pb().int32(1, kind)))));
    const Var& v = p.blocks[0].var("v");
    EXPECT_TRUE(v.tensor_desc_absent);
    EXPECT_FALSE(v.has_tensor_desc());
    EXPECT_THAT(program_to_json(p), HasSubstr("\"has_tensor_desc\": false"));
    EXPECT_THAT(program_to_text(p), HasSubstr("(no tensor desc)"));
  }
  // A kind without a description has nothing to be absent.
  Program raw = round_trip(program_of(Pb().msg(3, Pb().str(1, "id").msg(2, Pb().int32(1, 17)))));
  EXPECT_FALSE(raw.blocks[0].var("id").tensor_desc_absent);
  EXPECT_THAT(program_to_json(raw), Not(HasSubstr("has_tensor_desc")));
}

TEST(ProtoIoPresence, EveryVarKindLoadsPrintsAndRoundTrips) {
  for (int32_t kind = 0; kind <= 33; ++kind) {
    SCOPED_TRACE(kind);
    const auto k = static_cast<VarKind>(kind);
    Pb type;
    type.int32(1, kind);
    if (kind == 7 || kind == 13)
      type.msg(kind == 7 ? 3 : 4, Pb().msg(1, tensor(kind == 7 ? 32 : 33, {-1})).int32(2, 1));
    else if (kind_has_tensor_desc(k))
      type.msg(kind == 8 ? 2 : kind == 25 ? 8 : kind == 26 ? 9 : kind == 27 ? 10 : kind - 19,
               tensor(5, {3}));
    Program p = round_trip(program_of(Pb().msg(3, Pb().str(1, "v").msg(2, type))));
    const Var& v = p.blocks[0].var("v");
    EXPECT_EQ(v.type, k);
    EXPECT_FALSE(v.tensor_desc_absent);
    EXPECT_TRUE(v.type_unknown_fields.empty());
    EXPECT_THAT(program_to_text(p), HasSubstr("var v : " + std::string(to_string(k))));
  }
  // Beyond the enum is an error, as before.
  EXPECT_THROW(parse_program_proto(
                   program_of(Pb().msg(3, Pb().str(1, "v").msg(2, Pb().int32(1, 34)))), "x.pb"),
               Error);
}

TEST(ProtoIoPresence, UnknownFieldsKeepTheirPlace) {
  const std::string u1 = Pb().varint(90, 1).bytes();
  const std::string u2 = Pb().str(91, "x").bytes();
  const std::string u3 = Pb().f32(92, 2.0f).bytes();
  // Between the var's name and type; between the op's input and its type;
  // between the block's vars and ops; and at the end of each.
  Pb var;
  var.str(1, "v").raw(u1).msg(2, Pb().int32(1, 17)).raw(u2);
  Pb op;
  op.msg(1, Pb().str(1, "X").str(2, "v")).raw(u3).str(3, "relu");
  const std::string bytes = program_of(Pb().msg(3, var).raw(u2).msg(4, op).raw(u1));
  Program p = round_trip(bytes);
  const Var& v = p.blocks[0].var("v");
  ASSERT_EQ(v.unknown_fields.runs().size(), 2u);
  EXPECT_EQ(v.unknown_fields.runs()[0], (UnknownFields::Run{1, u1}));
  EXPECT_EQ(v.unknown_fields.runs()[1], (UnknownFields::Run{UnknownFields::kAtEnd, u2}));
  EXPECT_EQ(p.blocks[0].ops().front().unknown_fields.runs()[0], (UnknownFields::Run{1, u3}));
  // JSON gives the places as runs.
  EXPECT_THAT(program_to_json(p), HasSubstr("\"unknown_fields\": [{\"after\": 1, \"bytes\": "));

  // Fields at the end stay at the end when a rewrite adds ops; a place in
  // the middle counts the known fields before it.
  p.blocks[0].append_op(Op("scale"));
  const std::string edited = serialize_program_proto(p);
  Pb op2;
  op2.str(3, "scale");
  EXPECT_EQ(edited, program_of(Pb().msg(3, var).raw(u2).msg(4, op).msg(4, op2).raw(u1)));
}

TEST(ProtoIoPresence, TheIsDistributedAttrKeepsItsForm) {
  auto var_with = [](const Pb& attrs) {
    Pb var;
    var.str(1, "w").msg(2, Pb().int32(1, 17)).raw(attrs.bytes());
    return program_of(Pb().msg(3, var));
  };
  auto attr = [](int32_t type, int32_t i) {
    return Pb().msg(7, Pb().str(1, "is_distributed").int32(2, type).int32(3, i));
  };
  const Pb note = Pb().msg(7, Pb().str(1, "note").int32(2, 2).str(4, "n"));
  // As ctp writes it (last, BOOLEAN, i: 1): only the flag is kept.
  Program canonical = round_trip(var_with(Pb().raw(note.bytes()).raw(attr(6, 1).bytes())));
  EXPECT_TRUE(canonical.blocks[0].var("w").is_distributed);
  EXPECT_EQ(canonical.blocks[0].var("w").attrs.size(), 1u);
  EXPECT_THAT(program_to_json(canonical), HasSubstr("\"is_distributed\": true"));
  // Any other form stays an attr, written back as it came.
  for (const std::string& bytes :
       {var_with(Pb().raw(attr(6, 1).bytes()).raw(note.bytes())), var_with(attr(0, 2)),
        var_with(attr(6, 0))}) {
    Program p = round_trip(bytes);
    const Var& w = p.blocks[0].var("w");
    EXPECT_EQ(w.is_distributed, w.attrs[0].i != 0);
    EXPECT_TRUE(is_distributed_attr(w.attrs[0]));
  }
  // The flag is what counts: clearing it writes the attr's i as 0.
  Program p = parse_program_proto(var_with(attr(0, 2)), "d.pb");
  p.blocks[0].mutable_vars().front().is_distributed = false;
  EXPECT_EQ(serialize_program_proto(p), var_with(attr(0, 0)));
  // JSON may say it twice, but not two different things.
  EXPECT_THROW(parse_program_json(R"({"blocks": [{"idx": 0, "parent_idx": -1, "vars": [
      {"name": "w", "is_distributed": true,
       "attrs": {"is_distributed": {"type": "INT", "i": 0}}}]}]})", "d.json"),
               Error);
}

TEST(ProtoIoPresence, ScalarsAreCheckedShownAndKeptExactly) {
  const std::string long7 = Pb().int32(1, 2).int64(3, 7).bytes();
  const std::string complex =
      Pb().int32(1, 4).msg(5, Pb().f64(1, 1.0).f64(2, -2.0)).bytes();
  // Valid but not as protobuf writes it (i before type): JSON keeps base64.
  const std::string odd = Pb().int64(3, 7).int32(1, 2).bytes();
  Pb op;
  op.str(3, "fill")
      .msg(4, Pb().str(1, "v").int32(2, 16).msg(20, Pb().raw(long7)))
      .msg(4, Pb().str(1, "vs").int32(2, 17).msg(21, Pb().raw(complex)).msg(21, Pb().raw(odd)));
  Program p = round_trip(program_of(Pb().msg(4, op)));
  const std::string json = program_to_json(p);
  EXPECT_THAT(json, HasSubstr("\"v\": {\"type\": \"SCALAR\", \"value\": {\"type\": \"LONG\", \"i\": 7}}"));
  EXPECT_THAT(json, HasSubstr("{\"type\": \"COMPLEX128\", \"c\": {\"r\": 1.0, \"i\": -2.0}}, \"GAcIAg==\"]"));
  EXPECT_THAT(program_to_text(p), HasSubstr("v=scalar(7L), vs=scalars[1.0-2.0j, 7L]"));
  EXPECT_EQ(decode_scalar(odd).i, 7);

  // Bytes that are no Scalar message are a load error naming the attr.
  Pb bad;
  bad.str(3, "fill").msg(4, Pb().str(1, "v").int32(2, 16).msg(20, Pb().int64(3, 7)));
  try {
    parse_program_proto(program_of(Pb().msg(4, bad)), "bad.pb");
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("bad.pb: block 0, op 0 'fill', attr 'v': Scalar has no type"));
  }
}

TEST(ProtoIoPresence, TheOpCompatibleMapIsCheckedShownAndKeptExactly) {
  Pb map;
  map.msg(1, Pb().str(1, "conv2d").msg(2, Pb().str(1, "1.6.0").int32(2, 1)));
  map.str(2, "1.5.0");
  Pb block;
  block.int32(1, 0).int32(2, -1);
  const std::string bytes = Pb().msg(1, block).msg(3, map).bytes();
  Program p = round_trip(bytes);
  EXPECT_THAT(program_to_json(p),
              HasSubstr("\"op_compatible_map\": {\"pairs\": [{\"op_name\": \"conv2d\", "
                        "\"version\": \"1.6.0\", \"type\": \"DEFINITELY_NOT\"}], "
                        "\"default_required_version\": \"1.5.0\"}"));
  EXPECT_THAT(program_to_text(p),
              HasSubstr("op_compatible_map default_required_version=\"1.5.0\" "
                        "conv2d=\"1.6.0\":DEFINITELY_NOT\n"));
  // A pair without its CompatibleInfo is a load error.
  Pb broken;
  broken.msg(1, Pb().str(1, "conv2d"));
  try {
    parse_program_proto(Pb().msg(1, block).msg(3, broken).bytes(), "bad.pb");
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("bad.pb: op_compatible_map: OpCompatiblePair has no "
                                    "compatible_info (field 2)"));
  }
}

TEST(ProtoIoPresence, AVersionMessageWithoutItsNumber) {
  Pb block;
  block.int32(1, 0).int32(2, -1);
  Program p = round_trip(Pb().msg(1, block).msg(4, Pb()).bytes());
  EXPECT_EQ(p.version, 0);
  EXPECT_TRUE(p.version_number_absent);
  EXPECT_THAT(program_to_json(p), HasSubstr("\"version\": null"));
  Program q = round_trip(Pb().msg(1, block).msg(4, Pb().int64(1, 0)).bytes());
  EXPECT_FALSE(q.version_number_absent);
}

}  // namespace
}  // namespace ctp
