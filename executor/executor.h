// The executor: prepares one block of a program for a device once (every op's
// kernel is resolved up front, so an unknown op or a missing kernel is
// reported before anything runs) and then runs it step after step on a Scope
// with no per-step lookups.
//
// Inputs are bound and outputs read either through Paddle's `feed`/`fetch` ops
// (backed by the FeedFetchLists in RunServices, indexed by their `col`
// attribute) or directly: set tensors in the Scope before a step and read them
// after. Persistable vars carry the model state between steps. By default
// every var keeps its tensor between steps (temporaries keep their buffers,
// so kernels write into the same memory every step). With
// set_release_dead_vars(true), as ctp's runners set it, an intermediate var's
// tensor is freed after the last op that names it (executor/var_release.h;
// its elements already after the last op that reads them, when only ops
// that read its shape come later), unless the caller keeps it (keep_vars)
// to read it after the step; the vars of collectives and coalesce_tensor
// keep their buffers either way (which keeps coalesce_tensor's views
// intact).
#pragma once
#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "executor/communicator_schedule.h"
#include "executor/runtime/kernel.h"
#include "executor/op_batching.h"
#include "executor/var_release.h"
#include "program_ir/program.h"

namespace ctp {

class Executor {
 public:
  // Prepares block `block_idx` of `program` for `services.device`. Throws
  // ctp::Error listing every op (index and type) that is unknown or has no
  // kernel for that device. `program` must outlive the executor and must not
  // be edited while it exists.
  Executor(const Program& program, RunServices services, int32_t block_idx = 0);

  // Runs every op of the block once, in order, then advances services().step.
  // With services().batch_ops, a run of independent ops whose type has a
  // batch kernel on this device goes to it as one call (op_batching.h); where
  // casts have one, they are first gathered (run_order()).
  // An error names the block, the op index and the op type. The first run
  // verifies the collective schedule with the peers before its first
  // communicating op that can use a ring (see RunServices).
  void run(Scope& scope);
  // Binds `feeds` to the feed ops (by `col`), runs one step and returns what
  // the fetch ops wrote (by `col`).
  std::vector<Tensor> run(Scope& scope, std::vector<Tensor> feeds);

  // Vars whose tensors stay in the scope after a step (read by the caller:
  // fetch targets, gradients taken out between steps); adds to those kept.
  void keep_vars(const std::vector<std::string>& names);
  // On: each intermediate var's tensor is freed after its last use in the
  // step (release_plan), so a step holds only what is still to be read. Off
  // (the default): every tensor stays in the scope, to read after a step.
  void set_release_dead_vars(bool release) { release_dead_vars_ = release; }
  // The vars (and the elements) freed after op i of each step while release is on.
  const VarReleasePlan& release_plan() const { return release_; }

  RunServices& services() { return services_; }
  const Block& block() const { return block_; }
  std::size_t op_count() const { return steps_.size(); }
  // The runs of ops that go to a batch kernel together (empty when none):
  // each run's first op (its index in the block) and its op count; a run of
  // gathered casts need not be consecutive in the block.
  std::vector<OpRun> batched_runs() const;
  // The op indices in the order a step runs them.
  const std::vector<std::size_t>& run_order() const { return order_; }

 private:
  struct PreparedOp {
    const Op* op;
    const KernelFn* kernel;
  };
  // One op alone (batch null), or `count` ops for `batch`: positions
  // first .. first + count - 1 of order_.
  struct PlannedStep {
    std::size_t first;
    std::size_t count;
    const BatchKernelFn* batch;
  };
  // Before the block's first communicating op that can use a ring, once:
  // the ranks compare what the block runs from there (communicator_schedule.h).
  void verify_schedule_before(const PlannedStep& planned);
  // Throws when `op` wrote a non-finite value (RunServices::check_finite).
  void check_finite(const Op& op);
  void run_batch(const PlannedStep& step, Scope& scope);
  // Frees the vars that die after the ops of `step` (telling the profile, if
  // any, what is held just before).
  void release_after(const PlannedStep& step, Scope& scope);

  const Program& program_;
  const Block& block_;
  RunServices services_;
  std::unordered_set<std::string> kept_;
  bool release_dead_vars_ = false;
  VarReleasePlan release_;
  std::vector<PreparedOp> steps_;
  // The op indices in the order they run: the block's, except that with
  // batch_ops AMP's casts gather into runs (op_batching.h's gathering_order).
  std::vector<std::size_t> order_;
  std::vector<PlannedStep> plan_;
  std::vector<bool> communicating_;  // by op index: set-up ops and collectives
  bool schedule_checked_ = false;
  Scope* current_scope_ = nullptr;  // the scope of the step running now
};

// Vars of the block that some op reads before any op writes them and that are
// neither persistable nor feed/fetch holders: what a caller must provide
// (feed ops' outputs count as provided). In first-read order.
std::vector<std::string> unbound_inputs(const Block& block);

}  // namespace ctp
