// Regression tests for hostile inputs (docs/reliability.md): each builds an
// input that once made ctp allocate or work without bound, and checks that
// ctp now handles it in linear time and memory, or refuses it with an error
// that names the place.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "executor/runtime/npy.h"
#include "executor/program_runner.h"
#include "program_ir/atomic_file.h"
#include "program_ir/builder.h"
#include "program_ir/dot_io.h"
#include "program_ir/program_io.h"
#include "program_ir/proto_io.h"
#include "program_ir/verify.h"
#include "program_ir/wire_format.h"
#include "tests/transpiler_test_programs.h"
#include "transpilers/transpile.h"

namespace ctp {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Block 0 declares x; block i (1..n-1) has parent i-1 and one op reading x
// and writing the undeclared "nope".
Program block_chain(int n) {
  Program p = Program::with_global_block();
  ProgramBuilder pb(std::move(p));
  pb.tmp("x", {4});
  for (int i = 1; i < n; ++i) {
    pb.program().add_block(i - 1);
    pb.in_block(i);
    pb.op("scale").in("X", "x").out("Out", "nope").role(op_role::kForward);
  }
  return pb.build();
}

// verify listed every block's ancestors: memory quadratic in the nesting
// depth (a 10,000-block chain took 440 MB; this one would take 40 GB).
TEST(RegressionLimits, VerifyOfADeepBlockChainIsLinear) {
  constexpr int kBlocks = 100000;
  const Program p = block_chain(kBlocks);
  const auto start = Clock::now();
  const std::vector<Diagnostic> d = verify_program(p);
  ASSERT_EQ(d.size(), static_cast<std::size_t>(kBlocks - 1));  // "nope" in each block, never x
  EXPECT_EQ(d.back().to_string(),
            "block 99999, op 0 'scale', var 'nope': not declared in block 99999 or its ancestors");
  EXPECT_LT(seconds_since(start), 60.0);  // linear takes well under a second
}

// Vars of a parent_idx loop are visible to every block of the loop and to
// the blocks below it, as a walk up from them would find.
TEST(RegressionLimits, VerifySeesThroughParentLoops) {
  ProgramBuilder pb;
  pb.tmp("root_var", {1});
  pb.program().add_block(2);  // 1 -> 2 -> 1: a loop
  pb.program().add_block(1);
  pb.program().add_block(2);  // 3 hangs under the loop
  pb.in_block(1);
  pb.tmp("a", {1});
  pb.op("scale").in("X", "b").out("Out", "a").role(op_role::kForward);
  pb.in_block(2);
  pb.tmp("b", {1});
  pb.in_block(3);
  pb.op("scale").in("X", "a").out("Out", "root_var").role(op_role::kForward);
  std::vector<std::string> messages;
  for (const Diagnostic& d : verify_program(pb.build())) messages.push_back(d.to_string());
  // The loop is reported; a (block 1) and b (block 2) resolve; block 3 is
  // outside block 0's subtree, so root_var does not.
  ASSERT_EQ(messages.size(), 2u) << ::testing::PrintToString(messages);
  EXPECT_NE(messages[0].find("parent_idx chain loops"), std::string::npos) << messages[0];
  EXPECT_EQ(messages[1], "block 3, op 0 'scale', var 'root_var': not declared in block 3 or its ancestors");
}

// The Graphviz writer walked up from every block for every name: time
// quadratic in the depth (10,000 blocks: 1 s; this chain: about 100 s).
TEST(RegressionLimits, DotOfADeepBlockChainIsLinear) {
  constexpr int kBlocks = 100000;
  const Program p = block_chain(kBlocks);
  const auto start = Clock::now();
  const std::string dot = program_to_dot(p);
  // The deepest block's op reads block 0's x and writes its own dashed "nope".
  EXPECT_NE(dot.find("  b0_v0 -> b99999_op0;\n"), std::string::npos);
  EXPECT_NE(dot.find("  b99999_op0 -> b99999_u0;\n"), std::string::npos);
  EXPECT_LT(seconds_since(start), 60.0);
}

// A repeated float field split into many packed runs reserved exactly the
// new total on every run: quadratic (80,000 runs, 480 KB: 7 s).
TEST(RegressionLimits, ManyPackedRunsLoadInLinearTime) {
  constexpr int kRuns = 400000;
  std::string attr;
  wire::Writer a(attr);
  a.bytes_field(1, "values");
  a.int32_field(2, static_cast<int32_t>(AttrType::FLOATS));
  for (int i = 0; i < kRuns; ++i) {
    a.tag(7, wire::WireType::LengthDelimited);
    a.varint(4);
    a.fixed32(0x3f800000);  // 1.0f
  }
  std::string op, block, program;
  wire::Writer o(op);
  o.bytes_field(3, "scale");
  o.bytes_field(4, attr);
  wire::Writer b(block);
  b.int32_field(1, 0);
  b.int32_field(2, -1);
  b.bytes_field(4, op);
  wire::Writer(program).bytes_field(1, block);

  const auto start = Clock::now();
  const Program p = parse_program_proto(program, "runs.pb");
  const Attribute* values = p.global_block().ops().front().attr("values");
  ASSERT_NE(values, nullptr);
  EXPECT_EQ(values->get<std::vector<float>>().size(), static_cast<std::size_t>(kRuns));
  EXPECT_LT(seconds_since(start), 60.0);  // linear: milliseconds; quadratic: minutes
}

TEST(RegressionLimits, TensorShapesBeyondMemoryAreErrors) {
  auto message = [](DataType dtype, std::vector<int64_t> shape) -> std::string {
    try {
      Tensor t(dtype, std::move(shape));
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_EQ(message(DataType::FP32, {int64_t{1} << 40, int64_t{1} << 40}),
            "tensor shape [1099511627776, 1099511627776] has more than 2^63 elements");
  EXPECT_EQ(message(DataType::FP64, {int64_t{1} << 62}),
            "a FP64 tensor of shape [4611686018427387904] has more bytes than fit in 64 bits");
  const std::string huge = message(DataType::FP32, {1000000000000});
  EXPECT_EQ(huge.rfind("a FP32 tensor of shape [1000000000000]: cannot allocate 4000000000000 "
                       "bytes: more than this machine's ", 0), 0u)
      << huge;
  // A zero dimension makes an empty tensor, whatever the other dimensions.
  EXPECT_EQ(Tensor(DataType::FP32, {int64_t{1} << 62, 0, int64_t{1} << 62}).numel(), 0);
}

// Block 0 of a main program: a feed op at `col` for x, a scale of x.
Program feed_program(int64_t col, std::vector<int64_t> x_shape = {2}) {
  ProgramBuilder pb;
  pb.data("x", std::move(x_shape));
  pb.tmp("y", {2});
  Var feed_holder;
  feed_holder.name = "feed";
  feed_holder.type = VarKind::FEED_MINIBATCH;
  pb.var(feed_holder);
  pb.op("feed").in("X", "feed").out("Out", "x").attr("col", Attribute(static_cast<int32_t>(col)))
      .role(op_role::kForward);
  pb.op("scale").in("X", "x").out("Out", "y").attr("scale", 2.0f).role(op_role::kForward);
  return pb.build();
}

// A feed op's col sized the feed list each step: col 2^31-1 asked for a list
// of 2^31 tensors, and col -1 wrapped to a list of none (and a write past it).
TEST(RegressionLimits, FeedColumnsOutsideTheFeedOpsAreErrors) {
  const Program startup = Program::with_global_block();
  for (int64_t col : {int64_t{2147483647}, int64_t{-1}, int64_t{1}}) {
    const Program main = feed_program(col);
    try {
      ProgramRunner runner(startup, main, ProgramRunOptions{});
      ADD_FAILURE() << "col " << col << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), "block 0: the feed op of 'x' has col " + std::to_string(col) +
                                           ", outside [0, 1) (one column per feed op)");
    }
  }
  const Program main = feed_program(0);
  ProgramRunner runner(startup, main, ProgramRunOptions{});
  runner.run_startup();
  EXPECT_NO_THROW(runner.run_step());
}

TEST(RegressionLimits, FetchColumnsBeyondTheBlockAreErrors) {
  ProgramBuilder pb;
  pb.tmp("x", {2});
  Var fetch_holder;
  fetch_holder.name = "fetch";
  fetch_holder.type = VarKind::FETCH_LIST;
  pb.var(fetch_holder);
  pb.op("fill_constant").out("Out", "x").attr("shape", Attribute(std::vector<int64_t>{2}))
      .attr("value", 1.0f).attr("dtype", Attribute(static_cast<int32_t>(DataType::FP32)))
      .role(op_role::kForward);
  pb.op("fetch").in("X", "x").out("Out", "fetch").attr("col", Attribute(int32_t{2147483647}))
      .role(op_role::kForward);
  const Program startup = Program::with_global_block();
  const Program main = pb.build();
  ProgramRunner runner(startup, main, ProgramRunOptions{});
  runner.run_startup();
  try {
    runner.run_step();
    ADD_FAILURE() << "col 2147483647 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("op 1 'fetch': col 2147483647 is not below the block's 2 ops"),
              std::string::npos)
        << e.what();
  }
}

// A synthetic input's declared shape is the program's word: a huge one is
// refused with the var's name, before any step.
TEST(RegressionLimits, HugeDeclaredInputShapeIsAnErrorNamingTheVar) {
  const Program startup = Program::with_global_block();
  ProgramBuilder pb;
  pb.data("x", {-1, 1000000000000});
  pb.tmp("y", {1});
  pb.op("mean").in("X", "x").out("Out", "y").role(op_role::kForward);
  const Program main = pb.build();
  try {
    ProgramRunner runner(startup, main, ProgramRunOptions{});
    ADD_FAILURE() << "a [batch, 1e12] input was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("input 'x' of block 0: a FP32 tensor of shape [1, "
                                          "1000000000000]: cannot allocate 4000000000000 bytes",
                                          0),
              0u)
        << e.what();
  }
}

// The same through `ctp run`: exit status 1 and the message, not an OOM kill.
TEST(RegressionLimits, CtpRunWithAHugeVarFailsWithAClearError) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("ctp_regression_limits_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  ProgramBuilder pb;
  pb.data("x", {1000000000000});
  pb.tmp("y", {1});
  pb.op("mean").in("X", "x").out("Out", "y").role(op_role::kForward | op_role::kLoss);
  write_file_atomically((dir / "main.json").string(),
                        serialize_program(pb.build(), ProgramFormat::Json));
  write_file_atomically((dir / "startup.json").string(),
                        serialize_program(Program::with_global_block(), ProgramFormat::Json));
  const std::string command = std::string(CTP_CLI_PATH) + " run --startup " +
                              (dir / "startup.json").string() + " --main " +
                              (dir / "main.json").string() + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buffer[4096];
  while (std::size_t n = fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
  const int status = pclose(pipe);
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(WIFEXITED(status)) << output;
  EXPECT_EQ(WEXITSTATUS(status), 1) << output;
  EXPECT_EQ(output.rfind("ctp: error: input 'x' of block 0: a FP32 tensor of shape [1000000000000]: "
                         "cannot allocate 4000000000000 bytes: more than this machine's ",
                         0),
            0u)
      << output;
}

// A version-1 .npy file: the header padded as numpy pads it, then `data`.
std::string npy_file(const std::string& descr, const std::string& shape, const std::string& data,
                     std::size_t header_padding = 0) {
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  header += std::string((64 - (10 + header.size() + 1) % 64) % 64 + header_padding, ' ') + "\n";
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  return out + header + data;
}

std::string npy_error(const std::string& bytes) {
  try {
    tensor_from_npy(bytes, "x.npy");
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

// The reader allocated the tensor a header asked for before looking at the
// data: a 132-byte file could take all memory (or, beyond it, fail on the
// allocation rather than on the file).
TEST(RegressionLimits, NpyHeaderCannotAskForMoreThanTheDataHolds) {
  EXPECT_EQ(npy_error(npy_file("<f4", "(1000000000000000,)", std::string(4, '\0'))),
            "x.npy: .npy data has 4 bytes, shape (1000000000000000,) of '<f4' needs 4000000000000000");
  EXPECT_EQ(npy_error(npy_file("<f8", "(4294967296, 4294967296)", "")),
            "x.npy: .npy data has 0 bytes, shape (4294967296, 4294967296) of '<f8' needs more than 2^64");
  const Tensor empty = tensor_from_npy(npy_file("<f4", "(0, 1000000000000)", ""), "x.npy");
  EXPECT_EQ(empty.shape(), (std::vector<int64_t>{0, 1000000000000}));
}

// std::stoll threw std::out_of_range (not a ctp::Error) on a 20-digit dimension.
TEST(RegressionLimits, NpyDimensionBeyondInt64IsAnError) {
  EXPECT_EQ(npy_error(npy_file("<f4", "(99999999999999999999,)", "")),
            "x.npy: .npy data has 0 bytes, shape (99999999999999999999,) of '<f4' needs more than 2^64");
}

TEST(RegressionLimits, NpyHeaderLongerThanNumpyReadsIsAnError) {
  EXPECT_EQ(npy_error(npy_file("<f4", "(1,)", std::string(4, '\0'), 20000)),
            "x.npy: .npy header of 20118 bytes is longer than the 10000 numpy reads");
}

constexpr TranspileMode kModes[] = {TranspileMode::kGradAllReduce, TranspileMode::kLocalSgd,
                                    TranspileMode::kSingleProcessMultiThread,
                                    TranspileMode::kMultiThread};

TranspileOptions options_for(TranspileMode mode) {
  // single_process_multi_thread has one ring only.
  return testing::options_for(2, 1, mode == TranspileMode::kSingleProcessMultiThread ? 1 : 2);
}

// One backward op whose op_role_var names 10,000 [param, grad] pairs: every
// mode rewrites it in time linear in the pairs.
TEST(RegressionLimits, OpRoleVarWithTenThousandPairs) {
  constexpr int kParams = 10000;
  ProgramBuilder pb, startup_pb;
  pb.persistable("lr", {1});
  std::vector<std::string> pairs;
  for (int i = 0; i < kParams; ++i) {
    const std::string p = "p" + std::to_string(i);
    pb.param(p, {2});
    startup_pb.param(p, {2});
    pb.tmp(p + "@GRAD", {2});
    pairs.push_back(p);
    pairs.push_back(p + "@GRAD");
  }
  pb.op("fused_grads_of_all_params").role(op_role::kBackward).role_var(pairs);
  for (int i = 0; i < kParams; ++i) {
    const std::string p = "p" + std::to_string(i);
    pb.op("sgd").in("Param", p).in("Grad", p + "@GRAD").in("LearningRate", "lr").out("ParamOut", p)
        .role(op_role::kOptimize).role_var({p, p + "@GRAD"});
  }
  const Program main = pb.build();
  const Program startup_program = startup_pb.build();
  for (TranspileMode mode : kModes) {
    Program startup = startup_program;
    Program rewritten = main;
    const auto start = Clock::now();
    transpile(mode, options_for(mode), startup, rewritten);
    EXPECT_LT(seconds_since(start), 60.0) << to_string(mode);
    EXPECT_FALSE(has_errors(verify_program(rewritten))) << to_string(mode);
    if (mode == TranspileMode::kGradAllReduce) {
      std::size_t allreduces = 0;
      for (const Op& op : rewritten.global_block().ops()) allreduces += op.type == "c_allreduce_sum";
      EXPECT_EQ(allreduces, static_cast<std::size_t>(kParams));
    }
  }
}

// 100,000-op programs (17,000 fc layers, SGD) through every mode.
TEST(RegressionLimits, HundredThousandOpProgramsTranspile) {
  testing::ModelSpec spec;
  spec.layers = 17000;
  const Program startup = testing::build_startup(spec);
  const Program main = testing::build_main(spec);
  ASSERT_GT(main.global_block().op_count(), 100000u);
  for (TranspileMode mode : kModes) {
    Program s = startup, m = main;
    const auto start = Clock::now();
    transpile(mode, options_for(mode), s, m);
    EXPECT_LT(seconds_since(start), 60.0) << to_string(mode);
    EXPECT_GT(m.global_block().op_count(), main.global_block().op_count()) << to_string(mode);
  }
}

}  // namespace
}  // namespace ctp
