// Copies of one op held by a block as one (Block::insert_op_copies): the
// block counts them, gives them as ops of its list, in order, as soon as
// anything asks for its ops or edits beside the first, and is then the block
// the copies inserted one by one make; the writer writes them as they are
// held, on one thread or two, the same bytes. Also built into the
// ThreadSanitizer tests (const calls that insert them, beside each other).
#include <gtest/gtest.h>

#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "program_ir/op_packing.h"
#include "program_ir/op_role.h"
#include "program_ir/program.h"
#include "program_ir/proto_io.h"
#include "tests/same_bytes.h"

namespace ctp {
namespace {

// An adam op as all_gather copies it: Grad, the slot that varies, last.
struct AdamCopies {
  std::vector<Slot> inputs{{"Param", {"w"}}, {"LearningRate", {"lr"}}, {"Grad", {}}};
  std::vector<Slot> outputs{{"ParamOut", {"w"}}};
  std::vector<NamedAttribute> attrs{{"beta1", Attribute(0.9f)},
                                    {std::string(kOpRoleAttr), Attribute(op_role::kForward)}};
  std::vector<std::string> pieces;
  explicit AdamCopies(const std::string& param, int n) {
    inputs[0].args = {param};
    outputs[0].args = {param};
    for (int i = 0; i < n; ++i) pieces.push_back(param + "_" + std::to_string(i));
  }
  OpParts parts() const {
    return OpParts{.type = "adam", .inputs = inputs, .outputs = outputs, .attrs = attrs};
  }
  OpCopies held() const { return pack_op_copies(parts(), 2, pieces); }
  std::vector<Op> ops() const { return packed_op_copies(parts(), 2, pieces); }
};

Op op_named(const std::string& type) {
  return packed_op(OpParts{.type = type});
}

// Two programs of ops "a", "b", "c": one holding `copies` before "b", the
// other with them inserted one by one.
struct HeldAndInserted {
  Program held = Program::with_global_block();
  Program inserted = Program::with_global_block();
  Block::OpHandle held_first;
  explicit HeldAndInserted(const AdamCopies& copies) {
    for (Program* p : {&held, &inserted})
      for (const char* type : {"a", "b", "c"}) p->global_block().append_op(op_named(type));
    Block& h = held.global_block();
    held_first = h.insert_op_copies(std::next(h.ops_holding_copies().begin()), copies.held());
    Block& i = inserted.global_block();
    const Block::OpHandle b = std::next(i.ops().begin());
    for (Op& op : copies.ops()) i.insert_op(b, std::move(op));
  }
};

TEST(HeldCopies, TheBlockCountsThemAndGivesThemAsOpsWhenAsked) {
  const AdamCopies copies("w", 5);
  HeldAndInserted programs(copies);
  Block& block = programs.held.global_block();
  EXPECT_EQ(block.op_count(), 8u);
  EXPECT_EQ(block.ops_holding_copies().size(), 4u);
  ASSERT_TRUE(programs.held_first->heads_held_copies());
  ASSERT_NE(block.copies_held_after(*programs.held_first), nullptr);
  EXPECT_EQ(block.copies_held_after(*programs.held_first)->size(), 5u);
  // Asked for its ops, the block holds none any more.
  EXPECT_EQ(block.ops(), programs.inserted.global_block().ops());
  EXPECT_EQ(block.ops_holding_copies().size(), 8u);
  EXPECT_EQ(block.op_count(), 8u);
  EXPECT_FALSE(programs.held_first->heads_held_copies());
  EXPECT_EQ(block.copies_held_after(*programs.held_first), nullptr);
}

TEST(HeldCopies, TheWriterWritesThemAsHeldAndHoldsThemStill) {
  const AdamCopies copies("w", 18);
  const HeldAndInserted programs(copies);
  EXPECT_TRUE(test::same_bytes(serialize_program_proto(programs.held),
                               serialize_program_proto(programs.inserted)));
  EXPECT_EQ(programs.held.global_block().ops_holding_copies().size(), 4u);
  // A copy of the block and a comparison see every op.
  const Program copy = programs.held;
  EXPECT_EQ(copy, programs.inserted);
  EXPECT_EQ(programs.held, programs.inserted);
}

TEST(HeldCopies, AnEditBesideTheFirstGivesThemFirst) {
  const AdamCopies copies("w", 4);
  {
    HeldAndInserted programs(copies);
    Block& held = programs.held.global_block();
    held.insert_op_after(programs.held_first, op_named("x"));
    Block& inserted = programs.inserted.global_block();
    inserted.insert_op_after(std::next(inserted.ops().begin()), op_named("x"));
    EXPECT_EQ(held.ops(), inserted.ops());
  }
  {
    HeldAndInserted programs(copies);
    programs.held.global_block().erase_op(programs.held_first);
    Block& inserted = programs.inserted.global_block();
    inserted.erase_op(std::next(inserted.ops().begin()));
    EXPECT_EQ(programs.held.global_block().ops(), inserted.ops());
    EXPECT_EQ(programs.held.global_block().op_count(), 6u);
  }
}

TEST(HeldCopies, ConstCallsBesideEachOtherGiveThemOnce) {
  const AdamCopies copies("w", 18);
  for (int round = 0; round < 20; ++round) {
    const HeldAndInserted programs(copies);
    const Block& block = programs.held.global_block();
    std::size_t seen[2] = {0, 0};
    std::thread other([&] { seen[1] = block.ops().size(); });
    seen[0] = block.ops().size();
    other.join();
    EXPECT_EQ(seen[0], 21u);
    EXPECT_EQ(seen[1], 21u);
    EXPECT_EQ(block.op_count(), 21u);
  }
}

// Copies that share no bytes (pack_op_copies gives them one op each: here,
// of a type longer than a WireOp can say, held decoded) go into the block
// as ops of its list, and are written as the ops inserted one by one.
TEST(HeldCopies, CopiesThatShareNoBytesGoInAsOps) {
  const std::string long_type(70000, 't');
  const AdamCopies adam("w", 3);
  const OpParts parts{
      .type = long_type, .inputs = adam.inputs, .outputs = adam.outputs, .attrs = adam.attrs};
  Program held = Program::with_global_block();
  Program inserted = Program::with_global_block();
  held.global_block().insert_op_copies(held.global_block().ops_holding_copies().end(),
                                       pack_op_copies(parts, 2, adam.pieces));
  for (Op& op : packed_op_copies(parts, 2, adam.pieces))
    inserted.global_block().append_op(std::move(op));
  EXPECT_EQ(held.global_block().ops_holding_copies().size(), 3u);
  EXPECT_TRUE(test::same_bytes(serialize_program_proto(held), serialize_program_proto(inserted)));
}

// A block large enough for the writer's two-thread size pass, holding
// copies in both of its halves and after its last op: the same bytes as
// the copies inserted one by one.
TEST(HeldCopies, ALargeBlockSizedOnTwoThreadsWritesThemInOrder) {
  Program held = Program::with_global_block();
  Program inserted = Program::with_global_block();
  for (int i = 0; i < 20000; ++i)
    for (Program* p : {&held, &inserted})
      p->global_block().append_op(op_named(i % 7 == 0 ? "scale" : "relu"));
  // Last first, so that each position means the same op in both blocks.
  for (const int at : {19999, 15000, 9000, 10}) {
    const AdamCopies copies("p" + std::to_string(at), 3 + at % 5);
    Block& h = held.global_block();
    h.insert_op_copies(std::next(h.ops_holding_copies().begin(), at), copies.held());
    Block& i = inserted.global_block();
    const Block::OpHandle before = std::next(i.ops().begin(), at);
    for (Op& op : copies.ops()) i.insert_op(before, std::move(op));
  }
  ASSERT_EQ(held.global_block().op_count(), inserted.global_block().op_count());
  EXPECT_TRUE(test::same_bytes(serialize_program_proto(held), serialize_program_proto(inserted)));
}

}  // namespace
}  // namespace ctp
