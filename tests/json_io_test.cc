// ctp's JSON form: the schema from the issue, float and byte encodings, and
// errors that name the JSON path (or line and column for syntax errors).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>

#include "program_ir/atomic_file.h"
#include "program_ir/json_io.h"
#include "program_ir/proto_io.h"

namespace ctp {
namespace {

using ::testing::HasSubstr;

// Verbatim from issue 2.
constexpr const char* kIssueExample =
    R"({"version": 0, "blocks": [{"idx": 0, "parent_idx": -1, "vars": [{"name": "fc_0.w_0", "type": "LOD_TENSOR", "dtype": "FP32", "shape": [784, 10], "persistable": true, "is_parameter": true, "stop_gradient": false, "is_distributed": false}], "ops": [{"type": "mul", "inputs": {"X": ["x"], "Y": ["fc_0.w_0"]}, "outputs": {"Out": ["fc_0.tmp_0"]}, "attrs": {"op_role": {"type": "INT", "value": 0}, "op_role_var": {"type": "STRINGS", "value": []}}}]}]})";

std::string error_of(const std::string& text) {
  try {
    parse_program_json(text, "prog.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// A program of one op whose attrs are `attrs` (a JSON object's text).
std::string with_attrs(const std::string& attrs) {
  return R"({"blocks": [{"idx": 0, "parent_idx": -1, "ops": [{"type": "a"}, {"type": "b"},
    {"type": "c"}, {"type": "scale", "attrs": )" +
         attrs + "}]}]}";
}

TEST(JsonIoSchema, TheIssueExampleParses) {
  Program p = parse_program_json(kIssueExample, "example.json");
  EXPECT_EQ(p.version, 0);
  ASSERT_EQ(p.blocks.size(), 1u);
  const Block& b = p.blocks[0];
  EXPECT_EQ(b.idx, 0);
  EXPECT_EQ(b.parent_idx, -1);
  Var w;
  w.name = "fc_0.w_0";
  w.shape = {784, 10};
  w.persistable = w.is_parameter = true;
  // A key that is there is a field that is set, false included (proto2).
  w.explicit_defaults.stop_gradient = true;
  ASSERT_EQ(b.var_count(), 1u);
  EXPECT_EQ(b.vars().front(), w);
  ASSERT_EQ(b.op_count(), 1u);
  const Op& mul = b.ops().front();
  EXPECT_EQ(mul, Op("mul", {{"X", {"x"}}, {"Y", {"fc_0.w_0"}}}, {{"Out", {"fc_0.tmp_0"}}},
                    {{"op_role", int32_t{0}}, {"op_role_var", std::vector<std::string>{}}}));
}

TEST(JsonIoSchema, JsonToProtoToJsonIsIdentical) {
  Program p = parse_program_json(kIssueExample, "example.json");
  const std::string json = program_to_json(p);
  const std::string proto = serialize_program_proto(p);
  EXPECT_EQ(program_to_json(parse_program_proto(proto, "example.pb")), json);
  EXPECT_EQ(program_to_json(parse_program_json(json, "dumped.json")), json);
  // The dump is the documented layout: one var or op per line.
  EXPECT_THAT(json, HasSubstr("\n        {\"name\": \"fc_0.w_0\", \"type\": \"LOD_TENSOR\", "
                              "\"dtype\": \"FP32\", \"shape\": [784, 10], \"persistable\": true, "
                              "\"is_parameter\": true, \"stop_gradient\": false}\n"));
  EXPECT_THAT(json, HasSubstr("\"attrs\": {\"op_role\": {\"type\": \"INT\", \"value\": 0}, "
                              "\"op_role_var\": {\"type\": \"STRINGS\", \"value\": []}}}"));
}

TEST(JsonIoSchema, TheDocumentedExampleIsTheWritersLayout) {
  const std::string doc = read_file(std::string(CTP_SOURCE_DIR) + "/docs/json-format.md");
  const auto begin = doc.find("```json\n");
  ASSERT_NE(begin, std::string::npos);
  const auto end = doc.find("```", begin + 8);
  const std::string example = doc.substr(begin + 8, end - begin - 8);
  Program p = parse_program_json(example, "json-format.md");
  EXPECT_EQ(program_to_json(p), example);
  EXPECT_EQ(p.blocks[0].ops().back().attr("bias")->get<float>(),
            -std::numeric_limits<float>::infinity());
}

TEST(JsonIoSchema, VarFieldsDefaultAsInProtobuf) {
  Program p = parse_program_json(
      R"({"blocks": [{"idx": 0, "parent_idx": -1, "vars": [{"name": "v"}, {"name": "id", "type": "RAW"}]}]})",
      "d.json");
  const Var& v = p.blocks[0].var("v");
  EXPECT_EQ(v, Var{.name = "v"});
  EXPECT_EQ(v.type, VarKind::LOD_TENSOR);
  EXPECT_EQ(v.dtype, DataType::FP32);
  EXPECT_TRUE(v.shape.empty());
  EXPECT_EQ(p.blocks[0].var("id").type, VarKind::RAW);
  EXPECT_FALSE(p.version.has_value());
}

TEST(JsonIoSchema, SlotAndAttributeOrderIsKept) {
  Program p = parse_program_json(
      with_attrs(R"({"z": {"type": "INT", "value": 1}, "a": {"type": "INT", "value": 2},
                    "m": {"value": 3, "type": "LONG"}})"),
      "o.json");
  const Op& op = p.blocks[0].ops().back();
  ASSERT_EQ(op.attrs().size(), 3u);
  EXPECT_EQ(op.attrs()[0].name, "z");
  EXPECT_EQ(op.attrs()[1].name, "a");
  EXPECT_EQ(op.attrs()[2].name, "m");
  EXPECT_EQ(op.attrs()[2].value, Attribute(int64_t{3}));
  Program q = parse_program_json(
      R"({"blocks": [{"ops": [{"outputs": {"Z": [], "A": ["a", "b"]}, "type": "t"}], "parent_idx": -1, "idx": 0}]})",
      "o.json");
  EXPECT_EQ(q.blocks[0].ops().front().outputs(),
            (std::vector<Slot>{{"Z", {}}, {"A", {"a", "b"}}}));
}

TEST(JsonIoSchema, EveryAttrTypeReadsItsValue) {
  Program p = parse_program_json(with_attrs(R"({
      "i": {"type": "INT", "value": -2147483648}, "f": {"type": "FLOAT", "value": 1},
      "s": {"type": "STRING", "value": "\u00e9\n"}, "is": {"type": "INTS", "value": [1, -1]},
      "fs": {"type": "FLOATS", "value": [0.5, "NaN", "-Infinity"]},
      "ss": {"type": "STRINGS", "value": ["a"]}, "b": {"type": "BOOLEAN", "value": true},
      "bs": {"type": "BOOLEANS", "value": [false, true]}, "blk": {"type": "BLOCK", "value": 1},
      "l": {"type": "LONG", "value": 9223372036854775807}, "blks": {"type": "BLOCKS", "value": [1, 2]},
      "ls": {"type": "LONGS", "value": [-9223372036854775808]},
      "ds": {"type": "FLOAT64S", "value": [1e-320, "Infinity"]}, "v": {"type": "VAR", "value": "x"},
      "vs": {"type": "VARS", "value": ["x", "y"]}, "d": {"type": "FLOAT64", "value": -0.0},
      "sc": {"type": "SCALAR", "value": "CAMhAAAAAAAA4D8="},
      "scs": {"type": "SCALARS", "value": [{"type": "LONG", "i": -1}, "CAEQAVgB",
                                           {"type": "COMPLEX128", "c": {"r": 1.0, "i": "NaN"}}]}})"),
                                 "all.json");
  const Op& op = p.blocks[0].ops().back();
  EXPECT_EQ(op.attr("i")->get<int32_t>(), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(op.attr("f")->get<float>(), 1.0f);
  EXPECT_EQ(op.attr("s")->get<std::string>(), "\xc3\xa9\n");
  EXPECT_EQ(op.attr("is")->type(), AttrType::INTS);
  const auto& fs = op.attr("fs")->get<std::vector<float>>();
  EXPECT_EQ(std::bit_cast<uint32_t>(fs[1]), 0x7fc00000u);
  EXPECT_EQ(fs[2], -std::numeric_limits<float>::infinity());
  EXPECT_EQ(op.attr("bs")->get<std::vector<bool>>(), (std::vector<bool>{false, true}));
  EXPECT_EQ(op.attr("blk")->type(), AttrType::BLOCK);
  EXPECT_EQ(op.attr("l")->get<int64_t>(), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(op.attr("blks")->type(), AttrType::BLOCKS);
  EXPECT_EQ(op.attr("ls")->get<std::vector<int64_t>>()[0], std::numeric_limits<int64_t>::min());
  EXPECT_EQ(op.attr("ds")->get<std::vector<double>>()[0], 1e-320);
  EXPECT_EQ(op.attr("vs")->type(), AttrType::VARS);
  EXPECT_TRUE(std::signbit(op.attr("d")->get<double>()));
  EXPECT_EQ(op.attr("sc")->get<std::string>(), std::string("\x08\x03\x21\0\0\0\0\0\0\xe0\x3f", 11));
  // Objects encode as protobuf would; base64 keeps any other bytes (here an
  // unknown field 11 after `b`).
  EXPECT_EQ(op.attr("scs")->get<std::vector<std::string>>(),
            (std::vector<std::string>{
                std::string("\x08\x02\x18\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"),
                std::string("\x08\x01\x10\x01\x58\x01"),
                std::string("\x08\x04\x2a\x12\x09\0\0\0\0\0\0\xf0\x3f\x11\0\0\0\0\0\0\xf8\x7f",
                            22)}));
}

// --- floats ---

std::string float_text(float f) {
  Op op("t");
  op.set_attr("f", f);
  Program p = Program::with_global_block();
  p.blocks[0].append_op(op);
  std::string json = program_to_json(p);
  auto at = json.find("\"value\": ") + 9;
  return json.substr(at, json.find('}', at) - at);
}

float float_back(const std::string& text) {
  Program p = parse_program_json(with_attrs(R"({"f": {"type": "FLOAT", "value": )" + text + "}}"),
                                 "f.json");
  return p.blocks[0].ops().back().attr("f")->get<float>();
}

TEST(JsonIoFloats, ShortestFormsAndSpecialValues) {
  EXPECT_EQ(float_text(0.1f), "0.1");
  EXPECT_EQ(float_text(1.0f), "1.0");
  EXPECT_EQ(float_text(-0.0f), "-0.0");
  EXPECT_EQ(float_text(3e38f), "3e+38");
  EXPECT_EQ(float_text(std::numeric_limits<float>::denorm_min()), "1e-45");
  EXPECT_EQ(float_text(std::numeric_limits<float>::infinity()), "\"Infinity\"");
  EXPECT_EQ(float_text(-std::numeric_limits<float>::infinity()), "\"-Infinity\"");
  EXPECT_EQ(float_text(std::bit_cast<float>(0x7fc00000u)), "\"NaN\"");
  EXPECT_EQ(float_text(std::bit_cast<float>(0xffc00001u)), "\"NaN(0xffc00001)\"");
  EXPECT_EQ(std::bit_cast<uint32_t>(float_back("\"NaN(0x7f800001)\"")), 0x7f800001u);
  EXPECT_TRUE(std::signbit(float_back("-0.0")));
  EXPECT_EQ(float_back("3.4028235e38"), std::numeric_limits<float>::max());
  EXPECT_THAT(error_of(with_attrs(R"({"f": {"type": "FLOAT", "value": 1e39}})")),
              HasSubstr("blocks[0].ops[3].attrs.f: value is out of range for FLOAT"));
  EXPECT_EQ(error_of(R"({"blocks": [], "x": -1e999})"),
            "prog.json: line 1, column 26: number overflow parsing '-1e999'");
  EXPECT_THAT(error_of(with_attrs(R"({"f": {"type": "FLOAT", "value": "NaN(0x7fc00000"}})")),
              HasSubstr("attrs.f: expected a number, \"NaN\", \"Infinity\" or \"-Infinity\" for FLOAT"));
  // A NaN spelling must denote a NaN of the attribute's width.
  EXPECT_THAT(error_of(with_attrs(R"j({"f": {"type": "FLOAT", "value": "NaN(0x3f800000)"}})j")),
              HasSubstr("attrs.f: expected a number"));
}

TEST(JsonIoFloats, RandomBitPatternsReadBackBitIdentical) {
  std::mt19937_64 rng(7);
  Op op("t");
  std::vector<float> floats;
  std::vector<double> doubles;
  for (int i = 0; i < 200000; ++i) {
    floats.push_back(std::bit_cast<float>(static_cast<uint32_t>(rng())));
    doubles.push_back(std::bit_cast<double>(rng()));
  }
  // Values near float rounding boundaries, where double rounding bites.
  for (uint32_t bits = 0x3f800000u; bits < 0x3f800000u + 20000; ++bits)
    floats.push_back(std::bit_cast<float>(bits));
  op.set_attr("fs", floats);
  op.set_attr("ds", doubles);
  Program p = Program::with_global_block();
  p.blocks[0].append_op(op);
  Program back = parse_program_json(program_to_json(p), "bits.json");
  const Op& read = back.blocks[0].ops().front();
  const auto& fs = read.attr("fs")->get<std::vector<float>>();
  const auto& ds = read.attr("ds")->get<std::vector<double>>();
  ASSERT_EQ(fs.size(), floats.size());
  ASSERT_EQ(ds.size(), doubles.size());
  std::size_t float_mismatches = 0, double_mismatches = 0;
  for (std::size_t i = 0; i < fs.size(); ++i)
    float_mismatches += std::bit_cast<uint32_t>(fs[i]) != std::bit_cast<uint32_t>(floats[i]);
  for (std::size_t i = 0; i < ds.size(); ++i)
    double_mismatches += std::bit_cast<uint64_t>(ds[i]) != std::bit_cast<uint64_t>(doubles[i]);
  EXPECT_EQ(float_mismatches, 0u);
  EXPECT_EQ(double_mismatches, 0u);
}

// --- errors ---

TEST(JsonIoErrors, ValueErrorsNameTheJsonPath) {
  EXPECT_EQ(error_of(with_attrs(R"({"scale": {"type": "FLOAT", "value": "big"}})")),
            "prog.json: blocks[0].ops[3].attrs.scale: expected a number, \"NaN\", \"Infinity\" or "
            "\"-Infinity\" for FLOAT, got the string \"big\"");
  EXPECT_EQ(error_of(with_attrs(R"({"scale": {"type": "FLOAT", "value": [1]}})")),
            "prog.json: blocks[0].ops[3].attrs.scale: expected a number for FLOAT, got an array");
  EXPECT_EQ(error_of(with_attrs(R"({"axis": {"type": "INT", "value": 2147483648}})")),
            "prog.json: blocks[0].ops[3].attrs.axis: value 2147483648 is out of range for INT");
  EXPECT_EQ(error_of(with_attrs(R"({"dims": {"type": "INTS", "value": [1, 2.5]}})")),
            "prog.json: blocks[0].ops[3].attrs.dims.value[1]: expected an integer for INTS, got a "
            "number with a fraction");
  EXPECT_EQ(error_of(with_attrs(R"({"x": {"type": "INTEGER", "value": 1}})")),
            "prog.json: blocks[0].ops[3].attrs.x.type: unknown attribute type 'INTEGER'");
  EXPECT_EQ(error_of(with_attrs(R"({"x": {"type": "INT"}})")),
            "prog.json: blocks[0].ops[3].attrs.x: attribute has no \"value\"");
  EXPECT_EQ(error_of(with_attrs(R"({"x": {"type": "SCALAR", "value": "abc"}})")),
            "prog.json: blocks[0].ops[3].attrs.x: not valid base64 for SCALAR");
  EXPECT_EQ(error_of(with_attrs(R"({"a.b": {"type": "BOOLEAN", "value": 1}})")),
            "prog.json: blocks[0].ops[3].attrs[\"a.b\"]: expected true or false for BOOLEAN, got a number");
  EXPECT_EQ(error_of(R"({"blocks": [{"idx": 0, "parent_idx": -1, "vars": [{"name": "v", "type": "TENSOR"}]}]})"),
            "prog.json: blocks[0].vars[0].type: unknown var type 'TENSOR'");
  EXPECT_EQ(error_of(R"({"blocks": [{"idx": 0, "parent_idx": -1, "vars": [{"shape": [1]}]}]})"),
            "prog.json: blocks[0].vars[0]: var has no \"name\"");
  EXPECT_EQ(error_of(R"({"blocks": [{"idx": 0, "parent_idx": -1, "vars": [{"name": "v"}, {"name": "v"}]}]})"),
            "prog.json: blocks[0].vars[1]: var 'v' is declared twice in the block");
  EXPECT_EQ(error_of(R"({"blocks": [{"idx": 0, "parent_idx": -1, "vars": [{"name": "id", "type": "RAW", "shape": [2]}]}]})"),
            "prog.json: blocks[0].vars[0]: var 'id' of type RAW has no tensor description: dtype, "
            "shape and lod_level do not apply");
  EXPECT_EQ(error_of(R"({"blocks": [{"idx": 0, "parent_idx": -1, "ops": [{"type": "t", "input": {}}]}]})"),
            "prog.json: blocks[0].ops[0]: unknown key 'input' in an op");
  EXPECT_EQ(error_of(R"({"blocks": [{"idx": 0, "ops": []}]})"),
            "prog.json: blocks[0]: block has no \"parent_idx\"");
  EXPECT_EQ(error_of(R"({"blocks": [{"idx": 0, "parent_idx": -1}, 7]})"),
            "prog.json: blocks[1]: expected an object, got a number");
  EXPECT_EQ(error_of(R"({"blocks": {}})"), "prog.json: blocks: expected an array, got an object");
  EXPECT_EQ(error_of(R"({"version": 0})"), "prog.json: program has no \"blocks\"");
  EXPECT_EQ(error_of("[]"), "prog.json: expected a JSON object at the top level");
  EXPECT_EQ(error_of(R"({"blocks": [], "unknown_fields": "%%%%"})"),
            "prog.json: unknown_fields: not valid base64");
}

TEST(JsonIoErrors, OpErrorsNameTheJsonPath) {
  auto op_error = [](const std::string& op) {
    return error_of(R"({"blocks": [{"idx": 0, "parent_idx": -1, "ops": [{"type": "a"}, )" + op +
                    "]}]}");
  };
  EXPECT_EQ(op_error(R"({"inputs": {}})"), "prog.json: blocks[0].ops[1]: op has no \"type\"");
  EXPECT_EQ(op_error(R"({"type": 3})"),
            "prog.json: blocks[0].ops[1].type: expected a string, got a number");
  EXPECT_EQ(op_error(R"({"type": "t", "inputs": []})"),
            "prog.json: blocks[0].ops[1].inputs: expected an object, got an array");
  EXPECT_EQ(op_error(R"({"type": "t", "outputs": {"Out": "y"}})"),
            "prog.json: blocks[0].ops[1].outputs.Out: expected an array of var names, got a string");
  EXPECT_EQ(op_error(R"({"type": "t", "outputs": {"Out": ["y", null]}})"),
            "prog.json: blocks[0].ops[1].outputs.Out[1]: expected a string (a var name), got null");
  EXPECT_EQ(op_error(R"({"type": "t", "outputs": {"Out": ["y", ["z"]]}})"),
            "prog.json: blocks[0].ops[1].outputs.Out[1]: expected a string (a var name), got an array");
  EXPECT_EQ(op_error(R"({"type": "t", "attrs": {"a": 1}})"),
            "prog.json: blocks[0].ops[1].attrs.a: expected an object, got a number");
  EXPECT_EQ(op_error(R"({"type": "t", "attrs": {"a": {"type": "INT", "value": 1, "doc": ""}}})"),
            "prog.json: blocks[0].ops[1].attrs.a: unknown key 'doc' (an attribute has \"type\" and "
            "\"value\")");
  EXPECT_EQ(op_error(R"({"type": "t", "attrs": {"a": {"type": "INT", "type": "INT"}}})"),
            "prog.json: blocks[0].ops[1].attrs.a.type: duplicate key");
  EXPECT_EQ(op_error(R"({"type": "t", "attrs": {"a": {"type": ["INT"], "value": 1}}})"),
            "prog.json: blocks[0].ops[1].attrs.a.type: expected a string, got an array");
  EXPECT_EQ(op_error(R"({"type": "t", "attrs": {"a": {"value": 1}}})"),
            "prog.json: blocks[0].ops[1].attrs.a: attribute has no \"type\"");
  EXPECT_EQ(op_error(R"({"type": "t", "attrs": {"a": {"type": "INT", "value": 1},
                                                "a": {"type": "INT", "value": 1}}})"),
            "prog.json: blocks[0].ops[1].attrs.a: duplicate key");
  EXPECT_EQ(op_error(R"({"type": "t", "is_target": "yes"})"),
            "prog.json: blocks[0].ops[1].is_target: expected true or false, got a string");
  EXPECT_EQ(op_error(R"({"type": "t", "unknown_fields": "A"})"),
            "prog.json: blocks[0].ops[1].unknown_fields: not valid base64");
  EXPECT_EQ(op_error(R"({"type": "t", "type": "u"})"), "prog.json: blocks[0].ops[1].type: duplicate key");
  EXPECT_EQ(op_error(R"({"type": "t", "attrs": {"a": {"type": "INTS", "value": [1, {"x": 1}]}}})"),
            "prog.json: blocks[0].ops[1].attrs.a.value[1]: expected an integer for INTS, got an object");
  std::string many = R"({"type": "t", "attrs": {)";
  for (int i = 0; i < 100; ++i) many += "\"a" + std::to_string(i) + R"(": {"type": "INT", "value": 1}, )";
  EXPECT_EQ(op_error(many + R"("a7": {"type": "INT", "value": 2}}})"),
            "prog.json: blocks[0].ops[1].attrs.a7: duplicate key");
}

TEST(JsonIoErrors, DuplicateKeysAreRefused) {
  EXPECT_EQ(error_of(R"({"blocks": [{"idx": 0, "parent_idx": -1, "ops": [{"type": "t",
              "inputs": {"X": ["a"], "X": ["b"]}}]}]})"),
            "prog.json: blocks[0].ops[0].inputs.X: duplicate key");
  std::string many = "{";
  for (int i = 0; i < 1000; ++i) many += "\"k" + std::to_string(i) + "\": 1, ";
  many += "\"k999\": 2}";
  EXPECT_EQ(error_of(R"({"blocks": [], "x": )" + many + "}"), "prog.json: x.k999: duplicate key");
}

TEST(JsonIoErrors, SyntaxErrorsGiveLineAndColumn) {
  EXPECT_THAT(error_of("{\n  \"blocks\": [\n    {\"idx\": 0,, }\n  ]\n}"),
              HasSubstr("prog.json: line 3, column 15: syntax error while parsing object key"));
  EXPECT_THAT(error_of(""), HasSubstr("prog.json: line 1, column 1: syntax error"));
  EXPECT_THAT(error_of("{\"blocks\": []} x"), HasSubstr("prog.json: line 1, column 16:"));
  EXPECT_THAT(error_of("{\"blocks\": [], \"v\": \"\xff\"}"), HasSubstr("prog.json: line 1, column 22:"));
}

TEST(JsonIoErrors, NestingIsLimited) {
  std::string deep = R"({"blocks": [], "x": )";
  for (int i = 0; i < 100000; ++i) deep += "[";
  EXPECT_EQ(error_of(deep),
            "prog.json: x" + [] {
              std::string p;
              for (std::size_t i = 0; i + 2 < kMaxJsonDepth; ++i) p += "[0]";
              return p;
            }() + ": nested deeper than 64 levels");
}

TEST(JsonIoErrors, EveryTruncatedPrefixIsAnError) {
  Program p = parse_program_json(kIssueExample, "example.json");
  const std::string json = program_to_json(p);
  ASSERT_EQ(json.back(), '\n');
  for (std::size_t n = 0; n + 2 < json.size(); ++n) {  // up to the closing brace
    try {
      parse_program_json(std::string_view(json).substr(0, n), "cut.json");
      ADD_FAILURE() << "prefix of " << n << " bytes parsed";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr("cut.json: line ")) << n;
    }
  }
}

TEST(JsonIoErrors, WhatJsonCannotHoldIsRefusedOnWriting) {
  Program p = Program::with_global_block();
  Op op("t");
  op.mutable_attrs().push_back({"a", int32_t{1}});
  op.mutable_attrs().push_back({"a", int32_t{2}});
  p.blocks[0].append_op(op);
  try {
    program_to_json(p);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "block 0, op 0 't', attr 'a': a second attribute of this name, which a "
                           "JSON object cannot hold");
  }
  Program q = Program::with_global_block();
  q.blocks[0].add_var(Var{.name = "bad\xff"});
  EXPECT_THROW(program_to_json(q), Error);
}

}  // namespace
}  // namespace ctp
