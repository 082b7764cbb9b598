// The schedule check covers the startup program and the job's identity
// (issue 20 item 2), as users meet it: transpiled programs run by `ctp run`
// under `ctp launch` on 127.0.0.1. Ranks whose startup programs disagree
// (another --nrings, other parameter shapes, two same-sized broadcasts
// swapped) both stop on their own before their first broadcast, naming the
// first difference, instead of waiting out the timeout, aborting inside Gloo
// or training on with different parameters. A rank given another rank's
// program, or a program for another number of ranks, stops at once.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

#include "program_ir/atomic_file.h"
#include "program_ir/program_io.h"
#include "samples/mlp_model.h"
#include "tests/executor_process_util.h"
#include "tests/launch_test_util.h"
#include "transpilers/transpile.h"

namespace ctp {
namespace {

using test::CliRun;
using test::has;

constexpr double kTimeoutSeconds = 8;

class StartupSchedule : public ::testing::Test {
 protected:
  void SetUp() override {
#ifndef CTP_HAVE_GLOO
    GTEST_SKIP() << "built without Gloo";
#endif
    base_port_ = test::free_port_pair();
    ASSERT_NE(base_port_, 0);
  }

  std::vector<std::string> endpoints() const {
    return {"127.0.0.1:" + std::to_string(base_port_),
            "127.0.0.1:" + std::to_string(base_port_ + 1)};
  }

  // Rank `rank`'s GradAllReduce programs of an MLP, written under
  // rank_<rank>/ as `ctp transpile --all-ranks` writes them; `edit` may
  // change the transpiled startup program.
  void write_rank(int rank, const std::vector<int64_t>& hidden, int nrings,
                  const std::function<void(Program&)>& edit = {}) {
    samples::MlpConfig config;
    config.input_dim = 8;
    config.hidden = hidden;
    config.init_seed = 3;
    samples::MlpPrograms p = samples::build_mlp(config);
    TranspileOptions options;
    options.collective.endpoints = endpoints();
    options.collective.rank = rank;
    options.collective.current_endpoint = endpoints()[static_cast<std::size_t>(rank)];
    options.collective.nrings = nrings;
    transpile(TranspileMode::kGradAllReduce, options, p.startup, p.main);
    if (edit) edit(p.startup);
    const std::string dir = dir_ / ("rank_" + std::to_string(rank));
    std::filesystem::create_directories(dir);
    write_file_atomically(dir + "/startup.pb", serialize_program(p.startup, ProgramFormat::Proto));
    write_file_atomically(dir + "/main.pb", serialize_program(p.main, ProgramFormat::Proto));
  }

  std::string run_args(const std::string& rank) const {
    return " run --startup " + (dir_ / ("rank_" + rank + "/startup.pb")) + " --main " +
           (dir_ / ("rank_" + rank + "/main.pb")) + " --steps 2 --batch 4";
  }

  CliRun launch() const {
    return test::run_ctp({"launch", "--nproc", "2", "--base-port", std::to_string(base_port_),
                          "--timeout", "8", "--", "sh", "-c",
                          std::string(CTP_CLI_PATH) + run_args("{rank}")});
  }

  // Both ranks stopped on their own (neither was stopped by the launcher),
  // before the timeout, each naming `difference` at the op before which it checked.
  static void expect_both_stop(const CliRun& run, const std::string& difference) {
    EXPECT_TRUE(run.exited && run.code == 1) << run.output;
    for (int r : {0, 1}) {
      const std::string error =
          test::line_starting(run.output, "[rank " + std::to_string(r) + "] ctp: error: ");
      EXPECT_TRUE(has(error, "] ctp: error: block 0, op ")) << run.output;
      EXPECT_TRUE(has(error, "schedule check: the ranks would run different collectives")) << run.output;
      EXPECT_TRUE(has(error, difference)) << run.output;
    }
    EXPECT_TRUE(has(run.output, "failed first: it exited with code 1; then rank ")) << run.output;
    EXPECT_TRUE(has(run.output, " exited with code 1\n")) << run.output;
    EXPECT_FALSE(has(run.output, "stopped by the launcher")) << run.output;
    EXPECT_LT(run.seconds, kTimeoutSeconds - 2) << run.output;
  }

  int base_port_ = 0;
  test::TempDir dir_{"startup_schedule_" + std::string(::testing::UnitTest::GetInstance()
                                                           ->current_test_info()
                                                           ->name())};
};

// Used to wait out the whole timeout: rank 0 waited for rank 1 at its second
// ring's unique id while rank 1 waited for rank 0 in its first broadcast.
TEST_F(StartupSchedule, RanksWithAnotherNumberOfRingsStop) {
  write_rank(0, {8}, 2);
  write_rank(1, {8}, 1);
  expect_both_stop(launch(),
                   "first difference between rank 0 and rank 1 at collective #0: rank 0 runs "
                   "c_gen_nccl_id nranks 2 Out='nccl_id_1', rank 1 runs c_broadcast ring 0 "
                   "FP32[64] root 0 X='fc_0.w_0'");
}

// Used to abort a worker inside Gloo (gloo::EnforceNotMet, SIGABRT).
TEST_F(StartupSchedule, RanksWithOtherParameterShapesStop) {
  write_rank(0, {8}, 1);
  write_rank(1, {9}, 1);
  expect_both_stop(launch(),
                   "at collective #0: rank 0 runs c_broadcast ring 0 FP32[64] root 0 X='fc_0.w_0', "
                   "rank 1 runs c_broadcast ring 0 FP32[72] root 0 X='fc_0.w_0'");
}

// Used to finish with rc 0 and different parameters on the two ranks.
TEST_F(StartupSchedule, SwappedBroadcastsOfOneSizeStop) {
  write_rank(0, {8, 8}, 1);
  write_rank(1, {8, 8}, 1, [](Program& startup) {
    auto& ops = startup.global_block().ops();
    auto broadcast_of = [&](const std::string& var) {
      for (auto it = ops.begin(); it != ops.end(); ++it)
        if (it->type == "c_broadcast" && it->input("X")->front() == var) return it;
      ADD_FAILURE() << "no c_broadcast of " << var;
      return ops.end();
    };
    auto first = broadcast_of("fc_0.w_0"), second = broadcast_of("fc_1.w_0");
    ASSERT_TRUE(first != ops.end() && second != ops.end());
    std::swap(*first, *second);
  });
  expect_both_stop(launch(),
                   "at collective #0: rank 0 runs c_broadcast ring 0 FP32[64] root 0 X='fc_0.w_0', "
                   "rank 1 runs c_broadcast ring 0 FP32[64] root 0 X='fc_1.w_0'");
}

// Used to run silently as rank 1.
TEST_F(StartupSchedule, ARankGivenAnotherRanksProgramStopsAtOnce) {
  write_rank(1, {8}, 1);
  const test::CommandResult r = test::run_command(std::string(CTP_CLI_PATH) + run_args("1") +
                                                  " --rank 0 --world-size 2 --timeout 30");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(has(r.output, "ctp: error: block 0, op 5 'c_gen_nccl_id': the program was "
                            "transpiled for rank 1 (its c_gen_nccl_id), but this process is rank 0"))
      << r.output;
}

// Used to wait out the timeout for a third rank the program does not know.
TEST_F(StartupSchedule, AProgramForAnotherNumberOfRanksStopsAtOnce) {
  write_rank(0, {8}, 1);
  const auto start = std::chrono::steady_clock::now();
  const test::CommandResult r = test::run_command(std::string(CTP_CLI_PATH) + run_args("0") +
                                                  " --rank 0 --world-size 3 --timeout 30");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(has(r.output, "ctp: error: block 0, op 5 'c_gen_nccl_id': the program was "
                            "transpiled for 2 rank(s) (its c_gen_nccl_id), but this job has 3 "
                            "process(es)"))
      << r.output;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10.0);
}

}  // namespace
}  // namespace ctp
