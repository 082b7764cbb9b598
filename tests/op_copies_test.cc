// packed_op_copies: copies of one op that differ in one input slot share
// every other byte (WireOp::spliced). Each must equal the op packed alone,
// read the same through every accessor, be written as the same bytes, and
// become an ordinary op again when edited, leaving the others as they were.
// Also built into the ThreadSanitizer tests (first reads from several
// threads at once).
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "program_ir/op_packing.h"
#include "program_ir/op_role.h"
#include "program_ir/program.h"
#include "program_ir/proto_io.h"

namespace ctp {
namespace {

// An adam copy as all_gather makes them: Grad, the slot that varies, last.
struct AdamParts {
  std::vector<Slot> inputs{{"Param", {"fc_0.w_0"}},
                           {"LearningRate", {"learning_rate_0"}},
                           {"Moment1", {"fc_0.w_0_moment1_0"}},
                           {"Grad", {}}};
  std::vector<Slot> outputs{{"ParamOut", {"fc_0.w_0"}}, {"Moment1Out", {"fc_0.w_0_moment1_0"}}};
  std::vector<NamedAttribute> attrs{{"beta1", Attribute(0.9f)},
                                    {"lazy_mode", Attribute(false)},
                                    {std::string(kOpRoleAttr), Attribute(op_role::kForward)}};
  OpParts parts() const {
    return OpParts{.type = "adam", .inputs = inputs, .outputs = outputs, .attrs = attrs};
  }
  // The copy reading `grad`, packed alone.
  Op alone(const std::string& grad) const {
    std::vector<Slot> with_grad = inputs;
    with_grad.back().args = {grad};
    return packed_op(
        OpParts{.type = "adam", .inputs = with_grad, .outputs = outputs, .attrs = attrs});
  }
};

const std::vector<std::string> kPieces = {"fc_0.w_0_0", "fc_0.w_0_1", "fc_0.w_0_12"};

std::string bytes_of(const std::vector<Op>& ops) {
  Program program = Program::with_global_block();
  for (const Op& op : ops) program.global_block().append_op(op);
  return serialize_program_proto(program);
}

TEST(OpCopies, EachCopyIsTheOpPackedAloneAndWrittenAsItsBytes) {
  const AdamParts adam;
  const std::vector<Op> copies = packed_op_copies(adam.parts(), 3, kPieces);
  ASSERT_EQ(copies.size(), kPieces.size());
  std::vector<Op> alone;
  for (std::size_t i = 0; i < kPieces.size(); ++i) {
    SCOPED_TRACE(kPieces[i]);
    alone.push_back(adam.alone(kPieces[i]));
    const Op& copy = copies[i];
    EXPECT_EQ(copy, alone.back());
    EXPECT_FALSE(copy.unchanged_wire_bytes().has_value());  // no single run
    const std::optional<WireRuns> runs = copy.unchanged_wire_runs();
    ASSERT_TRUE(runs.has_value());
    ASSERT_EQ(runs->count, 3u);
    std::string joined;
    for (std::size_t r = 0; r < runs->count; ++r) joined += runs->runs[r];
    EXPECT_EQ(joined, *alone.back().unchanged_wire_bytes());
    // Reads: slots one at a time, names only, attributes and the role.
    EXPECT_EQ(copy.input_args("Grad"), std::vector<std::string>{kPieces[i]});
    EXPECT_EQ(copy.input_args("Param"), std::vector<std::string>{"fc_0.w_0"});
    EXPECT_EQ(copy.output_args("Moment1Out"), std::vector<std::string>{"fc_0.w_0_moment1_0"});
    EXPECT_TRUE(copy.has_input("Moment1"));
    EXPECT_FALSE(copy.has_input("Moment2"));
    EXPECT_FALSE(copy.has_output("Grad"));
    EXPECT_EQ(copy.attr_value("beta1"), Attribute(0.9f));
    EXPECT_EQ(copy.wire_attrs().op_role_value, op_role::kForward);
    EXPECT_EQ(copy.inputs(), alone.back().inputs());
  }
  // The copies share their bytes but the Grad field's.
  EXPECT_EQ(copies[0].unchanged_wire_runs()->runs[0].data(),
            copies[2].unchanged_wire_runs()->runs[0].data());
  EXPECT_EQ(copies[0].unchanged_wire_runs()->runs[2].data(),
            copies[1].unchanged_wire_runs()->runs[2].data());
  // A program of them is written as the one of the ops packed alone, and
  // reads back as it.
  const std::string bytes = bytes_of(copies);
  EXPECT_EQ(bytes, bytes_of(alone));
  const Program read = parse_program_proto(bytes, "copies.pb");
  EXPECT_EQ(std::vector<Op>(read.global_block().ops().begin(), read.global_block().ops().end()),
            alone);
}

TEST(OpCopies, AnEditedCopyIsItsOwnOpAndTheOthersStay) {
  const AdamParts adam;
  std::vector<Op> copies = packed_op_copies(adam.parts(), 3, kPieces);
  const Op copied = copies[1];  // a copy of a copy shares the bytes too
  copies[1].set_input("Grad", {"renamed"});
  copies[2].set_attr("beta1", Attribute(0.5f));
  copies[0].type = "lamb";
  EXPECT_FALSE(copies[0].unchanged_wire_runs().has_value());
  EXPECT_FALSE(copies[1].unchanged_wire_runs().has_value());
  EXPECT_FALSE(copies[2].unchanged_wire_runs().has_value());
  EXPECT_EQ(copies[1].input_args("Grad"), std::vector<std::string>{"renamed"});
  EXPECT_EQ(copies[1].input_args("Param"), std::vector<std::string>{"fc_0.w_0"});
  EXPECT_EQ(copies[2].attr_value("beta1"), Attribute(0.5f));
  EXPECT_EQ(copies[2].input_args("Grad"), std::vector<std::string>{kPieces[2]});
  EXPECT_EQ(copied, adam.alone(kPieces[1]));
  EXPECT_TRUE(copied.unchanged_wire_runs().has_value());
  // Written and read back, each edit shows.
  const Program read = parse_program_proto(bytes_of(copies), "edited.pb");
  std::vector<Op> expected = {adam.alone(kPieces[0]), adam.alone(kPieces[1]),
                              adam.alone(kPieces[2])};
  expected[0].type = "lamb";
  expected[1].set_input("Grad", {"renamed"});
  expected[2].set_attr("beta1", Attribute(0.5f));
  EXPECT_EQ(std::vector<Op>(read.global_block().ops().begin(), read.global_block().ops().end()),
            expected);
}

TEST(OpCopies, NoVarsNoCopiesAndABadSlotIsAnInternalError) {
  const AdamParts adam;
  EXPECT_TRUE(packed_op_copies(adam.parts(), 3, {}).empty());
  EXPECT_THROW(packed_op_copies(adam.parts(), 4, kPieces), Error);
}

// Several threads reading one copy's slots and attributes first at once.
TEST(OpCopies, FirstReadsFromSeveralThreadsAgree) {
  const AdamParts adam;
  const std::vector<Op> copies = packed_op_copies(adam.parts(), 3, kPieces);
  const Op expected = adam.alone(kPieces[2]);
  std::vector<std::thread> readers;
  std::vector<int> same(4, 0);
  for (int t = 0; t < 4; ++t)
    readers.emplace_back([&, t] {
      same[t] = copies[2].inputs() == expected.inputs() &&
                copies[2].outputs() == expected.outputs() &&
                copies[2].attrs() == expected.attrs();
    });
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(same, std::vector<int>(4, 1));
}

}  // namespace
}  // namespace ctp
