// The profile's memory peak (executor/memory_peak.h): the op after which a
// step's tensors held the most, and the largest tensors held then, with the
// op that made each and the op after which the step frees it.
#include <sstream>

#include "executor/op_profile.h"
#include "executor/program_runner.h"
#include "program_ir/atomic_file.h"
#include "program_ir/program_io.h"
#include "tests/executor_process_util.h"
#include "tests/kernels_test_util.h"

namespace ctp {
namespace {

using test::make_op;

Op fill(const std::string& out, std::vector<int64_t> shape) {
  return make_op("fill_constant", {}, {{"Out", {out}}},
                 {{"shape", Attribute(std::move(shape))}, {"value", Attribute(0.5f)}});
}

// x (1 KiB); a (256 KiB) made at op 1, last read at op 5; big (4 MiB) made
// at op 2, its elements last read at op 3 and its shape at op 6. The most
// is held after op 3 (x, a, big and mean's m), before big's elements go.
Program peaked_program() {
  Program p = Program::with_global_block();
  Block& b = p.global_block();
  b.add_var(Var{.name = "x", .dtype = DataType::FP32, .shape = {256}});
  b.append_op(make_op("scale", {{"X", {"x"}}}, {{"Out", {"x2"}}}));  // 0
  b.append_op(fill("a", {256, 256}));                                // 1
  b.append_op(fill("big", {1024, 1024}));                            // 2
  b.append_op(make_op("mean", {{"X", {"big"}}}, {{"Out", {"m"}}}));   // 3
  b.append_op(fill("b", {256, 256}));                                // 4
  b.append_op(make_op("elementwise_add", {{"X", {"a"}}, {"Y", {"b"}}}, {{"Out", {"c"}}}));  // 5
  b.append_op(make_op("shape", {{"Input", {"big"}}}, {{"Out", {"s"}}}));  // 6
  return p;
}

TEST(MemoryPeak, NamesThePeakOpAndTheTensorsHeldThere) {
  const Program p = peaked_program();
  OpProfile profile;
  RunServices services;
  services.profile = &profile;
  Executor executor(p, services);
  executor.set_release_dead_vars(true);  // keeping nothing: every step holds the same
  Scope scope;
  scope.var("x") = Tensor(DataType::FP32, {256});
  executor.run(scope);
  const auto peak = profile.memory().peak_op();
  ASSERT_TRUE(peak);
  EXPECT_EQ(peak->first, 3u);
  EXPECT_FALSE(profile.memory().snapshot()) << "listed from the next step on";
  executor.run(scope);
  const auto& snapshot = profile.memory().snapshot();
  ASSERT_TRUE(snapshot);
  EXPECT_EQ(snapshot->op, 3u);
  ASSERT_EQ(snapshot->largest.size(), 4u);  // big, a, x, m (x2 was freed after op 0)
  const MemoryPeak::HeldTensor& big = snapshot->largest[0];
  EXPECT_EQ(big.name, "big");
  EXPECT_EQ(big.bytes, 4 << 20);
  EXPECT_EQ(big.shape, (std::vector<int64_t>{1024, 1024}));
  EXPECT_EQ(big.made_by, 2u);
  EXPECT_EQ(big.elements_freed_after, 3u);
  EXPECT_EQ(big.freed_after, 6u);
  const MemoryPeak::HeldTensor& a = snapshot->largest[1];
  EXPECT_EQ(a.name, "a");
  EXPECT_EQ(a.made_by, 1u);
  EXPECT_EQ(a.freed_after, 5u);
  EXPECT_FALSE(a.elements_freed_after);
  const MemoryPeak::HeldTensor& x = snapshot->largest[2];
  EXPECT_EQ(x.name, "x");
  EXPECT_FALSE(x.made_by);
  EXPECT_FALSE(x.freed_after) << "bound by the caller: kept";
  const MemoryPeak::HeldTensor& m = snapshot->largest[3];
  EXPECT_EQ(m.name, "m");
  EXPECT_EQ(m.freed_after, 3u);
  EXPECT_EQ(snapshot->kept_bytes, 1024);  // x
  EXPECT_EQ(snapshot->persistable_bytes, 0);
  EXPECT_EQ(snapshot->intermediate_bytes - m.bytes, (4 << 20) + (256 << 10));
  EXPECT_EQ(snapshot->scope_bytes, snapshot->intermediate_bytes + snapshot->kept_bytes);
  EXPECT_GE(snapshot->held_bytes, snapshot->scope_bytes);

  std::ostringstream out;
  profile.memory().print(out, 2);
  const std::string text = out.str();
  EXPECT_NE(text.find("after op 3 'mean'"), std::string::npos) << text;
  EXPECT_NE(text.find("FP32[1024, 1024]"), std::string::npos) << text;
  EXPECT_NE(text.find("made by op 2 'fill_constant'"), std::string::npos) << text;
  EXPECT_NE(text.find("its elements freed after op 3 'mean', the rest after op 6 'shape'"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("FP32[256, 256]"), std::string::npos) << text;
  EXPECT_EQ(text.find("FP32[256]"), std::string::npos) << "only the 2 largest: " << text;
}

TEST(MemoryPeak, CtpRunProfilePrintsIt) {
  const Program p = peaked_program();
  const std::string main = ::testing::TempDir() + "/memory_peak_main.json";
  write_file_atomically(main, serialize_program(p, ProgramFormat::Json));
  const test::CommandResult r = test::run_command(std::string(CTP_CLI_PATH) + " run --main " +
                                                  main + " --random-params --steps 2 --profile");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("memory: the most tensor bytes held on cpu after an op"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("after op 3 'mean'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("FP32[1024, 1024]"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace ctp
