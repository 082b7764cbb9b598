// Regression tests for what the fuzzers (fuzz/, docs/reliability.md) found:
// each case is the found input, minimized, and the behaviour now expected.
#include <gtest/gtest.h>

#include "program_ir/json_io.h"
#include "program_ir/program_io.h"
#include "program_ir/proto_io.h"
#include "tests/pb_test_encoder.h"

namespace ctp {
namespace {

std::string json_error(const std::string& text) {
  try {
    parse_program_json(text, "p.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

std::string program_with_var(const std::string& var_fields) {
  return R"({"blocks": [{"idx": 0, "parent_idx": -1, "vars": [{"name": "x", "type": "LOD_TENSOR")" +
         var_fields + "}]}]}";
}

// fuzz_json_loader: unknown_fields holding VarDesc's field 5 (is_parameter)
// as a string loaded, and the protobuf written from it did not load back.
TEST(RegressionFuzz, JsonUnknownFieldsCannotReuseTheMessagesOwnFields) {
  EXPECT_EQ(json_error(program_with_var(R"(, "unknown_fields": "KgA=")")),
            "p.json: blocks[0].vars[0].unknown_fields: holds field 5, which is VarDesc's own, not "
            "an unknown one");
  // The type's own fields: its kind (1) and the tensor description of that kind (3 here).
  EXPECT_EQ(json_error(program_with_var(R"(, "type_unknown_fields": "GgA=")")),
            "p.json: blocks[0].vars[0].type_unknown_fields: holds field 3, which is VarType's own, "
            "not an unknown one");
  EXPECT_EQ(json_error(R"({"blocks": [{"idx": 0, "parent_idx": -1, "unknown_fields": "IgA="}]})"),
            "p.json: blocks[0].unknown_fields: holds field 4, which is BlockDesc's own, not an "
            "unknown one");
  EXPECT_EQ(json_error(R"({"blocks": [], "unknown_fields": "GAA="})"),
            "p.json: unknown_fields: holds field 3, which is ProgramDesc's own, not an unknown one");
  EXPECT_EQ(json_error(R"({"blocks": [{"idx": 0, "parent_idx": -1, "ops": [{"type": "relu", )"
                       R"("unknown_fields": "CgA="}]}]})"),
            "p.json: blocks[0].ops[0].unknown_fields: holds field 1, which is OpDesc's own, not an "
            "unknown one");
  // Bytes that are not fields at all: field 31, then a truncated varint.
  EXPECT_EQ(json_error(program_with_var(R"(, "unknown_fields": "+AE=")")),
            "p.json: blocks[0].vars[0].unknown_fields: is not a sequence of protobuf fields: "
            "truncated varint (at byte 2)");
}

TEST(RegressionFuzz, JsonUnknownFieldsThatAreUnknownRoundTrip) {
  // Field 50 (varint 1) on the var; field 2 (a SELECTED_ROWS description)
  // on a LOD_TENSOR var's type, which proto_io keeps as unknown.
  const std::string text = program_with_var(
      R"(, "dtype": "FP32", "shape": [2], "unknown_fields": "kAMB", "type_unknown_fields": "EgIIBQ==")");
  const Program p = parse_program_json(text, "p.json");
  const std::string proto = serialize_program_proto(p);
  const Program back = parse_program_proto(proto, "p.pb");
  EXPECT_EQ(back, p);
  EXPECT_EQ(serialize_program_proto(back), proto);
}

// fuzz_proto_vs_libprotobuf: a VarType with two `type` fields, the first
// no VarType.Type at all, loaded as the second (the last wins) and lost the
// first, which libprotobuf keeps as an unknown field (proto2's closed enums).
// Every occurrence is checked now.
TEST(RegressionFuzz, ProtoEveryVarTypeTypeIsCheckedNotOnlyTheLast) {
  using testing_pb::Pb;
  const Pb tensor = Pb().varint(1, 7).msg(3, Pb().msg(1, Pb().varint(1, 5)));
  auto program = [&](const Pb& type) {
    const Pb var = Pb().str(1, "x").msg(2, type);
    return Pb().msg(1, Pb().varint(1, 0).int32(2, -1).msg(3, var)).bytes();
  };
  EXPECT_NO_THROW(parse_program_proto(program(tensor), "p.pb"));
  try {
    parse_program_proto(program(Pb().varint(1, 1000).raw(tensor.bytes())), "p.pb");
    ADD_FAILURE() << "an invalid first VarType.Type loaded";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "p.pb: block 0, var 'x': invalid VarType.Type 1000");
  }
}

// fuzz_proto_vs_libprotobuf: a LOD_TENSOR var's type holding a sparse_coo
// description (field 11) without its required data_type loaded, as unknown
// bytes; libprotobuf refuses the file. Such descriptions are checked now, and
// well-formed ones still stay as they were.
TEST(RegressionFuzz, ProtoAnotherKindsDescriptionMustBeWellFormed) {
  using testing_pb::Pb;
  auto program = [&](const Pb& foreign) {
    const Pb type = Pb().varint(1, 7).msg(3, Pb().msg(1, Pb().varint(1, 5))).msg(11, foreign);
    const Pb var = Pb().str(1, "x").msg(2, type);
    return Pb().msg(1, Pb().varint(1, 0).int32(2, -1).msg(3, var)).bytes();
  };
  const std::string good = program(Pb().varint(1, 5).varint(2, 3));
  EXPECT_EQ(serialize_program_proto(parse_program_proto(good, "p.pb")), good);
  try {
    parse_program_proto(program(Pb().varint(2, 3)), "p.pb");
    ADD_FAILURE() << "a TensorDesc without data_type loaded";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "p.pb: block 0, var 'x': TensorDesc has no data_type (field 1)");
  }
}

}  // namespace
}  // namespace ctp
