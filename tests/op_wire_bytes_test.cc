// Ops read from bytes that an owner keeps alive (load_program_file's mapped
// file) keep their whole OpDesc as those bytes (Op::set_wire_op): slots are
// decoded on first use, an op that nothing changed is written back as it
// came, whatever its field order, and any edit (slots, attributes, type,
// is_target) makes the writer encode it afresh. Such a program equals the
// one read without an owner, outlives its owner's other holders, and may be
// read from several threads at once.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "program_ir/atomic_file.h"
#include "program_ir/program_io.h"
#include "program_ir/proto_io.h"
#include "tests/pb_test_encoder.h"

namespace ctp {
namespace {

using testing_pb::Pb;

Pb slot(std::string_view name, std::initializer_list<std::string_view> args) {
  Pb s;
  s.str(1, name);
  for (std::string_view a : args) s.str(2, a);
  return s;
}

Pb int_attr(std::string_view name, int32_t v) {
  Pb a;
  a.str(1, name).int32(2, 0).int32(3, v);  // INT, i
  return a;
}

// An OpDesc in another field order than ctp's writer uses (type first,
// then an attribute, then the slots, outputs before inputs) with
// is_target written although it is false.
Pb odd_order_op() {
  Pb op;
  op.str(3, "elementwise_add").msg(4, int_attr("op_role", 1)).msg(4, int_attr("axis", -1));
  op.msg(2, slot("Out", {"z"})).msg(1, slot("X", {"x"})).msg(1, slot("Y", {"y", "y2"}));
  op.varint(5, 0);
  return op;
}

std::string program_of(std::initializer_list<Pb> ops) {
  return testing_pb::one_block_program({}, ops);
}

// The program read with its bytes kept alive by a shared copy.
Program read_owned(const std::string& bytes) {
  auto owner = std::make_shared<const std::string>(bytes);
  return parse_program_proto(*owner, "owned.pb", ProtoReadOptions{.owner = owner});
}

TEST(OpWireBytes, AnOwnedReadEqualsTheCopyingRead) {
  const std::string bytes = program_of({odd_order_op()});
  const Program owned = read_owned(bytes);
  const Program copied = parse_program_proto(bytes, "copied.pb");
  const Op& op = owned.global_block().ops().front();
  ASSERT_TRUE(op.unchanged_wire_bytes().has_value());
  EXPECT_FALSE(copied.global_block().ops().front().unchanged_wire_bytes().has_value());
  // Asked before the slots are decoded (read from the bytes), then after.
  for (int decoded = 0; decoded < 2; ++decoded) {
    EXPECT_TRUE(op.has_input("X")) << decoded;
    EXPECT_TRUE(op.has_input("Y")) << decoded;
    EXPECT_FALSE(op.has_input("Out")) << decoded;
    EXPECT_FALSE(op.has_input("Z")) << decoded;
    EXPECT_TRUE(op.has_output("Out")) << decoded;
    EXPECT_FALSE(op.has_output("X")) << decoded;
    EXPECT_EQ(op.input_args("Y"), (std::vector<std::string>{"y", "y2"})) << decoded;
    EXPECT_EQ(op.input_args("Out"), std::nullopt) << decoded;
    EXPECT_EQ(op.output_args("Out"), std::vector<std::string>{"z"}) << decoded;
    EXPECT_EQ(op.output_args("Y"), std::nullopt) << decoded;
    (void)op.inputs();
  }
  EXPECT_EQ(op.type, "elementwise_add");
  EXPECT_EQ(op.inputs(), (std::vector<Slot>{{"X", {"x"}}, {"Y", {"y", "y2"}}}));
  EXPECT_EQ(op.outputs(), (std::vector<Slot>{{"Out", {"z"}}}));
  EXPECT_EQ(op.input_arg_names(), (std::vector<std::string>{"x", "y", "y2"}));
  EXPECT_TRUE(op.is_target_explicit);
  EXPECT_EQ(owned, copied);  // last: comparing decodes the slots
}

// Slots asked for one by one, before any decoding, over many slot names
// (more than the 64 bits that summarise them, so names share bits) and a
// slot whose name is written twice (the last counts, as in protobuf): the
// same answers as the decoded slots give.
TEST(OpWireBytes, SlotsAskedForByNameMatchTheDecodedSlots) {
  Pb op;
  op.str(3, "many_slots");
  for (int i = 0; i < 100; ++i) {
    const std::string name = "In" + std::to_string(i);
    op.msg(1, slot(name, {name + "_arg"}));
    if (i % 3 == 0) op.msg(2, slot("Out" + std::to_string(i), {}));
  }
  Pb renamed;
  renamed.str(1, "Before").str(1, "After").str(2, "a1").str(2, "a2");
  op.msg(1, renamed);
  const std::string bytes = program_of({op});
  const Op copied = parse_program_proto(bytes, "copied.pb").global_block().ops().front();
  std::vector<std::string> names{"Before", "After", "X", "Out", "In", "in0", ""};
  for (int i = 0; i < 200; ++i) {
    names.push_back("In" + std::to_string(i));
    names.push_back("Out" + std::to_string(i));
  }
  const Program owned = read_owned(bytes);
  const Op& wire = owned.global_block().ops().front();
  for (const std::string& name : names) {
    const std::vector<std::string>* in = copied.input(name);
    const std::vector<std::string>* out = copied.output(name);
    EXPECT_EQ(wire.has_input(name), in != nullptr) << name;
    EXPECT_EQ(wire.has_output(name), out != nullptr) << name;
    EXPECT_EQ(wire.input_args(name), in ? std::optional(*in) : std::nullopt) << name;
    EXPECT_EQ(wire.output_args(name), out ? std::optional(*out) : std::nullopt) << name;
  }
  EXPECT_EQ(wire.input_args("After"), (std::vector<std::string>{"a1", "a2"}));
  EXPECT_FALSE(wire.has_input("Before"));
  EXPECT_EQ(wire, copied);
}

// The owned read writes the input's bytes; the copying read encodes each op
// afresh in the writer's field order, which here is other bytes.
TEST(OpWireBytes, AnUnchangedOpIsWrittenAsItsBytes) {
  const std::string bytes = program_of({odd_order_op(), odd_order_op()});
  const Program owned = read_owned(bytes);
  (void)owned.global_block().ops().front().inputs();  // decoding is not a change
  (void)owned.global_block().ops().front().attrs();
  EXPECT_EQ(serialize_program_proto(owned), bytes);
  const std::string afresh = serialize_program_proto(parse_program_proto(bytes, "c.pb"));
  EXPECT_NE(afresh, bytes);
  EXPECT_EQ(parse_program_proto(afresh, "afresh.pb"), owned);
}

// Each kind of edit makes the op be encoded afresh, with the edit: the
// owned program writes what the copying read, edited the same way, writes.
TEST(OpWireBytes, AnyEditEncodesTheOpAfresh) {
  const std::string bytes = program_of({odd_order_op(), odd_order_op()});
  const std::vector<std::function<void(Op&)>> edits = {
      [](Op& op) { op.set_input("X", {"w"}); },
      [](Op& op) { op.mutable_outputs().push_back({"Extra", {"e"}}); },
      [](Op& op) { op.set_attr("axis", Attribute(int32_t{0})); },
      [](Op& op) { (void)op.mutable_attrs(); },
      [](Op& op) { op.type = "elementwise_sub"; },
      [](Op& op) { op.is_target = true; },
      [](Op& op) { op.is_target_explicit = false; },
  };
  for (std::size_t i = 0; i < edits.size(); ++i) {
    Program owned = read_owned(bytes);
    Program copied = parse_program_proto(bytes, "copied.pb");
    edits[i](owned.global_block().ops().front());
    edits[i](copied.global_block().ops().front());
    EXPECT_FALSE(owned.global_block().ops().front().unchanged_wire_bytes().has_value()) << i;
    EXPECT_EQ(owned, copied) << i;
    const std::string written = serialize_program_proto(owned);
    EXPECT_NE(written, bytes) << i;
    // The edited op is encoded afresh, as the copying read's; the other one
    // is still its bytes.
    EXPECT_EQ(parse_program_proto(written, "again.pb"),
              parse_program_proto(serialize_program_proto(copied), "copied-again.pb"))
        << i;
    const std::string op_bytes = odd_order_op().bytes();
    EXPECT_EQ(written.find(op_bytes), written.rfind(op_bytes)) << i;
    EXPECT_NE(written.find(op_bytes), std::string::npos) << i;
  }
}

// Ops a rewrite copies keep the bytes (and their owner) alive: a copy
// outlives the program it came from and the owner's other holders.
TEST(OpWireBytes, ACopiedOpOutlivesItsProgram) {
  std::vector<Op> kept;
  std::string expected;
  {
    auto owner = std::make_shared<std::string>(program_of({odd_order_op()}));
    const Program owned = parse_program_proto(*owner, "owned.pb", ProtoReadOptions{.owner = owner});
    kept.push_back(owned.global_block().ops().front());
    Op moved = owned.global_block().ops().front();
    kept.push_back(std::move(moved));
    Op assigned("other");
    assigned = kept.front();
    kept.push_back(assigned);
    expected = *owner;
    owner.reset();
  }
  Program rebuilt;
  rebuilt.blocks.emplace_back(0, -1);
  for (const Op& op : kept) {
    ASSERT_TRUE(op.unchanged_wire_bytes().has_value());
    EXPECT_EQ(op.inputs(), (std::vector<Slot>{{"X", {"x"}}, {"Y", {"y", "y2"}}}));
    rebuilt.global_block().append_op(op);
  }
  Program one;
  one.blocks.emplace_back(0, -1);
  one.global_block().append_op(kept.back());
  EXPECT_EQ(serialize_program_proto(one), expected);
}

// An op read with an owner holds that owner once, for its OpDesc: its
// attribute bytes lie inside and need no share of their own. When a slot
// edit lets the OpDesc go, the attributes keep the owner: an edited copy
// still decodes and writes them after the program and every other holder
// of the input are gone (ASan sees a dangling read).
TEST(OpWireBytes, AnEditedCopyKeepsItsAttributeBytesAlive) {
  std::vector<Op> kept;
  std::weak_ptr<std::string> watch;
  {
    auto owner = std::make_shared<std::string>(program_of({odd_order_op()}));
    watch = owner;
    const Program owned = parse_program_proto(*owner, "owned.pb", ProtoReadOptions{.owner = owner});
    kept.push_back(owned.global_block().ops().front());
    kept.push_back(owned.global_block().ops().front());
    kept.push_back(owned.global_block().ops().front());
  }
  EXPECT_FALSE(watch.expired());  // the ops hold the input
  kept[0].set_input("X", {"w"});
  kept[1].mutable_outputs().push_back({"Extra", {"e"}});
  kept[2].set_output("Out", {"z2"});
  EXPECT_FALSE(watch.expired());  // none holds its OpDesc now
  for (const Op& op : kept) {
    EXPECT_FALSE(op.unchanged_wire_bytes().has_value());
    EXPECT_TRUE(op.has_attr("axis"));
    EXPECT_EQ(op.attr_value("axis"), Attribute(int32_t{-1}));
    ASSERT_EQ(op.attrs().size(), 2u);
    EXPECT_EQ(op.attrs()[0].name, "op_role");
  }
  Program rebuilt;
  rebuilt.blocks.emplace_back(0, -1);
  for (const Op& op : kept) rebuilt.global_block().append_op(op);
  const Program back = parse_program_proto(serialize_program_proto(rebuilt), "back.pb");
  EXPECT_EQ(back, rebuilt);
  kept.clear();
  rebuilt = Program();
  EXPECT_TRUE(watch.expired());  // and let it go with the last of them
}

// An op with a field ctp does not know, or with attributes split by another
// field, is decoded as it is read, and still round-trips.
TEST(OpWireBytes, OpsThatCannotStayBytesAreDecoded) {
  Pb unknown = odd_order_op();
  unknown.varint(99, 7);
  Pb split;
  split.str(3, "scale").msg(4, int_attr("op_role", 0)).varint(5, 1).msg(4, int_attr("a", 2));
  split.msg(1, slot("X", {"x"}));
  const std::string bytes = program_of({unknown, split});
  const Program owned = read_owned(bytes);
  for (const Op& op : owned.global_block().ops())
    EXPECT_FALSE(op.unchanged_wire_bytes().has_value()) << op.type;
  EXPECT_EQ(owned, parse_program_proto(bytes, "copied.pb"));
  EXPECT_EQ(owned.global_block().ops().back().inputs(), (std::vector<Slot>{{"X", {"x"}}}));
}

// Bad slots are refused where they are read, naming the op and slot, though
// an owned read decodes them only later.
TEST(OpWireBytes, BadSlotsAreRefusedAsTheyAreRead) {
  Pb bad_slot;
  bad_slot.str(2, "x");  // arguments without a parameter
  Pb op;
  op.str(3, "relu").msg(1, bad_slot);
  const std::string bytes = program_of({odd_order_op(), op});
  try {
    read_owned(bytes);
    FAIL() << "read a slot without a parameter";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("op 1 'relu', input 0"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("has no parameter"), std::string::npos) << e.what();
  }
  Pb unknown_in_slot = slot("X", {"x"});
  unknown_in_slot.varint(3, 1);
  Pb op2;
  op2.str(3, "relu").msg(1, unknown_in_slot);
  EXPECT_THROW(read_owned(program_of({op2})), Error);
}

// load_program_file reads a file this way: its ops keep the mapped bytes.
TEST(OpWireBytes, AFileIsReadKeepingItsBytes) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("ctp_wire_bytes_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "p.pb").string();
  const std::string bytes = program_of({odd_order_op(), odd_order_op()});
  write_file_atomically(path, bytes);
  const Program loaded = load_program_file(path);
  fs::remove_all(dir);  // the mapping stays valid
  ASSERT_EQ(loaded.global_block().op_count(), 2u);
  EXPECT_TRUE(loaded.global_block().ops().front().unchanged_wire_bytes().has_value());
  EXPECT_EQ(serialize_program_proto(loaded), bytes);
  EXPECT_EQ(loaded, parse_program_proto(bytes, "p.pb"));
}

// Several threads asking an owned op for its slots at once (the executor's
// device threads) decode them once and all see the same lists.
TEST(OpWireBytes, ConcurrentFirstReadsSeeOneDecodedSlotList) {
  const std::string bytes = program_of({odd_order_op()});
  for (int round = 0; round < 20; ++round) {
    const Program owned = read_owned(bytes);
    const Op& op = owned.global_block().ops().front();
    std::vector<const std::vector<Slot>*> seen(4);
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < seen.size(); ++t)
      threads.emplace_back([&op, &seen, t] {
        if (op.input("Y") && op.input("Y")->size() == 2) seen[t] = &op.inputs();
      });
    for (std::thread& t : threads) t.join();
    EXPECT_EQ(std::set(seen.begin(), seen.end()).size(), 1u);
    ASSERT_NE(seen[0], nullptr);
    EXPECT_EQ(seen[0]->size(), 2u);
  }
}

}  // namespace
}  // namespace ctp
