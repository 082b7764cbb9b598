// Ops read from protobuf keep their attributes as the wire bytes they came
// in until something asks for them (Op::wire_attrs, program_ir/op.h): reads
// of one attribute decode only that one, editing decodes them for good,
// concurrent first reads are safe, and writing gives the same bytes back.
#include <gtest/gtest.h>

#include <set>
#include <thread>
#include <vector>

#include "program_ir/op_role.h"
#include "program_ir/proto_io.h"
#include "tests/pb_test_encoder.h"

namespace ctp {
namespace {

using testing_pb::Pb;

// OpDesc.Attr: name (1), type (2), then the value field of that type.
Pb int_attr(std::string_view name, int32_t v) {
  Pb a;
  a.str(1, name).int32(2, 0).int32(3, v);  // INT, i
  return a;
}
Pb float_attr(std::string_view name, float v) {
  Pb a;
  a.str(1, name).int32(2, 1).f32(4, v);  // FLOAT, f
  return a;
}
Pb strings_attr(std::string_view name, std::initializer_list<std::string_view> v) {
  Pb a;
  a.str(1, name).int32(2, 5);  // STRINGS
  for (std::string_view s : v) a.str(8, s);
  return a;
}

// A program of one block and one op whose OpDesc is `op`.
std::string program_of(const Pb& op) { return testing_pb::one_block_program({}, {op}); }

Pb scale_op() {
  Pb slot_x, slot_out;
  slot_x.str(1, "X").str(2, "x");
  slot_out.str(1, "Out").str(2, "y");
  Pb op;
  op.msg(1, slot_x).msg(2, slot_out).str(3, "scale");
  op.msg(4, int_attr("op_role", 1));
  op.msg(4, strings_attr("op_role_var", {"w", "w@GRAD"}));
  op.msg(4, float_attr("scale", 2.5f));
  op.msg(4, strings_attr("op_callstack", {"  File \"train.py\", line 48, in <module>\n",
                                          "  File \"framework.py\", line 3621, in append_op\n"}));
  return op;
}

std::vector<NamedAttribute> scale_attrs() {
  return {{"op_role", Attribute(int32_t{1})},
          {"op_role_var", Attribute(std::vector<std::string>{"w", "w@GRAD"})},
          {"scale", Attribute(2.5f)},
          {"op_callstack",
           Attribute(std::vector<std::string>{"  File \"train.py\", line 48, in <module>\n",
                                              "  File \"framework.py\", line 3621, in append_op\n"})}};
}

TEST(OpWireAttrs, ReadOpsKeepTheirAttributesAsTheirBytes) {
  const std::string bytes = program_of(scale_op());
  const Program read = parse_program_proto(bytes, "p.pb");
  const Op& op = read.global_block().ops().front();
  ASSERT_EQ(op.wire_attrs().count, 4u);
  // One attribute at a time, straight from the bytes.
  EXPECT_EQ(get_op_role(op), 1);
  ASSERT_EQ(param_grad_pairs(op).size(), 1u);
  EXPECT_EQ(param_grad_pairs(op)[0].grad, "w@GRAD");
  EXPECT_EQ(op.attr_value("scale"), Attribute(2.5f));
  EXPECT_EQ(op.attr_value("absent"), std::nullopt);
  EXPECT_TRUE(op.has_attr("op_callstack"));
  EXPECT_FALSE(op.has_attr("absent"));
  // All of them, decoded, in file order; the op equals one built in memory.
  EXPECT_EQ(op.attrs(), scale_attrs());
  ASSERT_NE(op.attr("scale"), nullptr);
  EXPECT_EQ(*op.attr("scale"), Attribute(2.5f));
  const Op built("scale", {{"X", {"x"}}}, {{"Out", {"y"}}}, scale_attrs());
  EXPECT_EQ(op, built);
  EXPECT_EQ(built, op);
  // Still the bytes, which go back as they came.
  EXPECT_EQ(op.wire_attrs().count, 4u);
  EXPECT_EQ(serialize_program_proto(read), bytes);
}

TEST(OpWireAttrs, EditingAnAttributeDecodesThemForGood) {
  const std::string bytes = program_of(scale_op());
  Program read = parse_program_proto(bytes, "p.pb");
  Op& op = read.global_block().ops().front();
  const Op before = op;
  op.set_attr("scale", Attribute(3.0f));
  EXPECT_TRUE(op.wire_attrs().empty());
  std::vector<NamedAttribute> expected = scale_attrs();
  expected[2].value = Attribute(3.0f);
  EXPECT_EQ(op.attrs(), expected);
  EXPECT_EQ(before.wire_attrs().count, 4u);  // the copy kept its bytes
  EXPECT_NE(op, before);

  const Program again = parse_program_proto(serialize_program_proto(read), "again.pb");
  EXPECT_EQ(again.global_block().ops().front().attrs(), expected);

  Op removed = before;
  EXPECT_TRUE(removed.remove_attr("op_callstack"));
  expected.pop_back();
  expected[2].value = Attribute(2.5f);
  EXPECT_EQ(removed.attrs(), expected);
}

TEST(OpWireAttrs, CopiesMovesAndAssignmentsKeepTheAttributes) {
  const Program read = parse_program_proto(program_of(scale_op()), "p.pb");
  const Op& op = read.global_block().ops().front();
  Op decoded_copy = op;
  (void)decoded_copy.attrs();  // decoded, and then moved and assigned
  Op moved = std::move(decoded_copy);
  EXPECT_EQ(moved.attrs(), scale_attrs());
  Op assigned("other");
  assigned = moved;
  EXPECT_EQ(assigned.attrs(), scale_attrs());
  assigned = Op("other", {}, {}, {{"a", Attribute(int32_t{1})}});
  EXPECT_TRUE(assigned.wire_attrs().empty());
  ASSERT_EQ(assigned.attrs().size(), 1u);
  EXPECT_EQ(assigned.attrs()[0].name, "a");
}

// Attributes with another field between them are not one run of bytes:
// they are decoded when read.
TEST(OpWireAttrs, AttributesSplitByAnotherFieldAreDecodedWhenRead) {
  Pb op;
  op.str(3, "scale").msg(4, int_attr("op_role", 0)).varint(5, 1);  // is_target between
  op.msg(4, float_attr("scale", 2.0f));
  const Program read = parse_program_proto(program_of(op), "split.pb");
  const Op& split = read.global_block().ops().front();
  EXPECT_TRUE(split.wire_attrs().empty());
  EXPECT_EQ(split.attrs(), (std::vector<NamedAttribute>{{"op_role", Attribute(int32_t{0})},
                                                         {"scale", Attribute(2.0f)}}));
  EXPECT_TRUE(split.is_target);
}

// Finding one attribute reads only each Attr's first field when every name
// leads its message (WireAttrs::names_lead, as protobuf libraries write
// them); otherwise the last name field of each message is its name, as in
// protobuf, whether one attribute or all are read.
TEST(OpWireAttrs, NamesAreFoundWhereProtobufFindsThem) {
  const Program plain = parse_program_proto(program_of(scale_op()), "p.pb");
  EXPECT_TRUE(plain.global_block().ops().front().wire_attrs().names_lead);

  Pb renamed;  // "scale" named twice: protobuf keeps the last, "op_role"
  renamed.str(1, "scale").int32(2, 0).int32(3, 2).str(1, "op_role");
  Pb late;  // the name after the value
  late.int32(2, 1).f32(4, 1.5f).str(1, "scale");
  Pb op;
  op.str(3, "scale").msg(4, renamed).msg(4, late);
  const Program read = parse_program_proto(program_of(op), "names.pb");
  const Op& odd = read.global_block().ops().front();
  ASSERT_EQ(odd.wire_attrs().count, 2u);
  EXPECT_FALSE(odd.wire_attrs().names_lead);
  EXPECT_EQ(odd.attr_value("op_role"), Attribute(int32_t{2}));
  EXPECT_EQ(get_op_role(odd), 2);
  EXPECT_EQ(odd.attr_value("scale"), Attribute(1.5f));
  EXPECT_TRUE(odd.has_attr("op_role"));
  EXPECT_EQ(odd.attrs(), (std::vector<NamedAttribute>{{"op_role", Attribute(int32_t{2})},
                                                       {"scale", Attribute(1.5f)}}));
}

// The reader notes where op_role and op_role_var are (WireAttrs::op_role_at):
// reading them goes straight there, finds the first of each as the decoded
// list does, and knows them absent without looking.
TEST(OpWireAttrs, TheRolesAreReadWhereTheReaderNotedThem) {
  Pb op;
  op.str(3, "sgd").msg(4, float_attr("scale", 1.0f)).msg(4, int_attr("op_role", 2));
  op.msg(4, strings_attr("op_role_var", {"p", "p@GRAD"})).msg(4, int_attr("op_role", 5));
  const Program read = parse_program_proto(program_of(op), "roles.pb");
  const Op& o = read.global_block().ops().front();
  ASSERT_TRUE(o.wire_attrs().roles_noted);
  EXPECT_NE(o.wire_attrs().op_role_at, WireAttrs::kAbsent);
  // Its value was decoded as it was read: reading it touches no bytes.
  EXPECT_EQ(o.wire_attrs().op_role_kind, WireAttrs::RoleKind::kInt);
  EXPECT_EQ(o.wire_attrs().op_role_value, 2);
  EXPECT_EQ(get_op_role(o), 2);
  EXPECT_EQ(o.attr_value("op_role"), Attribute(int32_t{2}));
  EXPECT_EQ(*o.attr("op_role"), Attribute(int32_t{2}));

  Pb long_role;  // LONG (9), l (13)
  long_role.str(1, "op_role").int32(2, 9).int64(13, int64_t{1} << 33);
  Pb long_op;
  long_op.str(3, "sgd").msg(4, long_role);
  const Program longs = parse_program_proto(program_of(long_op), "long.pb");
  const Op& l = longs.global_block().ops().front();
  EXPECT_EQ(l.wire_attrs().op_role_kind, WireAttrs::RoleKind::kLong);
  EXPECT_EQ(l.attr_value("op_role"), Attribute(int64_t{1} << 33));
  EXPECT_EQ(l.attrs(), (std::vector<NamedAttribute>{{"op_role", Attribute(int64_t{1} << 33)}}));
  ASSERT_EQ(param_grad_pairs(o).size(), 1u);
  EXPECT_EQ(param_grad_pairs(o)[0].param, "p");

  Pb bare;
  bare.str(3, "relu").msg(4, float_attr("scale", 1.0f));
  const Program none = parse_program_proto(program_of(bare), "none.pb");
  const Op& n = none.global_block().ops().front();
  ASSERT_TRUE(n.wire_attrs().roles_noted);
  EXPECT_EQ(n.wire_attrs().op_role_at, WireAttrs::kAbsent);
  EXPECT_EQ(get_op_role(n), std::nullopt);
  EXPECT_FALSE(n.has_attr("op_role"));
  EXPECT_FALSE(n.has_attr("op_role_var"));
  EXPECT_TRUE(n.has_attr("scale"));
  EXPECT_TRUE(param_grad_pairs(n).empty());
}

// One attribute read from the bytes equals the same attribute of the decoded
// list, for each type whose value is one varint (read without the general
// decoder) and when a value field comes twice (the last wins, as in
// protobuf), with negative and 64-bit values.
TEST(OpWireAttrs, OneAttributeReadsAsTheDecodedList) {
  Pb twice, flag, big, block, negative;
  twice.str(1, "twice").int32(2, 0).int32(3, 1).int32(3, 7);  // INT, i twice
  flag.str(1, "flag").int32(2, 6).varint(10, 1);               // BOOLEAN
  big.str(1, "big").int32(2, 9).int64(13, int64_t{1} << 40);   // LONG
  block.str(1, "sub_block").int32(2, 8).int32(12, 3);          // BLOCK
  negative.str(1, "negative").int32(2, 0).int32(3, -5);        // INT
  Pb op;
  op.str(3, "while").msg(4, twice).msg(4, flag).msg(4, big).msg(4, block).msg(4, negative);
  op.msg(4, float_attr("scale", 0.5f));
  const Program read = parse_program_proto(program_of(op), "values.pb");
  const Op& o = read.global_block().ops().front();
  ASSERT_EQ(o.wire_attrs().count, 6u);
  const Program decoded = parse_program_proto(program_of(op), "values.pb");
  const std::vector<NamedAttribute>& all = decoded.global_block().ops().front().attrs();
  ASSERT_EQ(all.size(), 6u);
  for (const NamedAttribute& a : all) EXPECT_EQ(o.attr_value(a.name), a.value) << a.name;
  EXPECT_EQ(o.attr_value("twice"), Attribute(int32_t{7}));
  EXPECT_EQ(o.attr_value("flag"), Attribute(true));
  EXPECT_EQ(o.attr_value("big"), Attribute(int64_t{1} << 40));
  EXPECT_EQ(o.attr_value("sub_block"), Attribute(AttrType::BLOCK, int32_t{3}));
  EXPECT_EQ(o.attr_value("negative"), Attribute(int32_t{-5}));
}

// An op read once may be read by several threads at once (the executor's
// device threads): the first reads decode the attributes exactly once, and
// every thread sees the same list.
TEST(OpWireAttrs, ConcurrentFirstReadsSeeOneDecodedList) {
  for (int round = 0; round < 20; ++round) {
    const Program read = parse_program_proto(program_of(scale_op()), "p.pb");
    const Op& op = read.global_block().ops().front();
    std::vector<const std::vector<NamedAttribute>*> seen(4);
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < seen.size(); ++t)
      threads.emplace_back([&op, &seen, t] {
        const Attribute* scale = op.attr("scale");
        if (scale && *scale == Attribute(2.5f)) seen[t] = &op.attrs();
      });
    for (std::thread& t : threads) t.join();
    EXPECT_EQ(std::set(seen.begin(), seen.end()).size(), 1u);
    EXPECT_NE(seen[0], nullptr);
    EXPECT_EQ(*seen[0], scale_attrs());
  }
}

}  // namespace
}  // namespace ctp
