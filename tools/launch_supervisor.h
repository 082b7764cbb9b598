// Runs and watches the workers of `ctp launch`: starts each with its
// environment, prefixes every line of its output with "[rank R] ", and when
// one fails, gives the others a grace period to report (they name the dead
// peer themselves), then stops them. The result names the rank that failed
// first and how (exit code or signal).
#pragma once
#include <chrono>
#include <string>
#include <vector>

#include "tools/launch_plan.h"

namespace ctp::launch {

struct WorkerEnd {
  int rank = 0;
  int pid = 0;
  bool exited = false;  // false: ended by a signal
  int code = 0;         // exit code or signal number
  bool stopped_by_launcher = false;
  std::string describe() const;  // "exited with code 3", "was killed by signal 9 (SIGKILL)"
};

struct LaunchResult {
  std::vector<WorkerEnd> ends;  // by local rank
  int first_failure = -1;       // index into ends, -1 when all succeeded
  int interrupted_by = 0;       // the signal that interrupted the launcher, if any
  // The launcher's own output failed ("standard output: Broken pipe"): the
  // workers were stopped.
  std::string output_error;
  bool ok() const { return first_failure < 0 && interrupted_by == 0 && output_error.empty(); }
};

// Blocks until every worker has ended. If a worker cannot be started, the
// ones already started are killed and ctp::Error names the rank. If the
// launcher dies, so do its workers (launch_guardian.h). Lines go to `out_fd` (workers'
// stdout) and `err_fd` (their stderr and the launcher's own notes).
LaunchResult supervise(const LaunchPlan& plan, const std::vector<std::string>& command,
                       std::chrono::milliseconds grace, int out_fd = 1, int err_fd = 2);

}  // namespace ctp::launch
