#include <gtest/gtest.h>

#include <bit>
#include <charconv>
#include <cstring>
#include <limits>
#include <random>

#include "program_ir/builder.h"
#include "program_ir/dot_io.h"
#include "program_ir/text_io.h"

namespace ctp {
namespace {

std::string text(const Attribute& a) { return attribute_to_text(a); }

TEST(TextIo, OpWithEveryAttributeType) {
  Op op("every_type", {{"X", {"a", "b"}}, {"Y", {}}}, {{"Out", {"w@GRAD"}}},
        {
            {"i", Attribute(int32_t{-3})},
            {"f", Attribute(0.5f)},
            {"s", Attribute("a\"b\\c\n")},
            {"ints", Attribute(std::vector<int32_t>{1, -2})},
            {"floats", Attribute(std::vector<float>{0.1f, 2.0f})},
            {"strings", Attribute(std::vector<std::string>{"x", ""})},
            {"b", Attribute(true)},
            {"bools", Attribute(std::vector<bool>{true, false})},
            {"blk", Attribute::block(1)},
            {"l", Attribute(int64_t{12})},
            {"blks", Attribute::blocks({1, 2})},
            {"longs", Attribute(std::vector<int64_t>{3, -4})},
            {"f64s", Attribute(std::vector<double>{0.25, 3.0})},
            {"v", Attribute::var("w@GRAD")},
            {"vs", Attribute::vars({"p", "q"})},
            {"f64", Attribute(1e-08)},
            {"sc", Attribute::scalar(std::string("\x01\xff", 2))},
            {"scs", Attribute::scalars({std::string("\x0a"), std::string("\x10\x20")})},
        });
  EXPECT_EQ(op_to_text(op),
            R"(every_type X=[a, b], Y=[] -> Out=[w@GRAD] {b=true, blk=block(1), )"
            R"(blks=blocks[1, 2], bools=[true, false], f=0.5f, f64=1e-08, f64s=[0.25, 3.0], )"
            R"(floats=[0.1f, 2f], i=-3, ints=[1, -2], l=12L, longs=[3L, -4L], )"
            R"(s="a\"b\\c\n", sc=scalar(01ff), scs=scalars[0a, 1020], strings=["x", ""], )"
            R"(v=var(w@GRAD), vs=vars[p, q]})");
}

TEST(TextIo, EmptyListsShowTheirType) {
  EXPECT_EQ(text(Attribute(std::vector<int32_t>{})), "INTS[]");
  EXPECT_EQ(text(Attribute(std::vector<int64_t>{})), "LONGS[]");
  EXPECT_EQ(text(Attribute(std::vector<float>{})), "FLOATS[]");
  EXPECT_EQ(text(Attribute(std::vector<double>{})), "FLOAT64S[]");
  EXPECT_EQ(text(Attribute(std::vector<bool>{})), "BOOLEANS[]");
  EXPECT_EQ(text(Attribute(std::vector<std::string>{})), "STRINGS[]");
  EXPECT_EQ(text(Attribute::blocks({})), "blocks[]");
  EXPECT_EQ(text(Attribute::vars({})), "vars[]");
  EXPECT_EQ(text(Attribute::scalars({})), "scalars[]");
}

TEST(TextIo, FloatFormatting) {
  EXPECT_EQ(text(Attribute(1.0f / 3.0f)), "0.33333334f");
  EXPECT_EQ(text(Attribute(0.1f)), "0.1f");
  EXPECT_EQ(text(Attribute(1e-8f)), "1e-08f");
  EXPECT_EQ(text(Attribute(16777216.0f)), "16777216f");
  EXPECT_EQ(text(Attribute(-0.0f)), "-0f");
  EXPECT_EQ(text(Attribute(1.0 / 3.0)), "0.3333333333333333");
  EXPECT_EQ(text(Attribute(0.1)), "0.1");
  EXPECT_EQ(text(Attribute(2.0)), "2.0");
  EXPECT_EQ(text(Attribute(-0.0)), "-0.0");
  EXPECT_EQ(text(Attribute(1e20)), "1e+20");
  EXPECT_EQ(text(Attribute(123456789.0)), "123456789.0");
  // A FLOAT that was widened to FLOAT64 shows its float rounding.
  EXPECT_EQ(text(Attribute(static_cast<double>(0.1f))), "0.10000000149011612");
}

TEST(TextIo, NonFiniteFloats) {
  const float fnan = std::numeric_limits<float>::quiet_NaN();
  const float finf = std::numeric_limits<float>::infinity();
  const double dnan = std::numeric_limits<double>::quiet_NaN();
  const double dinf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(text(Attribute(fnan)), "nanf");
  EXPECT_EQ(text(Attribute(-fnan)), "nanf");
  EXPECT_EQ(text(Attribute(finf)), "inff");
  EXPECT_EQ(text(Attribute(-finf)), "-inff");
  EXPECT_EQ(text(Attribute(dnan)), "nan");
  EXPECT_EQ(text(Attribute(dinf)), "inf");
  EXPECT_EQ(text(Attribute(-dinf)), "-inf");
  EXPECT_EQ(text(Attribute(std::vector<float>{fnan, -finf, 1.5f})), "[nanf, -inff, 1.5f]");
  EXPECT_EQ(text(Attribute(std::vector<double>{dinf, 1.0})), "[inf, 1.0]");
}

TEST(TextIo, FloatsReadBackBitIdentical) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 100000; ++i) {
    const uint64_t bits = rng();
    const float f = std::bit_cast<float>(static_cast<uint32_t>(bits));
    const double d = std::bit_cast<double>(bits);
    if (std::isfinite(f)) {
      std::string s = float_to_text(f);
      float back = 0;
      auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), back);
      ASSERT_EQ(ec, std::errc()) << s;
      ASSERT_EQ(p, s.data() + s.size()) << s;
      ASSERT_EQ(std::bit_cast<uint32_t>(back), std::bit_cast<uint32_t>(f)) << s;
    }
    if (std::isfinite(d)) {
      std::string s = double_to_text(d);
      ASSERT_NE(s.find_first_of(".e"), std::string::npos) << s;
      double back = 0;
      auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), back);
      ASSERT_EQ(ec, std::errc()) << s;
      ASSERT_EQ(std::bit_cast<uint64_t>(back), std::bit_cast<uint64_t>(d)) << s;
    }
  }
}

TEST(TextIo, StringsAreJsonEscaped) {
  EXPECT_EQ(text(Attribute("tab\there")), R"("tab\there")");
  EXPECT_EQ(text(Attribute(std::string("nul\0bell\a del\x7f", 14))),
            R"("nul\u0000bell\u0007 del\u007f")");
  EXPECT_EQ(text(Attribute("\r\b\f")), R"("\r\b\f")");
  EXPECT_EQ(text(Attribute("ünïcode")), "\"ünïcode\"");
}

TEST(TextIo, AttributesSortedWithoutCallstack) {
  Op op("c_allreduce_sum", {{"X", {"w@GRAD"}}}, {{"Out", {"w@GRAD"}}},
        {{"use_calc_stream", Attribute(false)},
         {"op_callstack", Attribute(std::vector<std::string>{"File x.py, line 3"})},
         {"op_role", Attribute(int32_t{1})},
         {"ring_id", Attribute(int32_t{0})}});
  EXPECT_EQ(op_to_text(op),
            "c_allreduce_sum X=[w@GRAD] -> Out=[w@GRAD] {op_role=1, ring_id=0, "
            "use_calc_stream=false}");
  Op only_callstack("noop", {}, {}, {{"op_callstack", Attribute(std::vector<std::string>{})}});
  EXPECT_EQ(op_to_text(only_callstack), "noop () -> () {}");
}

TEST(TextIo, AwkwardNamesAreQuoted) {
  Op op("weird", {{"X", {"a b", "c,d", "", "e]f", "ok.name@GRAD"}}}, {{"Out=", {"x\ny"}}},
        {{"v", Attribute::var("p(q)")}});
  EXPECT_EQ(op_to_text(op),
            R"x(weird X=["a b", "c,d", "", "e]f", ok.name@GRAD] -> "Out="=["x\ny"] {v=var("p(q)")})x");
}

TEST(TextIo, ProgramLayoutMatchesTheDocument) {
  ProgramBuilder pb;
  pb.program().version = 0;
  pb.param("fc_0.w_0", {784, 10});
  Var id;
  id.name = "nccl_id_0";
  id.type = VarKind::RAW;
  id.persistable = true;
  pb.var(id);
  pb.op("mul").in("X", "x").in("Y", "fc_0.w_0").out("Out", "fc_0.tmp_0").role(0).role_var({});
  pb.op("c_gen_nccl_id")
      .out("Out", "nccl_id_0")
      .attr("rank", int32_t{0})
      .attr("endpoint", "127.0.0.1:6170")
      .attr("other_endpoints", std::vector<std::string>{"127.0.0.1:6171"})
      .role(0);
  EXPECT_EQ(program_to_text(pb.program()),
            "program version=0\n"
            "block 0 parent=-1 forward=-1\n"
            "  var fc_0.w_0 : LOD_TENSOR FP32 [784, 10] persistable parameter\n"
            "  var nccl_id_0 : RAW persistable\n"
            "  op mul X=[x], Y=[fc_0.w_0] -> Out=[fc_0.tmp_0] {op_role=0, op_role_var=STRINGS[]}\n"
            "  op c_gen_nccl_id () -> Out=[nccl_id_0] {endpoint=\"127.0.0.1:6170\", op_role=0, "
            "other_endpoints=[\"127.0.0.1:6171\"], rank=0}\n");
}

TEST(TextIo, VarFlagsLodAndBlocks) {
  Program p = Program::with_global_block();
  Var v;
  v.name = "seq";
  v.dtype = DataType::INT64;
  v.shape = {-1, 1};
  v.lod_level = 1;
  v.persistable = v.is_parameter = v.stop_gradient = v.is_distributed = v.need_check_feed = true;
  p.global_block().add_var(v);
  Block& sub = p.add_block(0);
  sub.forward_block_idx = 0;
  Var scalar;
  scalar.name = "s";
  scalar.type = VarKind::SELECTED_ROWS;
  sub.add_var(scalar);
  sub.append_op(Op("relu", {{"X", {"seq"}}}, {{"Out", {"s"}}}));
  EXPECT_EQ(program_to_text(p),
            "program\n"
            "block 0 parent=-1 forward=-1\n"
            "  var seq : LOD_TENSOR INT64 [-1, 1] lod=1 persistable parameter stop_gradient "
            "distributed need_check_feed\n"
            "block 1 parent=0 forward=0\n"
            "  var s : SELECTED_ROWS FP32 []\n"
            "  op relu X=[seq] -> Out=[s] {}\n");
}

TEST(TextIo, DescriptionsReaderTupleAttrsAndVersionMaps) {
  Program p = Program::with_global_block();
  p.version = 7;
  p.op_version_map = std::vector<OpVersionEntry>{{"conv2d", 1}, {"a b", 2}};
  Block& b = p.global_block();
  b.add_var(Var{.name = "ctl", .tensor_desc_absent = true});
  Var r{.name = "r", .type = VarKind::READER};
  r.reader = std::vector<ReaderTensorDesc>{{DataType::FP32, {-1, 3}, 0},
                                           {DataType::INT64, {-1, 1}, 1}};
  b.add_var(r);
  Var t{.name = "t", .type = VarKind::TUPLE};
  t.tuple = std::vector<VarKind>{VarKind::FP32, VarKind::STRINGS};
  b.add_var(t);
  Var w{.name = "w", .type = VarKind::STRINGS, .dtype = DataType::PSTRING, .shape = {-1}};
  w.is_distributed = true;
  w.attrs = {VarAttr{.name = "is_distributed", .type = AttrType::INT, .i = 0},
             VarAttr{.name = "note", .type = AttrType::STRING, .s = "a\"b"},
             VarAttr{.name = "axes", .type = AttrType::INTS, .ints = {0, -1}}};
  b.add_var(w);
  EXPECT_EQ(program_to_text(p),
            "program version=7 op_versions={conv2d=1, \"a b\"=2}\n"
            "block 0 parent=-1 forward=-1\n"
            "  var ctl : LOD_TENSOR (no tensor desc)\n"
            "  var r : READER reader=[FP32 [-1, 3], INT64 [-1, 1] lod=1]\n"
            "  var t : TUPLE tuple=[FP32, STRINGS]\n"
            "  var w : STRINGS PSTRING [-1] distributed attrs={note: STRING s=\"a\\\"b\", "
            "axes: INTS ints=[0, -1]}\n");
}

TEST(TextIo, GoldenFormOfBlocksAndPrograms) {
  ProgramBuilder pb;
  pb.op("scale").in("X", "a").out("Out", "b").attr("scale", 2.0f);
  pb.op("assign").in("X", "b").out("Out", "c");
  EXPECT_EQ(block_ops_to_text(pb.program().global_block()),
            "scale X=[a] -> Out=[b] {scale=2f}\n"
            "assign X=[b] -> Out=[c] {}\n");
  EXPECT_EQ(program_ops_to_text(pb.program()), block_ops_to_text(pb.program().global_block()));
  pb.program().add_block(0).append_op(Op("relu", {{"X", {"c"}}}, {{"Out", {"d"}}}));
  EXPECT_EQ(program_ops_to_text(pb.program()),
            "block 0\n"
            "scale X=[a] -> Out=[b] {scale=2f}\n"
            "assign X=[b] -> Out=[c] {}\n"
            "block 1\n"
            "relu X=[c] -> Out=[d] {}\n");
}

// Checks that every line of DOT output has balanced, properly escaped quotes.
void expect_well_quoted(const std::string& dot) {
  std::size_t line_start = 0;
  while (line_start < dot.size()) {
    std::size_t line_end = dot.find('\n', line_start);
    std::string line = dot.substr(line_start, line_end - line_start);
    bool in_string = false;
    for (std::size_t i = 0; i < line.size(); ++i) {
      if (in_string && line[i] == '\\') {
        ASSERT_LT(i + 1, line.size()) << line;
        ++i;
      } else if (line[i] == '"') {
        in_string = !in_string;
      }
    }
    EXPECT_FALSE(in_string) << "unbalanced quotes: " << line;
    line_start = line_end + 1;
  }
}

TEST(Dot, ClustersNodesAndEdges) {
  ProgramBuilder pb;
  pb.param("w", {2, 2});
  pb.tmp("w@GRAD", {2, 2});
  pb.op("c_allreduce_sum").in("X", "w@GRAD").out("Out", "w@GRAD").role(op_role::kBackward);
  pb.op("sgd").in("Param", "w").in("Grad", "w@GRAD").in("LearningRate", "lr").out("ParamOut", "w");
  const std::string dot = program_to_dot(pb.program());
  EXPECT_EQ(dot.rfind("digraph program {\n", 0), 0u);
  EXPECT_NE(dot.find("subgraph cluster_0 {"), std::string::npos);
  EXPECT_NE(dot.find("b0_v0 [shape=ellipse, label=\"w\", style=filled, fillcolor=grey];"),
            std::string::npos);
  EXPECT_NE(dot.find("b0_v1 [shape=ellipse, label=\"w@GRAD\"];"), std::string::npos);
  EXPECT_NE(dot.find("b0_op0 [shape=box, label=\"c_allreduce_sum\\nop_role=1\"];"),
            std::string::npos);
  EXPECT_NE(dot.find("b0_op1 [shape=box, label=\"sgd\"];"), std::string::npos);
  // lr is not declared: a dashed node of its own.
  EXPECT_NE(dot.find("b0_u0 [shape=ellipse, style=dashed, label=\"lr\"];"), std::string::npos);
  EXPECT_NE(dot.find("  b0_v1 -> b0_op0;\n  b0_op0 -> b0_v1;\n"), std::string::npos);
  EXPECT_NE(dot.find("  b0_u0 -> b0_op1;\n"), std::string::npos);
  EXPECT_NE(dot.find("  b0_op1 -> b0_v0;\n"), std::string::npos);
  EXPECT_EQ(dot.substr(dot.size() - 2), "}\n");
  expect_well_quoted(dot);
}

TEST(Dot, EscapesNamesAndReachesParentBlocks) {
  ProgramBuilder pb;
  pb.tmp("say \"hi\"\\@GRAD", {1});
  pb.program().add_block(0).append_op(
      Op("while\"op", {{"X", {"say \"hi\"\\@GRAD"}}}, {{"Out", {"new\nline"}}}));
  const std::string dot = program_to_dot(pb.program());
  EXPECT_NE(dot.find(R"(b0_v0 [shape=ellipse, label="say \"hi\"\\@GRAD"];)"), std::string::npos);
  EXPECT_NE(dot.find(R"(b1_op0 [shape=box, label="while\"op"];)"), std::string::npos);
  EXPECT_NE(dot.find(R"(b1_u0 [shape=ellipse, style=dashed, label="new\nline"];)"),
            std::string::npos);
  // The sub-block's op reads the var drawn in block 0's cluster.
  EXPECT_NE(dot.find("  b0_v0 -> b1_op0;\n"), std::string::npos);
  EXPECT_NE(dot.find("subgraph cluster_1 {"), std::string::npos);
  expect_well_quoted(dot);
  EXPECT_EQ(dot_escape("a\"b\\c\nd\te@f"), "a\\\"b\\\\c\\nd e@f");
}

}  // namespace
}  // namespace ctp
