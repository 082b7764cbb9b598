// OpProfile: the executor times every op of every step but the first, and
// the report names the expensive ops; `ctp run --profile` prints it.
#include <sstream>

#include "executor/op_profile.h"
#include "executor/program_runner.h"
#include "program_ir/atomic_file.h"
#include "program_ir/program_io.h"
#include "samples/mlp_model.h"
#include "tests/executor_process_util.h"
#include "tests/kernels_test_util.h"

namespace ctp {
namespace {

samples::MlpPrograms wide_mlp() {
  samples::MlpConfig c;
  c.input_dim = 64;
  c.hidden = {256};
  c.classes = 4;
  c.init_seed = 3;
  return samples::build_mlp(c);
}

TEST(OpProfile, CountsEveryStepButTheFirstAndNamesEachOp) {
  const samples::MlpPrograms p = wide_mlp();
  OpProfile profile;
  ProgramRunOptions options;
  options.batch = 128;
  options.profile = &profile;
  ProgramRunner runner(p.startup, p.main, options);
  runner.run_startup();
  EXPECT_EQ(profile.counted_steps(), 0) << "the startup program is not profiled";
  runner.run_step();
  EXPECT_EQ(profile.counted_steps(), 0) << "the first step allocates: not counted";
  for (int i = 0; i < 3; ++i) runner.run_step();
  EXPECT_EQ(profile.counted_steps(), 3);
  EXPECT_FALSE(profile.on_gpu());

  const std::vector<OpProfile::Row> rows = profile.rows();
  ASSERT_EQ(rows.size(), p.main.global_block().op_count());
  std::size_t i = 0;
  double mul_ms = 0, total_ms = 0;
  for (const Op& op : p.main.global_block().ops()) {
    EXPECT_EQ(rows[i].index, i);
    EXPECT_EQ(rows[i].type, op.type);
    EXPECT_GE(rows[i].host_ms, 0.0);
    EXPECT_EQ(rows[i].device_ms, 0.0) << "no device time on the CPU";
    if (op.type == "mul" || op.type == "mul_grad") mul_ms += rows[i].host_ms;
    total_ms += rows[i].host_ms;
    ++i;
  }
  EXPECT_EQ(rows[0].output, "fc_0.tmp_0");
  // The matrix products were timed. (How much of the step they take is a
  // measurement, left to bench/: on a loaded machine a preempted op can
  // take any share.)
  EXPECT_GT(mul_ms, 0.0);
  EXPECT_GE(total_ms, mul_ms);

  std::ostringstream out;
  profile.print(out, 3);
  const std::string text = out.str();
  EXPECT_NE(text.find("profile: 3 step(s) after the first, " +
                      std::to_string(rows.size()) + " ops"), std::string::npos) << text;
  EXPECT_NE(text.find("mul"), std::string::npos) << text;
  EXPECT_NE(text.find("by op type (host ms per step): "), std::string::npos) << text;
  std::size_t table_lines = 0;
  for (std::size_t at = text.find("share\n");
       at != std::string::npos && (at = text.find('%', at + 1)) != std::string::npos;)
    ++table_lines;
  EXPECT_EQ(table_lines, 3u) << "the 3 most expensive ops: " << text;
}

TEST(OpProfile, CtpRunPrintsTheProfile) {
  const samples::MlpPrograms p = wide_mlp();
  const std::string dir = ::testing::TempDir();
  const std::string startup = dir + "/profile_startup.json", main = dir + "/profile_main.json";
  write_file_atomically(startup, serialize_program(p.startup, ProgramFormat::Json));
  write_file_atomically(main, serialize_program(p.main, ProgramFormat::Json));
  const test::CommandResult r = test::run_command(
      std::string(CTP_CLI_PATH) + " run --startup " + startup + " --main " + main +
      " --steps 3 --batch 64 --profile");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("profile: 2 step(s) after the first"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("mul_grad"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace ctp
