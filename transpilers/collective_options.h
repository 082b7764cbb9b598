// What every collective transpiler is told about the job, as plain values:
// where the ranks are, how many rings to use, which vars are parameters and
// which op names to write. Each transpiler adds its own
// options struct beside its class (e.g. MultiThreadOptions in multi_thread.h).
// The library reads no environment variables; `ctp transpile` maps Paddle's
// PADDLE_FUSE_ALLREDUCE, PADDLE_LOSS_SCALE and FLAGS_selected_gpus onto the
// transpilers' own options.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "transpilers/op_dialect.h"
#include "transpilers/parameters.h"

namespace ctp {

struct CollectiveOptions {
  // Rings (communicators) to alternate over. Unset: the transpiler's default
  // (the reference's: GradAllReduce and LocalSGD 2, MultiThread 1).
  // SingleProcessMultiThread always uses one ring.
  std::optional<int> nrings;
  int rank = 0;
  std::vector<std::string> endpoints;  // "host:port", one per rank
  std::string current_endpoint;        // must be one of `endpoints`
  // The reference blocks rank 0 until every other endpoint accepts a TCP
  // connection. ctp's transpile never blocks: the executor's rendezvous retries
  // until all ranks are up, so this flag is kept only to be faithful to the
  // reference's interface and has no effect on the rewritten programs.
  bool wait_port = false;
  // Which vars are parameters (parameters.h): the marked ones, the update
  // ops' Param inputs, or (auto) the marked ones when any var is marked.
  ParamSource params = ParamSource::kAuto;
  // Which op names the rewrites write (op_dialect.h).
  OpDialect dialect = OpDialect::kLegacy;
};

}  // namespace ctp
