// libprotobuf as the independent check of ctp's hand-written wire code:
// classes generated from program_ir/framework.proto under another package
// (tests/libprotobuf/) read the same bytes as ctp, and must hold the same
// message, field by field and presence included; and ctp must give back the
// bytes libprotobuf writes. On the real Paddle programs (skipped, visibly,
// when ../shared/realworld is absent) and on random programs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <memory>

#include "bench/training_program.h"
#include "program_ir/atomic_file.h"
#include "program_ir/proto_io.h"
#include "program_ir/scalar.h"
#include "tests/libprotobuf/program_compare.h"
#include "tests/random_program.h"
#include "tests/realworld_files.h"
#include "tests/same_bytes.h"

namespace ctp {
namespace {

namespace check = libprotobuf_check;
using ::testing::HasSubstr;

TEST(LibprotobufCheck, RealProgramsReadTheSameAndWriteTheSameBytes) {
  const test::RealWorld world = test::find_realworld();
  if (world.files.empty()) GTEST_SKIP() << world.skip_reason;
  std::size_t checked = 0;
  for (const test::RealWorldFile& file : world.files) {
    if (!file.decodable) continue;
    SCOPED_TRACE(file.path);
    const std::string bytes = read_file(file.path);
    check::pb::ProgramDesc message;
    ASSERT_TRUE(check::parse(bytes, message)) << "libprotobuf cannot read it";
    const Program program = parse_program_proto(bytes, file.path);
    EXPECT_EQ(check::difference(program, message), "");
    // Paddle wrote these files with libprotobuf: canonical bytes, which ctp
    // writes back exactly as libprotobuf does.
    EXPECT_TRUE(test::same_bytes(message.SerializeAsString(), bytes)) << "libprotobuf's encoding";
    EXPECT_TRUE(test::same_bytes(serialize_program_proto(program), message.SerializeAsString()))
        << "ctp's encoding";
    ++checked;
  }
  EXPECT_GE(checked, 40u);
}

TEST(LibprotobufCheck, RandomProgramsReadTheSameAndWriteTheSameBytes) {
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const Program original = test::RandomProgram(seed).make();
    const std::string bytes = serialize_program_proto(original);
    check::pb::ProgramDesc message;
    ASSERT_TRUE(check::parse(bytes, message));
    ASSERT_EQ(check::difference(parse_program_proto(bytes, "random.pb"), message), "");
    // libprotobuf writes unknown fields last; from there on ctp keeps its
    // bytes exactly.
    const std::string canonical = message.SerializeAsString();
    const Program from_canonical = parse_program_proto(canonical, "canonical.pb");
    ASSERT_TRUE(test::same_bytes(serialize_program_proto(from_canonical), canonical));
    ASSERT_EQ(check::difference(from_canonical, message), "");
  }
}

// The comparison finds what differs (or the tests above could not fail).
// A block of tens of thousands of ops is sized on two threads (the second
// half back to front; proto_writer.cc): ctp writes what libprotobuf writes,
// for ops built in memory, each of its own length, and for ops read as
// bytes with every 97th edited (encoded afresh, another length).
TEST(LibprotobufCheck, ALargeBlockSizedOnTwoThreadsIsWrittenAsLibprotobufWritesIt) {
  const bench::TrainingPrograms programs = bench::make_training_programs(20000);
  ASSERT_GE(programs.main.global_block().op_count(), 16384u);
  const auto bytes = std::make_shared<const std::string>(serialize_program_proto(programs.main));
  check::pb::ProgramDesc message;
  ASSERT_TRUE(check::parse(*bytes, message));
  EXPECT_EQ(check::difference(programs.main, message), "");
  EXPECT_TRUE(test::same_bytes(message.SerializeAsString(), *bytes));

  Program read = parse_program_proto(*bytes, "main.pb", ProtoReadOptions{.owner = bytes});
  int64_t i = 0;
  for (Op& op : read.global_block().ops())
    if (i++ % 97 == 0) op.set_attr("edited", Attribute(i));
  const std::string edited = serialize_program_proto(read);
  check::pb::ProgramDesc edited_message;
  ASSERT_TRUE(check::parse(edited, edited_message));
  EXPECT_EQ(check::difference(read, edited_message), "");
  EXPECT_TRUE(test::same_bytes(edited_message.SerializeAsString(), edited));
}

TEST(LibprotobufCheck, TheComparisonSeesEachKindOfDifference) {
  Program p = Program::with_global_block();
  Block& b = p.global_block();
  b.add_var(Var{.name = "x", .shape = {2, 3}, .lod_level = 0});
  Op op("scale", {{"X", {"x"}}}, {{"Out", {"x"}}});
  op.set_attr("scale", 0.5f);
  op.set_attr("v", Attribute::scalar(encode_scalar(Scalar{.type = Scalar::Type::LONG, .i = 7})));
  b.append_op(op);
  p.version = 3;
  check::pb::ProgramDesc message;
  ASSERT_TRUE(check::parse(serialize_program_proto(p), message));
  ASSERT_EQ(check::difference(p, message), "");

  auto differs = [&](const std::function<void(Program&)>& change) {
    Program q = p;
    change(q);
    return check::difference(q, message);
  };
  EXPECT_THAT(differs([](Program& q) { q.global_block().mutable_vars().front().lod_level.reset(); }),
              HasSubstr("block 0, var 'x': lod_level: set in libprotobuf only"));
  EXPECT_THAT(differs([](Program& q) {
                q.global_block().mutable_vars().front().explicit_defaults.persistable = true;
              }),
              HasSubstr("persistable: set in ctp only"));
  EXPECT_THAT(differs([](Program& q) { q.global_block().mutable_vars().front().shape = {2}; }),
              HasSubstr("dims: ctp [2], libprotobuf [2, 3]"));
  EXPECT_THAT(differs([](Program& q) {
                q.global_block().mutable_vars().front().tensor_desc_absent = true;
              }),
              HasSubstr("tensor description: libprotobuf only"));
  EXPECT_THAT(differs([](Program& q) { q.global_block().ops().front().set_attr("scale", 0.25f); }),
              HasSubstr("attr 'scale': f differs"));
  EXPECT_THAT(differs([](Program& q) {
                q.global_block().ops().front().set_attr(
                    "v", Attribute::scalar(encode_scalar(Scalar{.type = Scalar::Type::LONG, .i = 8})));
              }),
              HasSubstr("attr 'v': scalar differ"));
  EXPECT_THAT(differs([](Program& q) { q.global_block().unknown_fields = UnknownFields("\x48\x01"); }),
              HasSubstr("block 0: BlockDesc's unknown fields differ"));
  EXPECT_THAT(differs([](Program& q) { q.version_number_absent = true; }),
              HasSubstr("version.version: set in libprotobuf only"));
}


// libprotobuf reads a field key and a length in at most 5 bytes, even when
// the extra bytes would add only zero bits; ctp refuses what libprotobuf
// refuses (the first case is what fuzz_proto_vs_libprotobuf found).
TEST(LibprotobufCheck, OverlongKeysAndLengthsAreRefusedByBoth) {
  const std::vector<std::pair<std::string, std::string>> refused = {
      {std::string("\x80\x80\x03\x00\xe1\xff\x80\x80\x80\x00\0\0\0\0\0\0\x11\x40", 18),
       "field key longer than 5 bytes (at byte 4)"},
      {std::string("\x88\x80\x80\x80\x80\x00\x01", 7), "field key longer than 5 bytes (at byte 0)"},
      {std::string("\x0a\x8d\x80\x80\x80\x80\x00"
                   "\x08\x00\x10\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",
                   20),
       "length longer than 5 bytes (at byte 1)"},
  };
  for (const auto& [bytes, reason] : refused) {
    check::pb::ProgramDesc message;
    EXPECT_FALSE(check::parse(bytes, message)) << reason;
    try {
      parse_program_proto(bytes, "overlong.pb");
      ADD_FAILURE() << "ctp read bytes that libprotobuf refuses: " << reason;
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr(reason));
    }
  }
  // The longest key and length libprotobuf takes, 5 bytes each, ctp takes too.
  // Block 0 (idx 0, parent_idx -1) under a 5-byte key and a 5-byte length.
  const std::string longest("\x8a\x80\x80\x80\x00\x8d\x80\x80\x80\x00"
                            "\x08\x00\x10\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",
                            23);
  check::pb::ProgramDesc message;
  ASSERT_TRUE(check::parse(longest, message));
  EXPECT_EQ(check::difference(parse_program_proto(longest, "longest.pb"), message), "");
}

}  // namespace
}  // namespace ctp
