// `ctp launch` owns its workers: when the launcher dies (SIGKILL, alone or
// with its whole process group), cannot start a worker, or cannot write the
// workers' output (a reader that went away, a full disk), no worker keeps
// running, and the launcher says what happened. And the timeout it exports:
// a CTP_COMM_TIMEOUT the user set survives, absurd values are refused.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <sstream>

#include "tests/executor_process_util.h"
#include "tests/launch_test_util.h"

namespace {

using namespace std::chrono_literals;
using namespace ctp::test;

// Every "[rank R] pid=N" a worker printed: the pids of the processes each
// worker started.
std::vector<pid_t> printed_pids(const std::string& output) {
  std::vector<pid_t> pids;
  for (std::size_t at = 0; (at = output.find("] pid=", at)) != std::string::npos; at += 6)
    pids.push_back(static_cast<pid_t>(std::stol(output.substr(at + 6))));
  return pids;
}

// Each worker is a shell that starts a child of its own (in the worker's
// process group) and prints both pids.
const std::vector<std::string> kWorkerWithAChild = {
    "sh", "-c", "sleep 30 & echo pid=$!; echo pid=$$; wait"};

TEST(LaunchOwnership, KilledLauncherTakesItsWorkersAndTheirChildrenAlong) {
  std::vector<pid_t> pids;
  std::chrono::steady_clock::time_point killed_at;
  std::vector<std::string> args = {"launch", "--nproc", "2", "--"};
  args.insert(args.end(), kWorkerWithAChild.begin(), kWorkerWithAChild.end());
  CliRun run = run_ctp(args, [&](const std::string& out, pid_t launcher) {
    if (pids.empty() && printed_pids(out).size() == 4) {
      pids = printed_pids(out);
      ::kill(launcher, SIGKILL);
      killed_at = std::chrono::steady_clock::now();
    }
  }, 20s);
  ASSERT_EQ(pids.size(), 4u) << run.output;
  EXPECT_EQ(run.code, SIGKILL) << run.output;
  EXPECT_EQ(still_running_after(pids, 2s), std::vector<pid_t>{}) << run.output;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count(), 2.0);
}

// The launcher and its guardian killed together (as `kill -9 -PGID` or a
// scheduler does): the workers still die, through PR_SET_PDEATHSIG.
TEST(LaunchOwnership, KilledLauncherGroupTakesItsWorkersAlong) {
  std::vector<pid_t> workers;
  CliRun run = run_ctp({"launch", "--nproc", "2", "--", "sh", "-c", "echo pid=$$; exec sleep 30"},
                       [&](const std::string& out, pid_t launcher) {
                         if (workers.empty() && printed_pids(out).size() == 2) {
                           workers = printed_pids(out);
                           ::kill(-launcher, SIGKILL);
                         }
                       },
                       20s, /*own_group=*/true);
  ASSERT_EQ(workers.size(), 2u) << run.output;
  EXPECT_EQ(still_running_after(workers, 2s), std::vector<pid_t>{}) << run.output;
}

TEST(LaunchOwnership, WorkerThatCannotStartStopsTheOnesStarted) {
  // Out of file descriptors after a few workers (each takes two pipes);
  // --base-port, so that choosing ports opens no sockets.
  const auto start = std::chrono::steady_clock::now();
  CommandResult r = run_command("ulimit -n 32; exec " + std::string(CTP_CLI_PATH) +
                                " launch --nproc 40 --base-port 20000 -- sleep 30");
  // The workers were killed, not waited for.
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10.0);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  std::size_t at = r.output.find("ctp: error: cannot start rank ");
  ASSERT_NE(at, std::string::npos) << r.output;
  const int failed_rank = std::stoi(r.output.substr(at + 30));
  EXPECT_GT(failed_rank, 0) << r.output;
  EXPECT_NE(r.output.find("Too many open files; killed the " + std::to_string(failed_rank) +
                          " worker(s) already started"),
            std::string::npos)
      << r.output;
  std::vector<pid_t> started;
  for (int rank = 0; rank < failed_rank; ++rank) started.push_back(started_pid(r.output, rank));
  EXPECT_EQ(still_running_after(started, 0ms), std::vector<pid_t>{}) << r.output;
}

TEST(LaunchOwnership, OutputThatCannotBeWrittenStopsTheJobAndSaysSo) {
  TempDir dir("launch_output");
  const std::string launch = std::string(CTP_CLI_PATH) + " launch --nproc 2 -- sh -c " +
                             "'while :; do echo line; sleep 0.01; done'";
  // The reader goes away (SIGPIPE would have killed the launcher silently).
  CommandResult piped = run_command("{ " + launch + " 2>" + dir / "err" + "; echo $? >" +
                                    dir / "rc" + "; } | head -n 2");
  std::ifstream rc_file(dir / "rc"), err_file(dir / "err");
  std::string rc;
  std::getline(rc_file, rc);
  std::stringstream err;
  err << err_file.rdbuf();
  EXPECT_EQ(rc, "1") << err.str();
  EXPECT_NE(err.str().find("ctp: error: cannot write the workers' output to standard output: "
                           "Broken pipe: stopped the job; the workers: rank 0 was stopped by the "
                           "launcher"),
            std::string::npos)
      << err.str();
  // A full disk.
  CommandResult full = run_command("{ " + launch + " >/dev/full; }");
  EXPECT_EQ(full.exit_code, 1) << full.output;
  EXPECT_NE(full.output.find("cannot write the workers' output to standard output: No space left "
                             "on device"),
            std::string::npos)
      << full.output;
}

TEST(LaunchOwnership, TimeoutFromTheEnvironmentIsKeptAndAbsurdOnesRefused) {
  const std::string show = " -- sh -c 'echo t=$CTP_COMM_TIMEOUT'";
  CommandResult kept = run_command("CTP_COMM_TIMEOUT=4.5 " + std::string(CTP_CLI_PATH) +
                                   " launch --nproc 1" + show);
  EXPECT_EQ(kept.exit_code, 0) << kept.output;
  EXPECT_NE(kept.output.find("[rank 0] t=4.5\n"), std::string::npos) << kept.output;
  CommandResult flag_wins = run_command("CTP_COMM_TIMEOUT=4.5 " + std::string(CTP_CLI_PATH) +
                                        " launch --nproc 1 --timeout 6" + show);
  EXPECT_NE(flag_wins.output.find("[rank 0] t=6\n"), std::string::npos) << flag_wins.output;
  CommandResult unset = run_command("env -u CTP_COMM_TIMEOUT " + std::string(CTP_CLI_PATH) +
                                    " launch --nproc 1" + show);
  EXPECT_NE(unset.output.find("[rank 0] t=300\n"), std::string::npos) << unset.output;

  for (const char* bad : {"1e300", "inf", "nan", "-1", "0"}) {
    CommandResult r = run_command(std::string(CTP_CLI_PATH) + " launch --nproc 1 --timeout " +
                                  bad + show);
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.output;
    EXPECT_NE(r.output.find("--timeout must be a positive number of seconds, at most 1e+07"),
              std::string::npos)
        << r.output;
    EXPECT_EQ(r.output.find("t="), std::string::npos) << r.output;
  }
  CommandResult bad_env = run_command("CTP_COMM_TIMEOUT=1e300 " + std::string(CTP_CLI_PATH) +
                                      " launch --nproc 1" + show);
  EXPECT_EQ(bad_env.exit_code, 1) << bad_env.output;
  EXPECT_NE(bad_env.output.find("CTP_COMM_TIMEOUT='1e300': CTP_COMM_TIMEOUT must be a positive"),
            std::string::npos)
      << bad_env.output;
  CommandResult bad_grace = run_command(std::string(CTP_CLI_PATH) +
                                        " launch --nproc 1 --grace 1e300" + show);
  EXPECT_EQ(bad_grace.exit_code, 2) << bad_grace.output;
}

}  // namespace
