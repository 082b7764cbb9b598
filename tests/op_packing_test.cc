// packed_op: an op built in memory becomes an op held as its encoded
// OpDesc, as the reader holds an op read from a file. It must equal the op
// it was packed from, read the same through every accessor, be written
// back as exactly the bytes the writer gives for the unpacked op, and
// become an ordinary op again when edited.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "program_ir/byte_sink.h"
#include "program_ir/op_packing.h"
#include "program_ir/op_role.h"
#include "program_ir/program.h"
#include "program_ir/proto_io.h"
#include "tests/pb_test_encoder.h"

namespace ctp {
namespace {

Op sample_op() {
  return Op("c_allreduce_sum", {{"X", {"fc_0.w_0@GRAD"}}}, {{"Out", {"fc_0.w_0@GRAD"}}},
            {{"ring_id", Attribute(1)},
             {kOpRoleAttr, Attribute(op_role::kBackward)},
             {kOpRoleVarAttr, Attribute(std::vector<std::string>{"fc_0.w_0", "fc_0.w_0@GRAD"})},
             {"scale", Attribute(0.5f)},
             {"use_calc_stream", Attribute(true)}});
}

// A program of one block holding `ops`, as protobuf bytes.
std::string bytes_of(std::vector<Op> ops) {
  Program program = Program::with_global_block();
  for (Op& op : ops) program.global_block().append_op(std::move(op));
  return serialize_program_proto(program);
}

TEST(OpPacking, APackedOpEqualsItsSourceAndIsHeldAsItsBytes) {
  const Op source = sample_op();
  const Op packed = packed_op(source);
  EXPECT_EQ(packed, source);
  ASSERT_TRUE(packed.unchanged_wire_bytes().has_value());
  EXPECT_FALSE(packed.wire_attrs().empty());
  // The reader's notes: op_role found and its value decoded.
  EXPECT_TRUE(packed.wire_attrs().roles_noted);
  EXPECT_EQ(packed.wire_attrs().op_role_kind, WireAttrs::RoleKind::kInt);
  EXPECT_EQ(packed.wire_attrs().op_role_value, op_role::kBackward);
  EXPECT_NE(packed.wire_attrs().op_role_var_at, WireAttrs::kAbsent);
}

TEST(OpPacking, APackedOpReadsTheSameThroughEveryAccessor) {
  const Op source = sample_op();
  const Op packed = packed_op(source);
  EXPECT_EQ(packed.type, "c_allreduce_sum");
  // Slots asked for one at a time read the bytes (before anything decodes
  // them), then the decoded lists.
  EXPECT_TRUE(packed.has_input("X"));
  EXPECT_FALSE(packed.has_input("Y"));
  EXPECT_TRUE(packed.has_output("Out"));
  EXPECT_FALSE(packed.has_output("X"));
  EXPECT_EQ(packed.input_args("X"), std::vector<std::string>{"fc_0.w_0@GRAD"});
  EXPECT_EQ(packed.output_args("Out"), std::vector<std::string>{"fc_0.w_0@GRAD"});
  EXPECT_EQ(packed.input_args("Out"), std::nullopt);
  EXPECT_EQ(packed.inputs(), source.inputs());
  EXPECT_EQ(packed.outputs(), source.outputs());
  EXPECT_TRUE(packed.has_input("X"));
  EXPECT_FALSE(packed.has_input("Y"));
  ASSERT_NE(packed.input("X"), nullptr);
  EXPECT_EQ(*packed.input("X"), std::vector<std::string>{"fc_0.w_0@GRAD"});
  EXPECT_EQ(get_op_role(packed), op_role::kBackward);
  EXPECT_EQ(packed.attr_value("ring_id"), Attribute(1));
  EXPECT_TRUE(packed.has_attr("scale"));
  EXPECT_EQ(packed.attrs(), source.attrs());
}

TEST(OpPacking, APackedOpIsWrittenAsTheUnpackedOpIs) {
  std::vector<Op> sources{sample_op(), Op("c_comm_init_all", {}, {}, {{"ring_id", Attribute(0)}}),
                          Op("fill_constant", {}, {{"Out", {"x"}}}, {})};
  sources.back().is_target = true;
  Op explicit_false("scale", {{"X", {"x"}}}, {{"Out", {"x"}}}, {});
  explicit_false.is_target_explicit = true;
  sources.push_back(explicit_false);
  std::vector<Op> packed;
  for (const Op& op : sources) packed.push_back(packed_op(op));
  EXPECT_EQ(bytes_of(packed), bytes_of(sources));
  for (std::size_t i = 0; i < sources.size(); ++i) EXPECT_EQ(packed[i], sources[i]) << i;
}

TEST(OpPacking, AnEditedPackedOpIsWrittenWithTheEdit) {
  Op packed = packed_op(sample_op());
  packed.set_attr("ring_id", Attribute(3));
  packed.mutable_outputs().front().args = {"other"};
  EXPECT_FALSE(packed.unchanged_wire_bytes().has_value());
  Op expected = sample_op();
  expected.set_attr("ring_id", Attribute(3));
  expected.mutable_outputs().front().args = {"other"};
  EXPECT_EQ(packed, expected);
  EXPECT_EQ(bytes_of({packed}), bytes_of({expected}));

  Op renamed = packed_op(sample_op());
  renamed.type = "c_allreduce_max";
  EXPECT_FALSE(renamed.unchanged_wire_bytes().has_value());
  Program read = parse_program_proto(bytes_of({renamed}), "renamed.pb");
  EXPECT_EQ(read.global_block().ops().front().type, "c_allreduce_max");
}

// An op packed from its parts (as all_gather packs its adam copies) is the
// op packed from a built Op of those parts, notes and all.
TEST(OpPacking, PackingFromPartsIsPackingTheBuiltOp) {
  const Op source = sample_op();
  const Op from_parts = packed_op(OpParts{.type = source.type,
                                          .inputs = source.inputs(),
                                          .outputs = source.outputs(),
                                          .attrs = source.attrs()});
  const Op from_op = packed_op(source);
  EXPECT_EQ(from_parts, source);
  EXPECT_EQ(*from_parts.unchanged_wire_bytes(), *from_op.unchanged_wire_bytes());
  EXPECT_EQ(from_parts.wire_attrs().op_role_at, from_op.wire_attrs().op_role_at);
  EXPECT_EQ(from_parts.wire_attrs().op_role_var_at, from_op.wire_attrs().op_role_var_at);
  EXPECT_EQ(from_parts.wire_attrs().op_role_value, op_role::kBackward);
}

// Slots of one var given as views, and attributes given in two runs, pack
// as the same op built in memory (the bytes, the reads, the role's note).
TEST(OpPacking, VarSlotsAndMoreAttrsPackAsTheBuiltOp) {
  const Op built("elementwise_sub",
                 {{"X", {"w@SNAPSHOT"}}, {"Y", {"w"}}},
                 {{"Out", {"w"}}},
                 {{"axis", Attribute(-1)}, {std::string(kOpRoleAttr), Attribute(op_role::kOptimize)}});
  const VarSlot inputs[] = {{"X", "w@SNAPSHOT"}, {"Y", "w"}};
  const VarSlot outputs[] = {{"Out", "w"}};
  const NamedAttribute axis[] = {{"axis", Attribute(-1)}};
  const NamedAttribute role[] = {{std::string(kOpRoleAttr), Attribute(op_role::kOptimize)}};
  const Op from_views = packed_op(OpParts{.type = "elementwise_sub",
                                          .var_inputs = inputs,
                                          .var_outputs = outputs,
                                          .attrs = axis,
                                          .more_attrs = role});
  EXPECT_EQ(from_views, built);
  EXPECT_EQ(*from_views.unchanged_wire_bytes(), *packed_op(built).unchanged_wire_bytes());
  EXPECT_TRUE(from_views.has_input("Y"));
  EXPECT_FALSE(from_views.has_input("Out"));
  EXPECT_EQ(from_views.input_args("X"), std::vector<std::string>{"w@SNAPSHOT"});
  EXPECT_EQ(from_views.wire_attrs().count, 2u);
  EXPECT_EQ(from_views.wire_attrs().op_role_kind, WireAttrs::RoleKind::kInt);
  EXPECT_EQ(from_views.wire_attrs().op_role_value, op_role::kOptimize);
  EXPECT_EQ(from_views.attr_value(kOpRoleAttr), Attribute(op_role::kOptimize));
}

// A packed copy of an op read from a file keeps its attributes' bytes as
// they came (here an Attr with its value before its type, which ctp's
// writer would put the other way round), and the reader's notes on them.
TEST(OpPacking, APackedCopyOfAReadOpKeepsItsAttributeBytes) {
  testing_pb::Pb slot;
  slot.str(1, "X").str(2, "x");
  testing_pb::Pb role;
  role.str(1, std::string(kOpRoleAttr)).varint(3, op_role::kBackward).varint(2, 0);  // i, then type INT
  testing_pb::Pb ring;
  ring.str(1, "ring_id").varint(3, 2).varint(2, 0);
  testing_pb::Pb op;
  op.msg(1, slot).msg(2, slot).str(3, "c_allreduce_sum").msg(4, ring).msg(4, role);
  auto owner = std::make_shared<const std::string>(testing_pb::one_block_program({}, {op}));
  const Program read = parse_program_proto(*owner, "read.pb", ProtoReadOptions{.owner = owner});
  const Op& source = read.global_block().ops().front();
  ASSERT_FALSE(source.wire_attrs().empty());
  const Op packed = packed_op(source);
  EXPECT_EQ(packed, source);
  EXPECT_EQ(*packed.unchanged_wire_bytes(), *source.unchanged_wire_bytes());
  EXPECT_EQ(packed.wire_attrs().op_role_kind, WireAttrs::RoleKind::kInt);
  EXPECT_EQ(packed.wire_attrs().op_role_value, op_role::kBackward);
  EXPECT_EQ(*packed.attr("ring_id"), Attribute(2));
  EXPECT_EQ(bytes_of({packed}), *owner);
}

// A type longer than a WireOp can say (64 KiB) is read, packed and written
// all the same, held decoded.
TEST(OpPacking, AnOpWithAVeryLongTypeIsHeldDecoded) {
  const std::string type(WireOp::kMaxTypeSize + 1, 't');
  testing_pb::Pb slot;
  slot.str(1, "X").str(2, "x");
  testing_pb::Pb role;
  role.str(1, std::string(kOpRoleAttr)).varint(2, 0).varint(3, op_role::kBackward);
  testing_pb::Pb op;
  op.msg(1, slot).str(3, type).msg(4, role);
  auto owner = std::make_shared<const std::string>(testing_pb::one_block_program({}, {op}));
  const Program read = parse_program_proto(*owner, "long.pb", ProtoReadOptions{.owner = owner});
  const Op& source = read.global_block().ops().front();
  EXPECT_EQ(source.type, type);
  EXPECT_FALSE(source.unchanged_wire_bytes().has_value());
  EXPECT_EQ(serialize_program_proto(read), *owner);
  const Op packed = packed_op(source);
  EXPECT_EQ(packed, source);
  EXPECT_FALSE(packed.unchanged_wire_bytes().has_value());
  EXPECT_EQ(bytes_of({packed}), *owner);
  const Op built = packed_op(OpParts{.type = type, .inputs = source.inputs()});
  EXPECT_EQ(built.type, type);
  EXPECT_EQ(built.input_args("X"), std::vector<std::string>{"x"});
}

TEST(OpPacking, AnOpWithUnknownFieldsIsLeftAsItIs) {
  Op source = sample_op();
  source.unknown_fields.append(UnknownFields::kAtEnd, std::string("\x50\x01", 2));  // field 10
  const Op packed = packed_op(source);
  EXPECT_FALSE(packed.unchanged_wire_bytes().has_value());
  EXPECT_EQ(packed, source);
  EXPECT_EQ(bytes_of({packed}), bytes_of({source}));
}

TEST(OpPacking, APackedOpOutlivesItsSourceAndCopiesShareItsBytes) {
  Op packed = packed_op(sample_op());
  const Op copy = packed;
  packed = Op("scale");
  EXPECT_EQ(copy, sample_op());
  EXPECT_TRUE(copy.unchanged_wire_bytes().has_value());
}

// An op larger than the writer's chunk (a coalesce_tensor of every
// gradient) goes out whole and in its place, streamed or not.
TEST(OpPacking, ALargeOpIsWrittenWhole) {
  std::vector<std::string> args;
  for (int i = 0; i < 2000; ++i) args.push_back("fc_" + std::to_string(i) + ".w_0@GRAD");
  const Op source("coalesce_tensor", {{"Input", args}}, {{"Output", args}, {"FusedOutput", {"f"}}},
                  {{"copy_data", Attribute(true)}});
  const Op packed = packed_op(source);
  EXPECT_EQ(packed, source);
  EXPECT_EQ(bytes_of({packed}), bytes_of({source}));
  // Streamed (as `ctp transpile` writes), between smaller ops.
  Program program = Program::with_global_block();
  for (int i = 0; i < 3; ++i) {
    program.global_block().append_op(packed_op(sample_op()));
    program.global_block().append_op(packed);
  }
  std::string streamed;
  StringSink sink(streamed);
  write_program_proto(program, sink);
  EXPECT_EQ(streamed, serialize_program_proto(program));
}
}  // namespace
}  // namespace ctp
