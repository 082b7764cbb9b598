// Wire compatibility of the protobuf loader and writer: a fixture assembled
// field by field from the table in ../shared/reference/PROGRAM_FORMAT.md
// (beside the project, not part of it), ctp's output as protoc
// decodes it, and unknown fields on a round trip.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "program_ir/atomic_file.h"
#include "program_ir/json_io.h"
#include "program_ir/program_io.h"
#include "program_ir/proto_io.h"
#include "tests/pb_test_encoder.h"

namespace ctp {
namespace {

using testing_pb::Pb;

// --- the fixture, field numbers from the table ---

Pb tensor_desc(int32_t dtype, std::initializer_list<int64_t> dims) {
  Pb t;
  t.int32(1, dtype);                      // TensorDesc.data_type
  for (int64_t d : dims) t.int64(2, d);   // TensorDesc.dims
  return t;
}

Pb lod_desc(const Pb& tensor, int32_t lod_level) {
  Pb l;
  l.msg(1, tensor);                     // LoDTensorDesc.tensor
  if (lod_level) l.int32(2, lod_level);  // LoDTensorDesc.lod_level
  return l;
}

// The same with lod_level written even when it is 0, as Paddle writes it.
Pb lod_desc_explicit(const Pb& tensor, int32_t lod_level) {
  Pb l;
  l.msg(1, tensor).int32(2, lod_level);
  return l;
}

Pb var_type(int32_t kind, uint32_t desc_field = 0, const Pb& desc = Pb()) {
  Pb t;
  t.int32(1, kind);  // VarType.type
  if (desc_field) t.msg(desc_field, desc);
  return t;
}

Pb var_attr(std::string_view name, int32_t type) {
  Pb a;
  a.str(1, name).int32(2, type);  // VarDesc.Attr name, type
  return a;
}

Pb slot(std::string_view parameter, std::initializer_list<std::string_view> args) {
  Pb s;
  s.str(1, parameter);  // OpDesc.Var.parameter
  for (auto a : args) s.str(2, a);  // OpDesc.Var.arguments
  return s;
}

Pb attr(std::string_view name, int32_t type) {
  Pb a;
  a.str(1, name).int32(2, type);  // OpDesc.Attr name, type
  return a;
}

Pb scalar_message(double r) {
  Pb s;
  s.int32(1, 3).f64(4, r);  // Paddle's Scalar: type FLOAT64, r
  return s;
}

Pb compatible_map() {
  Pb info;
  info.str(1, "1.6.0").int32(2, 2);  // CompatibleInfo: version, type POSSIBLE
  Pb map;
  map.msg(1, Pb().str(1, "conv2d").msg(2, info));  // OpCompatiblePair
  map.str(2, "1.5.0");                             // default_required_version
  return map;
}

// Every AttrType, every var kind family and its description (or none),
// both blocks, version information, defaults written and not; in canonical
// order (field numbers ascending, repeated fields unpacked), which is also
// how protobuf libraries and ctp write.
std::string canonical_fixture() {
  Pb block0;
  block0.int32(1, 0).int32(2, -1);  // idx, parent_idx
  // vars (BlockDesc field 3)
  block0.msg(3, Pb()
                    .str(1, "x")
                    .msg(2, var_type(7, 3, lod_desc(tensor_desc(5, {-1, 784}), 1)))
                    .varint(3, 0)    // persistable: false, written as Paddle does
                    .varint(4, 1)    // need_check_feed
                    .varint(6, 1));  // stop_gradient
  block0.msg(3, Pb()
                    .str(1, "fc_0.w_0")
                    .msg(2, var_type(7, 3, lod_desc(tensor_desc(5, {784, 10}), 0)))
                    .varint(3, 1)  // persistable
                    .varint(5, 1)  // is_parameter
                    .msg(7, var_attr("note", 2).str(4, "hi"))
                    .msg(7, var_attr("axes", 3).int32(5, 0).int32(5, -1))
                    .msg(7, var_attr("is_distributed", 6).int32(3, 1)));
  block0.msg(3, Pb().str(1, "emb@rows").msg(2, var_type(8, 2, tensor_desc(3, {100, 8}))));
  block0.msg(3, Pb().str(1, "arr").msg(2, var_type(13, 4, lod_desc(tensor_desc(4, {4}), 2))));
  block0.msg(3, Pb().str(1, "nccl_id_0").msg(2, var_type(17)).varint(3, 1));
  block0.msg(3, Pb().str(1, "feed").msg(2, var_type(9)).varint(3, 1));
  block0.msg(3, Pb().str(1, "out").msg(2, var_type(7, 3, lod_desc_explicit(tensor_desc(6, {}), 0))));
  // Tensor kinds saved without a description.
  block0.msg(3, Pb().str(1, "ctl").msg(2, var_type(7)).varint(3, 0));
  block0.msg(3, Pb().str(1, "fetch").msg(2, var_type(13)));
  // VarType.reader, VarType.tuple, the newer kinds, an FP8 dtype.
  block0.msg(3, Pb().str(1, "py_reader").msg(2, var_type(15, 5, Pb()
      .msg(1, lod_desc_explicit(tensor_desc(5, {-1, 3}), 0))
      .msg(1, lod_desc(tensor_desc(2, {-1, 1}), 1)))));
  block0.msg(3, Pb().str(1, "tup").msg(2, var_type(18, 7, Pb().int32(1, 5).int32(1, 3))));
  block0.msg(3, Pb().str(1, "words").msg(2, var_type(26, 9, tensor_desc(29, {-1}))));
  block0.msg(3, Pb().str(1, "vocab").msg(2, var_type(27)));
  block0.msg(3, Pb().str(1, "coo").msg(2, var_type(30, 11, tensor_desc(5, {4, 4}))));
  block0.msg(3, Pb().str(1, "csr").msg(2, var_type(31, 12, tensor_desc(6, {2, 2}))));
  block0.msg(3, Pb().str(1, "f8").msg(2, var_type(7, 3, lod_desc(tensor_desc(32, {8}), 0))));

  Pb sink;
  sink.msg(1, slot("X", {"x"})).msg(1, slot("Y", {"fc_0.w_0", "x"}));
  sink.msg(2, slot("Out", {"out"}));
  sink.str(3, "kitchen_sink");
  sink.msg(4, attr("i32", 0).int32(3, -7));
  sink.msg(4, attr("f32", 1).f32(4, 0.1f));
  sink.msg(4, attr("str", 2).str(5, "h\xc3\xa9llo"));
  sink.msg(4, attr("ints", 3).int32(6, 1).int32(6, -2).int32(6, 2147483647));
  sink.msg(4, attr("floats", 4).f32(7, 1.5f).f32(7, -0.0f));
  sink.msg(4, attr("strs", 5).str(8, "a").str(8, ""));
  sink.msg(4, attr("flag", 6).varint(10, 1));
  sink.msg(4, attr("flags", 7).varint(11, 1).varint(11, 0).varint(11, 1));
  sink.msg(4, attr("sub_block", 8).int32(12, 1));
  sink.msg(4, attr("l", 9).int64(13, std::numeric_limits<int64_t>::min()));
  sink.msg(4, attr("blocks", 10).int32(14, 1));
  sink.msg(4, attr("longs", 11).int64(15, std::numeric_limits<int64_t>::max()).int64(15, -1));
  sink.msg(4, attr("f64s", 12).f64(16, 3.25).f64(16, 1e-310));
  sink.msg(4, attr("v", 13).str(17, "x"));
  sink.msg(4, attr("vs", 14).str(18, "x").str(18, "out"));
  sink.msg(4, attr("f64", 15).f64(19, -2.5));
  sink.msg(4, attr("sc", 16).msg(20, scalar_message(0.5)));
  sink.msg(4, attr("scs", 17).msg(21, scalar_message(1.0)).msg(21, scalar_message(2.0)));
  sink.msg(4, attr("op_role", 0).int32(3, 257));
  sink.msg(4, attr("op_role_var", 5).str(8, "fc_0.w_0").str(8, "fc_0.w_0@GRAD"));
  sink.varint(5, 1);  // is_target
  block0.msg(4, sink);
  block0.msg(4, Pb().msg(1, slot("X", {"x"})).str(3, "feed_noattrs").varint(5, 0));
  block0.int32(5, -1);  // forward_block_idx: -1, written although the default

  Pb block1;
  block1.int32(1, 1).int32(2, 0);
  block1.msg(4, Pb()
                    .msg(1, slot("X", {"x"}))
                    .msg(2, slot("Out", {"x"}))
                    .str(3, "scale")
                    .msg(4, attr("scale", 1).f32(4, 2.0f))
                    .msg(4, attr("bias_after_scale", 6).varint(10, 0)));
  block1.int32(5, 0);  // forward_block_idx

  Pb program;
  program.msg(1, block0).msg(1, block1);
  program.msg(3, compatible_map());        // Paddle 1.x's op_compatible_map
  program.msg(4, Pb().int64(1, 2005000));  // version
  program.msg(5, Pb().msg(1, Pb().str(1, "mul").msg(2, Pb().int32(1, 1))));  // op_version_map
  return program.bytes();
}

Var tensor_var(std::string name, DataType dtype, std::vector<int64_t> shape) {
  Var v;
  v.name = std::move(name);
  v.dtype = dtype;
  v.shape = std::move(shape);
  return v;
}

Program expected_program() {
  Program p;
  Block& b0 = p.blocks.emplace_back(0, -1);
  Var x = tensor_var("x", DataType::FP32, {-1, 784});
  x.lod_level = 1;
  x.need_check_feed = true;
  x.stop_gradient = true;
  x.explicit_defaults.persistable = true;
  b0.add_var(x);
  Var w = tensor_var("fc_0.w_0", DataType::FP32, {784, 10});
  w.persistable = w.is_parameter = w.is_distributed = true;
  w.attrs.push_back(VarAttr{.name = "note", .type = AttrType::STRING, .s = "hi"});
  w.attrs.push_back(VarAttr{.name = "axes", .type = AttrType::INTS, .ints = {0, -1}});
  b0.add_var(w);
  Var rows = tensor_var("emb@rows", DataType::INT64, {100, 8});
  rows.type = VarKind::SELECTED_ROWS;
  b0.add_var(rows);
  Var arr = tensor_var("arr", DataType::FP16, {4});
  arr.type = VarKind::LOD_TENSOR_ARRAY;
  arr.lod_level = 2;
  b0.add_var(arr);
  b0.add_var(Var{.name = "nccl_id_0", .type = VarKind::RAW, .persistable = true});
  b0.add_var(Var{.name = "feed", .type = VarKind::FEED_MINIBATCH, .persistable = true});
  Var out = tensor_var("out", DataType::FP64, {});
  out.lod_level = 0;
  b0.add_var(out);
  Var ctl{.name = "ctl", .tensor_desc_absent = true};
  ctl.explicit_defaults.persistable = true;
  b0.add_var(ctl);
  b0.add_var(Var{.name = "fetch", .type = VarKind::LOD_TENSOR_ARRAY, .tensor_desc_absent = true});
  Var reader{.name = "py_reader", .type = VarKind::READER};
  reader.reader = std::vector<ReaderTensorDesc>{{DataType::FP32, {-1, 3}, 0},
                                                {DataType::INT32, {-1, 1}, 1}};
  b0.add_var(reader);
  Var tup{.name = "tup", .type = VarKind::TUPLE};
  tup.tuple = std::vector<VarKind>{VarKind::FP32, VarKind::INT64};
  b0.add_var(tup);
  Var words = tensor_var("words", DataType::PSTRING, {-1});
  words.type = VarKind::STRINGS;
  b0.add_var(words);
  b0.add_var(Var{.name = "vocab", .type = VarKind::VOCAB, .tensor_desc_absent = true});
  Var coo = tensor_var("coo", DataType::FP32, {4, 4});
  coo.type = VarKind::SPARSE_COO;
  b0.add_var(coo);
  Var csr = tensor_var("csr", DataType::FP64, {2, 2});
  csr.type = VarKind::SPARSE_CSR;
  b0.add_var(csr);
  b0.add_var(tensor_var("f8", DataType::FP8_E4M3FN, {8}));

  Op sink("kitchen_sink", {{"X", {"x"}}, {"Y", {"fc_0.w_0", "x"}}}, {{"Out", {"out"}}});
  sink.set_attr("i32", int32_t{-7});
  sink.set_attr("f32", 0.1f);
  sink.set_attr("str", "h\xc3\xa9llo");
  sink.set_attr("ints", std::vector<int32_t>{1, -2, 2147483647});
  sink.set_attr("floats", std::vector<float>{1.5f, -0.0f});
  sink.set_attr("strs", std::vector<std::string>{"a", ""});
  sink.set_attr("flag", true);
  sink.set_attr("flags", std::vector<bool>{true, false, true});
  sink.set_attr("sub_block", Attribute::block(1));
  sink.set_attr("l", std::numeric_limits<int64_t>::min());
  sink.set_attr("blocks", Attribute::blocks({1}));
  sink.set_attr("longs", std::vector<int64_t>{std::numeric_limits<int64_t>::max(), -1});
  sink.set_attr("f64s", std::vector<double>{3.25, 1e-310});
  sink.set_attr("v", Attribute::var("x"));
  sink.set_attr("vs", Attribute::vars({"x", "out"}));
  sink.set_attr("f64", -2.5);
  sink.set_attr("sc", Attribute::scalar(scalar_message(0.5).bytes()));
  sink.set_attr("scs", Attribute::scalars({scalar_message(1.0).bytes(),
                                           scalar_message(2.0).bytes()}));
  sink.set_attr("op_role", int32_t{257});
  sink.set_attr("op_role_var", std::vector<std::string>{"fc_0.w_0", "fc_0.w_0@GRAD"});
  sink.is_target = true;
  b0.append_op(sink);
  Op feed("feed_noattrs", {{"X", {"x"}}}, {});
  feed.is_target_explicit = true;
  b0.append_op(feed);
  b0.forward_block_idx_explicit = true;

  Block& b1 = p.blocks.emplace_back(1, 0);
  b1.forward_block_idx = 0;
  Op scale("scale", {{"X", {"x"}}}, {{"Out", {"x"}}});
  scale.set_attr("scale", 2.0f);
  scale.set_attr("bias_after_scale", false);
  b1.append_op(scale);

  p.version = 2005000;
  p.op_version_map = std::vector<OpVersionEntry>{{"mul", 1}};
  p.op_compatible_map = compatible_map().bytes();
  return p;
}

TEST(ProtoIoFixture, FieldByFieldBytesParseToTheExpectedProgram) {
  const std::string bytes = canonical_fixture();
  Program parsed = parse_program_proto(bytes, "fixture.pb");
  Program expected = expected_program();
  ASSERT_EQ(parsed.blocks.size(), 2u);
  // Piecewise first, so that a failure says where.
  auto ev = expected.blocks[0].vars().begin();
  for (const Var& v : parsed.blocks[0].vars()) EXPECT_EQ(v, *ev++) << v.name;
  auto eo = expected.blocks[0].ops().begin();
  for (const Op& op : parsed.blocks[0].ops()) {
    ASSERT_EQ(op.attrs().size(), eo->attrs().size()) << op.type;
    for (std::size_t i = 0; i < op.attrs().size(); ++i)
      EXPECT_EQ(op.attrs()[i], eo->attrs()[i]) << op.type << " attr " << op.attrs()[i].name;
    EXPECT_EQ(op, *eo++);
  }
  EXPECT_EQ(parsed, expected);
  // -0.0f survives with its sign.
  EXPECT_TRUE(std::signbit(parsed.blocks[0].ops().front().attr("floats")->get<std::vector<float>>()[1]));
}

TEST(ProtoIoFixture, WriterReproducesTheCanonicalBytes) {
  EXPECT_EQ(serialize_program_proto(expected_program()), canonical_fixture());
}

TEST(ProtoIoFixture, OtherValidEncodingsParseTheSame) {
  // Packed repeated numbers, fields out of order, explicit defaults.
  Pb op;
  op.str(3, "mul");
  op.msg(4, attr("ints", 3).packed(6, {3, 4}));
  op.msg(4, attr("floats", 4).packed_f32(7, {1.0f, 2.0f}));
  op.msg(4, attr("f64s", 12).packed_f64(16, {0.25}).f64(16, 0.5));
  op.msg(4, attr("longs", 11).packed(15, {static_cast<uint64_t>(-5)}));
  op.msg(4, Pb().int32(2, 6).varint(10, 1).str(1, "late_name"));  // name after value
  op.msg(1, slot("X", {"a"}));
  op.varint(5, 0);
  Pb var;
  var.msg(2, Pb().msg(3, lod_desc(tensor_desc(5, {2}), 0)).int32(1, 7))  // type after desc
      .varint(3, 0)
      .str(1, "a");
  Pb block;
  block.msg(3, var).msg(4, op).int32(2, -1).int32(1, 0).int32(5, -1);
  Program p = parse_program_proto(Pb().msg(1, block).bytes(), "alt.pb");

  const Op& parsed = p.blocks[0].ops().front();
  EXPECT_EQ(parsed.attr("ints")->get<std::vector<int32_t>>(), (std::vector<int32_t>{3, 4}));
  EXPECT_EQ(parsed.attr("floats")->get<std::vector<float>>(), (std::vector<float>{1.0f, 2.0f}));
  EXPECT_EQ(parsed.attr("f64s")->get<std::vector<double>>(), (std::vector<double>{0.25, 0.5}));
  EXPECT_EQ(parsed.attr("longs")->get<std::vector<int64_t>>(), (std::vector<int64_t>{-5}));
  EXPECT_EQ(parsed.attr("late_name")->get<bool>(), true);
  EXPECT_EQ(*parsed.input("X"), (std::vector<std::string>{"a"}));
  const Var& a = p.blocks[0].var("a");
  EXPECT_EQ(a.type, VarKind::LOD_TENSOR);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2}));
  EXPECT_TRUE(a.unknown_fields.empty());
  EXPECT_EQ(p.blocks[0].forward_block_idx, -1);
}

// --- protoc decodes ctp's output ---

struct Decoded {
  int status;
  std::string text;
};

Decoded run_protoc(const std::string& args, const std::string& input) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("ctp_protoc_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::path in = dir / "in.pb", out = dir / "out.txt";
  write_file_atomically(in.string(), input);
  std::string command = std::string(CTP_PROTOC_PATH) + " " + args + " < " + in.string() +
                        " > " + out.string() + " 2>&1";
  int status = std::system(command.c_str());
  std::string text = read_file(out.string());
  fs::remove_all(dir);
  return {status, text};
}

TEST(ProtoIoProtoc, DecodeRawShowsTheFieldNumbersAndValues) {
  Decoded d = run_protoc("--decode_raw", serialize_program_proto(expected_program()));
  ASSERT_EQ(d.status, 0) << d.text;
  // Decode_raw knows no schema: nested messages by number, varints unsigned.
  for (const char* expected : {
           "1 {\n  1: 0\n  2: 18446744073709551615\n",  // block 0: idx 0, parent_idx -1
           "    1: \"fc_0.w_0\"\n",                         // VarDesc.name
           "      1: 7\n",                                  // VarType.type LOD_TENSOR
           "          1: 5\n          2: 784\n          2: 10\n",  // TensorDesc FP32 [784, 10]
           "    3: \"kitchen_sink\"\n",                     // OpDesc.type
           "      1: \"l\"\n      2: 9\n      13: 9223372036854775808\n",  // LONG min
           "      1: \"f32\"\n      2: 1\n      4: 0x3dcccccd\n",           // FLOAT 0.1f
           "      1: \"f64\"\n      2: 15\n      19: 0xc004000000000000\n",  // FLOAT64 -2.5
           "    5: 1\n",                                    // is_target
           "  5: 0\n",                                      // forward_block_idx 0 (block 1)
           "4 {\n  1: 2005000\n}\n",                        // version
       })
    EXPECT_NE(d.text.find(expected), std::string::npos) << "missing:\n" << expected
                                                        << "\nin:\n" << d.text;
}

TEST(ProtoIoProtoc, DecodeWithTheSchemaReadsEveryField) {
  const std::string schema_dir = std::string(CTP_SOURCE_DIR) + "/program_ir";
  Decoded d = run_protoc("--proto_path=" + schema_dir +
                             " --decode=paddle.framework.proto.ProgramDesc " + schema_dir +
                             "/framework.proto",
                         serialize_program_proto(expected_program()));
  ASSERT_EQ(d.status, 0) << d.text;
  for (const char* expected : {
           "parent_idx: -1", "name: \"fc_0.w_0\"", "type: LOD_TENSOR", "data_type: FP32",
           "dims: -1", "lod_level: 1", "type: SELECTED_ROWS", "type: LOD_TENSOR_ARRAY",
           "type: RAW", "persistable: true", "is_parameter: true", "need_check_feed: true",
           "stop_gradient: true", "name: \"is_distributed\"\n      type: BOOLEAN\n      i: 1",
           "type: \"kitchen_sink\"", "parameter: \"Y\"\n      arguments: \"fc_0.w_0\"\n      arguments: \"x\"",
           "type: INT\n      i: -7", "type: FLOAT\n      f: 0.1", "type: INTS\n      ints: 1\n      ints: -2",
           "type: FLOATS\n      floats: 1.5\n      floats: -0", "type: BOOLEAN\n      b: true",
           "bools: true\n      bools: false\n      bools: true", "type: BLOCK\n      block_idx: 1",
           "type: LONG\n      l: -9223372036854775808", "type: BLOCKS\n      blocks_idx: 1",
           "longs: 9223372036854775807\n      longs: -1", "float64s: 3.25\n      float64s: ",
           "type: VAR\n      var_name: \"x\"", "vars_name: \"x\"\n      vars_name: \"out\"",
           "type: FLOAT64\n      float64: -2.5", "type: SCALAR\n      scalar {", "type: SCALARS",
           "is_target: true", "forward_block_idx: 0", "version {\n  version: 2005000\n}",
           "op_name: \"mul\"\n    op_version {\n      version: 1",
           // The fields and values this project added for issue 15.
           "scalar {\n        type: FLOAT64\n        r: 0.5", "persistable: false",
           "lod_level: 0", "is_target: false", "forward_block_idx: -1",
           "name: \"ctl\"\n    type {\n      type: LOD_TENSOR\n    }",
           "reader {\n        lod_tensor {\n          tensor {\n            data_type: FP32",
           "tuple {\n        element_type: FP32\n        element_type: INT64",
           "type: STRINGS\n      strings {\n        data_type: PSTRING", "type: VOCAB\n    }",
           "type: SPARSE_COO\n      sparse_coo {", "type: SPARSE_CSR\n      sparse_csr {",
           "data_type: FP8_E4M3FN", "op_compatible_map {\n  pair {\n    op_name: \"conv2d\"",
           "type: POSSIBLE", "default_required_version: \"1.5.0\"",
       })
    EXPECT_NE(d.text.find(expected), std::string::npos) << "missing:\n" << expected
                                                        << "\nin:\n" << d.text;
}

// --- unknown fields ---

TEST(ProtoIoUnknown, FieldsAtEveryLevelSurviveARoundTrip) {
  const std::string program_unknown = Pb().varint(9, 42).bytes();
  const std::string block_unknown = Pb().str(10, "blk").bytes();
  const std::string var_unknown = Pb().f32(11, 1.0f).bytes();
  // A group (wire types 3/4) with a nested field.
  const std::string type_unknown = Pb().msg(14, Pb().int32(1, 5)).raw("\x6b\x08\x01\x6c").bytes();
  const std::string op_unknown = Pb().f64(12, 2.0).varint(13, 1).bytes();

  Pb var;
  var.str(1, "v").msg(2, var_type(7, 3, lod_desc(tensor_desc(5, {3}), 0)).raw(type_unknown));
  var.raw(var_unknown);
  Pb op;
  op.str(3, "relu").raw(op_unknown);
  Pb block;
  block.int32(1, 0).int32(2, -1).msg(3, var).msg(4, op).raw(block_unknown);
  Pb program;
  program.msg(1, block).msg(3, compatible_map()).raw(program_unknown);

  Program p = parse_program_proto(program.bytes(), "unknown.pb");
  EXPECT_EQ(p.unknown_fields, program_unknown);
  EXPECT_EQ(p.op_compatible_map, compatible_map().bytes());
  EXPECT_EQ(p.blocks[0].unknown_fields, block_unknown);
  EXPECT_EQ(p.blocks[0].var("v").unknown_fields, var_unknown);
  EXPECT_EQ(p.blocks[0].var("v").type_unknown_fields, type_unknown);
  EXPECT_EQ(p.blocks[0].ops().front().unknown_fields, op_unknown);

  // Known fields first, the unknown ones after: here that is the input order.
  const std::string written = serialize_program_proto(p);
  EXPECT_EQ(written, program.bytes());
  EXPECT_EQ(parse_program_proto(written, "again.pb"), p);
  // And through JSON (base64) and back.
  EXPECT_EQ(serialize_program_proto(parse_program_json(program_to_json(p), "u.json")), written);
}

TEST(ProtoIoUnknown, TensorDescriptionsOfAnotherKindAreKeptRaw) {
  // A RAW var carrying a lod_tensor description: not ctp's to interpret.
  const std::string stray = Pb().msg(3, lod_desc(tensor_desc(5, {7}), 0)).bytes();
  Pb var;
  var.str(1, "id").msg(2, Pb().int32(1, 17).raw(stray));
  Pb block;
  block.int32(1, 0).int32(2, -1).msg(3, var);
  Program p = parse_program_proto(Pb().msg(1, block).bytes(), "stray.pb");
  const Var& id = p.blocks[0].var("id");
  EXPECT_EQ(id.type, VarKind::RAW);
  EXPECT_TRUE(id.shape.empty());
  EXPECT_EQ(id.type_unknown_fields, stray);
  EXPECT_EQ(serialize_program_proto(p), Pb().msg(1, block).bytes());
}

// --- format detection and loading ---

TEST(ProtoIoFormat, DetectsJsonAndProtobufByContent) {
  EXPECT_EQ(detect_program_format(" \n\t{\"blocks\": []}"), ProgramFormat::Json);
  EXPECT_EQ(detect_program_format(canonical_fixture()), ProgramFormat::Proto);
  EXPECT_EQ(detect_program_format(""), ProgramFormat::Proto);
  EXPECT_EQ(parse_program("\xEF\xBB\xBF{\"blocks\": []}", "bom.json").blocks.size(), 0u);

  // A protobuf program whose first block is exactly 123 bytes starts "\n{".
  Pb block;
  block.int32(1, 0).int32(2, -1).msg(4, Pb().str(3, std::string(106, 'o')));
  ASSERT_EQ(block.bytes().size(), 123u);
  const std::string bytes = Pb().msg(1, block).bytes();
  ASSERT_EQ(bytes.substr(0, 2), "\n{");
  EXPECT_EQ(detect_program_format(bytes), ProgramFormat::Proto);
  EXPECT_EQ(parse_program(bytes, "b.pb").op_count(), 1u);
  EXPECT_EQ(detect_program_format("\n{\"blocks\": []}"), ProgramFormat::Json);
}

TEST(ProtoIoFormat, LoadsFilesOfBothFormatsAndSerializesEither) {
  namespace fs = std::filesystem;
  const Program p = expected_program();
  fs::path dir = fs::temp_directory_path() / ("ctp_load_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (ProgramFormat format : {ProgramFormat::Proto, ProgramFormat::Json}) {
    std::string path = (dir / (format == ProgramFormat::Json ? "p.json" : "p.pb")).string();
    write_file_atomically(path, serialize_program(p, format));
    EXPECT_EQ(load_program_file(path), p) << path;
  }
  try {
    load_program_file((dir / "missing.pb").string());
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing.pb"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
  EXPECT_THROW(parse_program(" \n", "blank"), Error);
  try {
    parse_program("[1, 2]", "list.json");
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("starts with '{'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ctp
