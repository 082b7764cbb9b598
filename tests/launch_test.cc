// `ctp launch` as users run it: real worker processes over 127.0.0.1. The
// workers get Paddle's and torchrun's variables and their output is
// prefixed; a failing worker stops the others; a worker killed in the
// middle of all-reduces is named by the survivors (within the configured
// timeout) and by the launcher; two launchers form one two-node job; each
// launch is a job of its own, and two jobs on the same ports stay apart.
#include <gtest/gtest.h>
#include <signal.h>

#include <future>

#include "executor/rendezvous/rendezvous_socket.h"
#include "tests/executor_process_util.h"
#include "tests/launch_test_util.h"

namespace {

using namespace std::chrono_literals;
using namespace ctp::test;

TEST(Launch, WorkersGetTheirVariablesAndPrefixedOutput) {
  CliRun run = run_ctp({"launch", "--nproc", "2", "--timeout", "7", "--", "sh", "-c",
                        "echo \"id=$PADDLE_TRAINER_ID n=$PADDLE_TRAINERS_NUM cur=$PADDLE_CURRENT_ENDPOINT "
                        "eps=$PADDLE_TRAINER_ENDPOINTS rank=$RANK world=$WORLD_SIZE local=$LOCAL_RANK "
                        "gpus=$FLAGS_selected_gpus master=$MASTER_ADDR:$MASTER_PORT t=$CTP_COMM_TIMEOUT\"; "
                        "echo to-stderr >&2; printf no-newline"});
  ASSERT_TRUE(run.exited && run.code == 0) << run.output;
  std::string line0 = line_starting(run.output, "[rank 0] id=0 n=2 cur=");
  std::string line1 = line_starting(run.output, "[rank 1] id=1 n=2 cur=");
  ASSERT_FALSE(line0.empty() || line1.empty()) << run.output;
  std::string ep0 = field(line0, "cur"), ep1 = field(line1, "cur");
  EXPECT_EQ(ep0.rfind("127.0.0.1:", 0), 0u) << line0;
  EXPECT_EQ(ep1.rfind("127.0.0.1:", 0), 0u) << line1;
  EXPECT_NE(ep0, ep1);
  for (const std::string& line : {line0, line1}) {
    EXPECT_EQ(field(line, "eps"), ep0 + "," + ep1) << line;
    EXPECT_EQ(field(line, "world"), "2") << line;
    EXPECT_EQ(field(line, "master").rfind("127.0.0.1:", 0), 0u) << line;
    EXPECT_EQ(field(line, "t"), "7") << line;
  }
  EXPECT_EQ(field(line0, "rank") + field(line0, "local") + field(line0, "gpus"), "000") << line0;
  EXPECT_EQ(field(line1, "rank") + field(line1, "local") + field(line1, "gpus"), "111") << line1;
  EXPECT_EQ(field(line0, "master"), field(line1, "master"));
  EXPECT_TRUE(has(run.output, "[rank 0] to-stderr\n")) << run.output;
  EXPECT_TRUE(has(run.output, "[rank 1] no-newline\n")) << run.output;
}

TEST(Launch, FailingWorkerStopsTheOthersAndIsNamed) {
  CliRun run = run_ctp({"launch", "--nproc", "3", "--grace", "1", "--", "sh", "-c",
                        "if [ \"$RANK\" = 1 ]; then sleep 0.3; echo giving up; exit 3; fi; sleep 30"});
  EXPECT_TRUE(run.exited && run.code == 1) << run.output;
  std::string error = line_starting(run.output, "ctp: error: rank 1 (pid " +
                                                std::to_string(started_pid(run.output, 1)) + ")");
  EXPECT_TRUE(has(error, "failed first: it exited with code 3; then rank 0 was stopped by the launcher "
                         "(signal 15 (SIGTERM)), rank 2 was stopped by the launcher (signal 15 (SIGTERM))"))
      << run.output;
  EXPECT_TRUE(has(run.output, "[rank 1] giving up")) << run.output;
  EXPECT_LT(run.seconds, 10.0) << run.output;
}

TEST(Launch, ProgramThatCannotStartIsReported) {
  CliRun run = run_ctp({"launch", "--nproc", "1", "--", "/nonexistent/worker"});
  EXPECT_TRUE(run.exited && run.code == 1) << run.output;
  EXPECT_TRUE(has(run.output, "[rank 0] ctp launch: cannot run '/nonexistent/worker': No such file"))
      << run.output;
  EXPECT_TRUE(has(run.output, "rank 0 (pid")) << run.output;
  EXPECT_TRUE(has(run.output, "failed first: it exited with code 127")) << run.output;
}

TEST(Launch, UsageErrors) {
  EXPECT_EQ(run_ctp({"launch", "--nproc", "2"}).code, 2);
  EXPECT_EQ(run_ctp({"launch", "--nproc", "0", "--", "true"}).code, 2);
  CliRun bad_node = run_ctp({"launch", "--nproc", "1", "--nnodes", "2", "--node-rank", "2",
                             "--master", "127.0.0.1:1234", "--", "true"});
  EXPECT_EQ(bad_node.code, 2);
  EXPECT_TRUE(has(bad_node.output, "--node-rank 2 is not below --nnodes 2")) << bad_node.output;
  CliRun no_master = run_ctp({"launch", "--nproc", "1", "--nnodes", "2", "--", "true"});
  EXPECT_EQ(no_master.code, 2);
  EXPECT_TRUE(has(no_master.output, "needs --master")) << no_master.output;
}

TEST(Launch, CommCheckOnTwoRanks) {
  CliRun run = run_ctp({"launch", "--nproc", "2", "--timeout", "10", "--", CTP_CLI_PATH,
                        "comm-check", "--steps", "4", "--elements", "10000"});
  ASSERT_TRUE(run.exited && run.code == 0) << run.output;
  for (int r : {0, 1}) {
    std::string p = "[rank " + std::to_string(r) + "] ";
    EXPECT_TRUE(has(run.output, p + "comm-check: rank " + std::to_string(r) + " of 2 at 127.0.0.1:"))
        << run.output;
    EXPECT_TRUE(has(run.output, p + "step 3: all-reduce of 10000 FP32 ok")) << run.output;
    EXPECT_TRUE(has(run.output, p + "comm-check: 4 steps agree across 2 ranks")) << run.output;
  }
}

// The fault test: a worker killed in the middle of a job makes the
// others exit non-zero naming it, within the configured timeout, and the
// launcher reports which rank died.
TEST(Launch, KilledWorkerIsNamedBySurvivorsAndLauncher) {
  const double timeout_s = 3;
  pid_t victim = 0;
  std::chrono::steady_clock::time_point killed_at;
  CliRun run = run_ctp(
      {"launch", "--nproc", "3", "--timeout", "3", "--grace", "20", "--", CTP_CLI_PATH, "comm-check",
       "--steps", "100000", "--interval-ms", "10"},
      [&](const std::string& out, pid_t) {
        if (victim == 0 && has(out, "[rank 1] step 5:") && started_pid(out, 1) != 0) {
          victim = started_pid(out, 1);
          ::kill(victim, SIGKILL);
          killed_at = std::chrono::steady_clock::now();
        }
      });
  ASSERT_NE(victim, 0) << run.output;
  double after_kill = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count();
  EXPECT_TRUE(run.exited && run.code == 1) << run.output;
  EXPECT_TRUE(has(run.output, "ctp launch: rank 1 (pid " + std::to_string(victim) +
                                  ") was killed by signal 9 (SIGKILL)")) << run.output;
  EXPECT_TRUE(has(run.output, "ctp: error: rank 1 (pid " + std::to_string(victim) +
                                  ") failed first: it was killed by signal 9 (SIGKILL); then "
                                  "rank 0 exited with code 1, rank 2 exited with code 1"))
      << run.output;
  for (int r : {0, 2}) {
    std::string error = line_starting(run.output, "[rank " + std::to_string(r) +
                                                      "] ctp: error: block 0");
    EXPECT_TRUE(has(error, "'c_allreduce_sum'")) << run.output;
    EXPECT_TRUE(has(error, "rank " + std::to_string(r) + " of 3, ring 0 (gloo): all_reduce(sum) "
                           "FP32[1024]: peer rank 1 (127.0.0.1:")) << run.output;
    EXPECT_TRUE(has(error, ") died")) << run.output;
  }
  // The survivors ended on their own (not stopped by the launcher), in time.
  EXPECT_LT(after_kill, timeout_s + 2.0) << run.output;
}

TEST(Launch, InterruptedLauncherStopsEveryWorker) {
  bool sent = false;
  CliRun run = run_ctp({"launch", "--nproc", "2", "--grace", "2", "--", "sh", "-c", "echo up; sleep 30"},
                       [&](const std::string& out, pid_t launcher) {
                         if (!sent && has(out, "[rank 0] up") && has(out, "[rank 1] up")) {
                           ::kill(launcher, SIGTERM);
                           sent = true;
                         }
                       });
  ASSERT_TRUE(sent) << run.output;
  EXPECT_TRUE(run.exited && run.code == 1) << run.output;
  EXPECT_TRUE(has(run.output, "ctp launch: interrupted by SIGTERM: stopping every worker")) << run.output;
  EXPECT_TRUE(has(run.output, "rank 0 was stopped by the launcher (signal 15 (SIGTERM))")) << run.output;
  EXPECT_LT(run.seconds, 10.0);
}

TEST(Launch, TwoNodesOnOneMachineFormOneJob) {
  int master_port = ctp::net::pick_free_port();
  auto node = [&](int rank) {
    return run_ctp({"launch", "--nproc", "2", "--nnodes", "2", "--node-rank", std::to_string(rank),
                    "--master", "127.0.0.1:" + std::to_string(master_port), "--timeout", "10", "--",
                    CTP_CLI_PATH, "comm-check", "--steps", "2"});
  };
  auto node1 = std::async(std::launch::async, node, 1);
  CliRun run0 = node(0);
  CliRun run1 = node1.get();
  ASSERT_TRUE(run0.exited && run0.code == 0) << run0.output;
  ASSERT_TRUE(run1.exited && run1.code == 0) << run1.output;
  EXPECT_TRUE(has(run0.output, "[rank 1] comm-check: 2 steps agree across 4 ranks")) << run0.output;
  EXPECT_TRUE(has(run1.output, "[rank 3] comm-check: 2 steps agree across 4 ranks")) << run1.output;
}

// Every worker of one launch gets the same CTP_JOB_ID; another launch gets
// another; a launcher started with CTP_JOB_ID passes its own on.
TEST(Launch, EveryWorkerOfALaunchSharesItsJobId) {
  auto job_ids = [] {
    CliRun run = run_ctp({"launch", "--nproc", "2", "--", "sh", "-c", "echo \"job=$CTP_JOB_ID\""});
    EXPECT_TRUE(run.exited && run.code == 0) << run.output;
    return std::make_pair(field(line_starting(run.output, "[rank 0] job="), "job"),
                          field(line_starting(run.output, "[rank 1] job="), "job"));
  };
  auto first = job_ids(), second = job_ids();
  EXPECT_FALSE(first.first.empty());
  EXPECT_EQ(first.first, first.second);
  EXPECT_EQ(second.first, second.second);
  EXPECT_NE(first.first, second.first);
  ASSERT_EQ(::setenv("CTP_JOB_ID", "nightly-7", 1), 0);
  auto given = job_ids();
  ::unsetenv("CTP_JOB_ID");
  EXPECT_EQ(given, std::make_pair(std::string("nightly-7"), std::string("nightly-7")));
}

// Two jobs started on the same --base-port used to mix: one job's rank 0
// gave its ring id to the other job's rank 1 (issue 20 item 3). Here job B's
// rank 1 holds port base+1, waiting for B's rank 0 (held back by a file);
// job A's rank 0 reaches it first. A must fail at once naming both jobs,
// and B, once its rank 0 starts, must train as if A had never come.
TEST(Launch, TwoJobsOnTheSamePortsStayApart) {
  const int base = free_port_pair();
  ASSERT_NE(base, 0);
  ctp::test::TempDir dir("two_jobs");
  const std::string go = dir / "go";
  const std::string check = std::string(CTP_CLI_PATH) + " comm-check --steps 2";
  auto job_b = std::async(std::launch::async, [&] {
    return run_ctp({"launch", "--nproc", "2", "--base-port", std::to_string(base), "--timeout",
                    "20", "--", "sh", "-c",
                    "if [ \"$RANK\" = 0 ]; then while [ ! -e " + go +
                        " ]; do sleep 0.05; done; fi; exec " + check});
  });
  CliRun job_a = run_ctp({"launch", "--nproc", "2", "--base-port", std::to_string(base),
                          "--timeout", "8", "--grace", "1", "--", "sh", "-c",
                          "if [ \"$RANK\" = 1 ]; then exec sleep 15; fi; exec " + check});
  std::ofstream(go).put('\n');
  CliRun b = job_b.get();
  EXPECT_TRUE(job_a.exited && job_a.code == 1) << job_a.output;
  EXPECT_TRUE(has(job_a.output, "[rank 0] ctp: error: ")) << job_a.output;
  EXPECT_TRUE(has(job_a.output, "rank 0 could not deliver the unique id: 127.0.0.1:" +
                                    std::to_string(base + 1) + " is held by a worker of another job"))
      << job_a.output;
  EXPECT_TRUE(has(job_a.output, "give each its own --base-port")) << job_a.output;
  EXPECT_LT(job_a.seconds, 6.0) << job_a.output;
  EXPECT_TRUE(b.exited && b.code == 0) << b.output;
  for (int r : {0, 1})
    EXPECT_TRUE(has(b.output, "[rank " + std::to_string(r) + "] comm-check: 2 steps agree across 2 ranks"))
        << b.output;
}

}  // namespace
