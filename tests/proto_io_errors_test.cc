// Malformed protobuf input: every class of error names its place, and no
// prefix or mutation of a valid file crashes the loader.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "program_ir/proto_io.h"
#include "tests/pb_test_encoder.h"

namespace ctp {
namespace {

using testing_pb::Pb;
using ::testing::HasSubstr;

std::string error_of(const std::string& bytes) {
  try {
    parse_program_proto(bytes, "bad.pb");
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

Pb good_var(std::string_view name) {
  Pb tensor;
  tensor.varint(1, 5).varint(2, 3);
  return Pb().str(1, name).msg(2, Pb().varint(1, 7).msg(3, Pb().msg(1, tensor)));
}

Pb good_op() {
  return Pb()
      .msg(1, Pb().str(1, "X").str(2, "x"))
      .str(3, "relu")
      .msg(4, Pb().str(1, "op_role").varint(2, 0).varint(3, 0));
}

// Block 0 declares x and runs relu, then the op or var under test as op 1
// or var 1.
std::string with_op(const Pb& op) {
  Pb block;
  block.varint(1, 0).int32(2, -1).msg(3, good_var("x")).msg(4, good_op()).msg(4, op);
  return Pb().msg(1, block).bytes();
}
std::string with_var(const Pb& var) {
  Pb block;
  block.varint(1, 0).int32(2, -1).msg(3, good_var("x")).msg(3, var);
  return Pb().msg(1, block).bytes();
}
Pb mul_with_attr(const Pb& attr) { return Pb().str(3, "mul").msg(4, attr); }

TEST(ProtoIoErrors, MissingRequiredFieldsNameTheirPlace) {
  EXPECT_EQ(error_of(Pb().msg(1, Pb().int32(2, -1)).bytes()),
            "bad.pb: block 0: BlockDesc has no idx (field 1)");
  EXPECT_EQ(error_of(Pb().msg(1, Pb().varint(1, 0)).bytes()),
            "bad.pb: block 0: BlockDesc has no parent_idx (field 2)");
  EXPECT_EQ(error_of(with_var(Pb().msg(2, Pb().varint(1, 7)))),
            "bad.pb: block 0, var 1: VarDesc has no name (field 1)");
  EXPECT_EQ(error_of(with_var(Pb().str(1, "y"))),
            "bad.pb: block 0, var 'y': VarDesc has no type (field 2)");
  EXPECT_EQ(error_of(with_var(Pb().str(1, "y").msg(2, Pb()))),
            "bad.pb: block 0, var 'y': VarType has no type (field 1)");
  EXPECT_EQ(error_of(with_var(
                Pb().str(1, "y").msg(2, Pb().varint(1, 7).msg(3, Pb().msg(1, Pb().varint(2, 4)))))),
            "bad.pb: block 0, var 'y': TensorDesc has no data_type (field 1)");
  EXPECT_EQ(error_of(with_var(Pb().str(1, "y").msg(2, Pb().varint(1, 13).msg(4, Pb().varint(2, 1))))),
            "bad.pb: block 0, var 'y': LoDTensorDesc has no tensor (field 1)");
  EXPECT_EQ(error_of(with_var(good_var("y").msg(7, Pb().varint(2, 0)))),
            "bad.pb: block 0, var 'y', attr 0: VarDesc.Attr has no name (field 1)");
  EXPECT_EQ(error_of(with_var(good_var("y").msg(7, Pb().str(1, "a")))),
            "bad.pb: block 0, var 'y', attr 'a': VarDesc.Attr has no type (field 2)");
  EXPECT_EQ(error_of(with_op(Pb().msg(1, Pb().str(1, "X").str(2, "x")))),
            "bad.pb: block 0, op 1: OpDesc has no type (field 3)");
  EXPECT_EQ(error_of(with_op(Pb().str(3, "mul").msg(2, Pb().str(2, "y")))),
            "bad.pb: block 0, op 1 'mul', output 0: OpDesc.Var has no parameter (field 1)");
  EXPECT_EQ(error_of(with_op(mul_with_attr(Pb().varint(2, 0).varint(3, 1)))),
            "bad.pb: block 0, op 1 'mul', attr 0: OpDesc.Attr has no name (field 1)");
  EXPECT_EQ(error_of(with_op(mul_with_attr(Pb().str(1, "axis").varint(3, 1)))),
            "bad.pb: block 0, op 1 'mul', attr 'axis': OpDesc.Attr has no type (field 2)");
  EXPECT_EQ(error_of(Pb().msg(5, Pb().msg(1, Pb().str(1, "mul"))).bytes()),
            "bad.pb: op_version_map: OpVersionPair 'mul' has no op_version (field 2)");
  EXPECT_EQ(error_of(Pb().msg(5, Pb().msg(1, Pb().msg(2, Pb()))).bytes()),
            "bad.pb: op_version_map: OpVersion has no version (field 1)");
}

TEST(ProtoIoErrors, InvalidEnumValues) {
  EXPECT_EQ(error_of(with_var(Pb().str(1, "y").msg(2, Pb().varint(1, 99)))),
            "bad.pb: block 0, var 'y': invalid VarType.Type 99");
  EXPECT_EQ(error_of(with_var(
                Pb().str(1, "y").msg(2, Pb().varint(1, 7).msg(3, Pb().msg(1, Pb().int32(1, -3)))))),
            "bad.pb: block 0, var 'y': invalid TensorDesc.data_type -3");
  EXPECT_EQ(error_of(with_op(mul_with_attr(Pb().str(1, "axis").varint(2, 18)))),
            "bad.pb: block 0, op 1 'mul', attr 'axis': invalid AttrType 18");
  EXPECT_EQ(error_of(with_var(good_var("y").msg(7, Pb().str(1, "a").int32(2, -1)))),
            "bad.pb: block 0, var 'y', attr 'a': invalid AttrType -1");
}

TEST(ProtoIoErrors, AttrWithoutTheValueItsTypeNeeds) {
  EXPECT_EQ(error_of(with_op(mul_with_attr(Pb().str(1, "scale").varint(2, 1)))),
            "bad.pb: block 0, op 1 'mul', attr 'scale': attr of type FLOAT has no value "
            "(field f = 4)");
  EXPECT_EQ(error_of(with_op(mul_with_attr(Pb().str(1, "sub").varint(2, 8)))),
            "bad.pb: block 0, op 1 'mul', attr 'sub': attr of type BLOCK has no value "
            "(field block_idx = 12)");
  EXPECT_EQ(error_of(with_op(mul_with_attr(Pb().str(1, "sc").varint(2, 16)))),
            "bad.pb: block 0, op 1 'mul', attr 'sc': attr of type SCALAR has no value "
            "(field scalar = 20)");
  // A value of another type is not silently dropped.
  EXPECT_THAT(error_of(with_op(mul_with_attr(Pb().str(1, "scale").varint(2, 1).varint(3, 2)))),
              HasSubstr("bad.pb: block 0, op 1 'mul', attr 'scale': attr of type FLOAT also "
                        "sets field 3 (a value of another type) (at byte "));
  // An empty list is a valid INTS value.
  EXPECT_EQ(error_of(with_op(mul_with_attr(Pb().str(1, "dims").varint(2, 3)))), "(no error)");
}

TEST(ProtoIoErrors, WrongWireTypesAndUnkeepableFields) {
  EXPECT_THAT(error_of(Pb().msg(1, Pb().str(1, "0")).bytes()),
              HasSubstr("bad.pb: block 0: field 1 (idx) has wire type length-delimited, "
                        "expected varint (at byte 2)"));
  EXPECT_THAT(error_of(with_op(mul_with_attr(Pb().str(1, "scale").varint(2, 1).f64(4, 1.0)))),
              HasSubstr("attr 'scale': field 4 (f) has wire type fixed64, expected fixed32"));
  EXPECT_THAT(error_of(with_op(mul_with_attr(Pb().str(1, "a").varint(2, 0).varint(3, 1).varint(30, 1)))),
              HasSubstr("attr 'a': unknown field 30 in OpDesc.Attr (ctp has nowhere to keep it)"));
  EXPECT_THAT(error_of(with_op(Pb().str(3, "mul").msg(1, Pb().str(1, "X").varint(3, 1)))),
              HasSubstr("op 1 'mul', input 0: unknown field 3 in OpDesc.Var"));
  EXPECT_EQ(error_of(with_var(good_var("x"))),
            "bad.pb: block 0, var 'x': declared twice in the block");
}

TEST(ProtoIoErrors, NamesInMessagesAreEscapedAndCutShort) {
  const std::string long_name(200, 'n');
  EXPECT_EQ(error_of(with_op(Pb().str(3, "bad\ntype").msg(4, Pb().str(1, long_name)))),
            "bad.pb: block 0, op 1 'bad\\x0atype', attr '" + std::string(80, 'n') +
                "...': OpDesc.Attr has no type (field 2)");
}

TEST(ProtoIoErrors, GarbageBytes) {
  EXPECT_THAT(error_of("\x0f"), HasSubstr("bad.pb: invalid wire type 7 for field 1 (at byte 0)"));
  EXPECT_THAT(error_of(std::string("\x00\x01", 2)), HasSubstr("invalid field number 0"));
  EXPECT_THAT(error_of("\x48\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f"),
              HasSubstr("varint longer than 64 bits"));
  EXPECT_THAT(error_of("\x0a\x05\x08"), HasSubstr("bad.pb: block 0: truncated: length 5 exceeds the 1 bytes left (at byte 1)"));
  EXPECT_THAT(error_of("\x4c"), HasSubstr("end-group for field 9 without a start"));
  EXPECT_THAT(error_of("\x4b\x08\x01\x54"), HasSubstr("end-group for field 10 closes group 9"));
  // Unknown groups nested without bound are refused, not recursed into.
  std::string deep(100000, '\x4b');
  EXPECT_THAT(error_of(deep), HasSubstr("groups nested too deeply"));
  EXPECT_THAT(error_of(with_op(Pb().str(3, "mul").raw("\x4b\x08\x01"))), HasSubstr("block 0, op 1 'mul': truncated group for field 9"));
}

// A realistic program: every prefix is either a valid shorter program (cut
// at a field boundary of the top level) or an error, never a crash.
std::string sample_program() {
  Pb block;
  block.varint(1, 0).int32(2, -1);
  for (int i = 0; i < 4; ++i) block.msg(3, good_var("v" + std::to_string(i)));
  for (int i = 0; i < 4; ++i) {
    block.msg(4, good_op()
                     .msg(4, Pb().str(1, "scale").varint(2, 1).f32(4, 0.5f))
                     .msg(4, Pb().str(1, "names").varint(2, 5).str(8, "a").str(8, "b"))
                     .msg(4, Pb().str(1, "dims").varint(2, 11).packed(15, {1, 2, 3})));
  }
  return Pb().msg(1, block).msg(1, Pb().varint(1, 1).varint(2, 0)).msg(4, Pb().varint(1, 3)).bytes();
}

TEST(ProtoIoErrors, EveryTruncatedPrefixIsAnErrorOrAShorterProgram) {
  const std::string bytes = sample_program();
  ASSERT_NO_THROW(parse_program_proto(bytes, "full.pb"));
  int errors = 0;
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    try {
      Program p = parse_program_proto(std::string_view(bytes).substr(0, n), "cut.pb");
      EXPECT_LE(p.blocks.size(), 2u);
    } catch (const Error& e) {
      ++errors;
      EXPECT_THAT(e.what(), HasSubstr("cut.pb")) << n;
    }
  }
  EXPECT_GT(errors, static_cast<int>(bytes.size()) * 9 / 10);
  EXPECT_THAT(error_of(bytes.substr(0, bytes.size() / 2)), HasSubstr("bad.pb: block 0: truncated: length "));
}

TEST(ProtoIoErrors, RandomMutationsNeverCrash) {
  const std::string bytes = sample_program();
  std::mt19937 rng(20240501);
  int parsed = 0, rejected = 0;
  for (int round = 0; round < 20000; ++round) {
    std::string mutated = bytes;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      std::size_t at = rng() % mutated.size();
      switch (rng() % 3) {
        case 0: mutated[at] = static_cast<char>(rng()); break;
        case 1: mutated.erase(at, 1 + rng() % 8); break;
        default: mutated.insert(at, 1, static_cast<char>(rng()));
      }
      if (mutated.empty()) mutated = "\x0a";
    }
    try {
      Program p = parse_program_proto(mutated, "mutant.pb");
      // Whatever parsed must write and read back to the same program (bytes:
      // a mutated float may be a NaN, which == does not equate).
      const std::string written = serialize_program_proto(p);
      EXPECT_EQ(serialize_program_proto(parse_program_proto(written, "rewritten.pb")), written);
      ++parsed;
    } catch (const Error&) {
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 0);
  EXPECT_GT(parsed, 0);
}

}  // namespace
}  // namespace ctp
