// A large block's vars and ops are parsed on several threads
// (ProtoReadOptions::threads, program_ir/proto_block_read.cc): the program,
// and the error for bad bytes anywhere in it, are those of reading on one
// thread, for any number of threads, with and without an owner.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "program_ir/error.h"
#include "program_ir/proto_io.h"
#include "tests/pb_test_encoder.h"

namespace ctp {
namespace {

using testing_pb::Pb;

constexpr int kVars = 12000;
constexpr int kOps = 6000;

Pb var_desc(const std::string& name) {
  Pb tensor, lod, type, var;
  tensor.int32(1, 5).int64(2, -1).int64(2, 4);  // FP32, dims
  lod.msg(1, tensor);
  type.int32(1, 7).msg(3, lod);  // LOD_TENSOR, lod_tensor
  var.str(1, name).msg(2, type).varint(3, 0);  // persistable: false, written
  return var;
}

Pb op_desc(int i) {
  Pb x, out, role, scale, op;
  x.str(1, "X").str(2, "v" + std::to_string(i));
  out.str(1, "Out").str(2, "v" + std::to_string(i + 1));
  role.str(1, "op_role").int32(2, 0).int32(3, i % 3);
  scale.str(1, "scale").int32(2, 1).f32(4, 0.5f);
  op.msg(1, x).msg(2, out).str(3, "scale").msg(4, role).msg(4, scale);
  return op;
}

// A program of one block: kVars vars then kOps ops, with `edit` applied to
// the var or op messages on their way (it may replace one).
struct Edits {
  std::function<void(int, Pb&)> var = [](int, Pb&) {};
  std::function<void(int, Pb&)> op = [](int, Pb&) {};
  std::string tail;  // bytes appended to the block (a truncated field)
};

std::string big_program(const Edits& edits = {}) {
  Pb block;
  block.int32(1, 0).int32(2, -1);
  for (int i = 0; i < kVars; ++i) {
    Pb v = var_desc("v" + std::to_string(i));
    edits.var(i, v);
    block.msg(3, v);
  }
  for (int i = 0; i < kOps; ++i) {
    Pb o = op_desc(i);
    edits.op(i, o);
    block.msg(4, o);
  }
  std::string block_bytes = block.bytes() + edits.tail;
  Pb program;
  program.str(1, block_bytes);
  return program.bytes();
}

std::string error_of(const std::string& bytes, unsigned threads, bool owned) {
  auto owner = std::make_shared<const std::string>(bytes);
  try {
    parse_program_proto(*owner, "big.pb",
                        ProtoReadOptions{.owner = owned ? owner : nullptr, .threads = threads});
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(ProtoParallelRead, AnyNumberOfThreadsReadsTheSameProgram) {
  const std::string bytes = big_program();
  const Program one = parse_program_proto(bytes, "big.pb", ProtoReadOptions{.threads = 1});
  ASSERT_EQ(one.global_block().var_count(), std::size_t{kVars});
  ASSERT_EQ(one.global_block().op_count(), std::size_t{kOps});
  EXPECT_EQ(one.global_block().vars().back().name, "v" + std::to_string(kVars - 1));
  for (unsigned threads : {2u, 3u, 8u}) {
    const Program many = parse_program_proto(bytes, "big.pb", ProtoReadOptions{.threads = threads});
    EXPECT_EQ(many, one) << threads;
    EXPECT_EQ(serialize_program_proto(many), bytes) << threads;
    auto owner = std::make_shared<const std::string>(bytes);
    const Program owned =
        parse_program_proto(*owner, "big.pb", ProtoReadOptions{.owner = owner, .threads = threads});
    EXPECT_EQ(owned, one) << threads;
    EXPECT_EQ(serialize_program_proto(owned), bytes) << threads;
    // The index finds every var of every chunk.
    EXPECT_NE(many.global_block().find_var("v" + std::to_string(kVars / 2 + 7)), nullptr);
  }
}

// Bad bytes in several places: the error is the one at the earliest byte,
// as reading field after field reports it, whatever the thread count.
TEST(ProtoParallelRead, TheErrorIsTheFirstInTheFileForAnyNumberOfThreads) {
  auto bad_var = [](int at) {
    return [at](int i, Pb& v) {
      if (i == at) v = Pb().str(1, "v" + std::to_string(i));  // no type
    };
  };
  auto bad_op = [](int at) {
    return [at](int i, Pb& o) {
      if (i == at) o = Pb().str(3, "scale").msg(1, Pb().str(2, "x"));  // slot without a name
    };
  };
  struct Case {
    const char* what;
    Edits edits;
    const char* expected;
  };
  std::vector<Case> cases;
  cases.push_back({"late var", Edits{.var = bad_var(kVars - 5)}, "block 0, var 'v11995': VarDesc has no type"});
  cases.push_back({"two bad vars", Edits{.var = [&](int i, Pb& v) {
                                            bad_var(9000)(i, v);
                                            bad_var(3000)(i, v);
                                          }},
                   "var 'v3000': VarDesc has no type"});
  cases.push_back({"twice declared", Edits{.var = [](int i, Pb& v) {
                                              if (i == 10000) v = var_desc("v17");
                                            }},
                   "var 'v17': declared twice in the block"});
  cases.push_back({"bad op", Edits{.op = bad_op(4000)}, "op 4000 'scale', input 0"});
  cases.push_back({"bad var before bad op", Edits{.var = bad_var(8000), .op = bad_op(10)},
                   "var 'v8000': VarDesc has no type"});
  cases.push_back({"truncated after a bad op",
                   Edits{.op = bad_op(5000), .tail = std::string("\x22\x7f", 2)}, "op 5000"});
  cases.push_back({"truncated", Edits{.tail = std::string("\x22\x7f", 2)}, "op 6000: truncated"});
  for (const Case& c : cases) {
    const std::string bytes = big_program(c.edits);
    const std::string serial = error_of(bytes, 1, false);
    EXPECT_NE(serial.find(c.expected), std::string::npos) << c.what << ": " << serial;
    for (unsigned threads : {2u, 3u, 8u})
      for (bool owned : {false, true})
        EXPECT_EQ(error_of(bytes, threads, owned), serial) << c.what << ", " << threads;
  }
}

}  // namespace
}  // namespace ctp
