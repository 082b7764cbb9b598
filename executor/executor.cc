#include "executor/executor.h"

#include <algorithm>

#include "executor/finite_check.h"
#include "executor/op_profile.h"
#include "executor/runtime/backend_library.h"
#include "executor/var_release.h"
#include "ops/cpu/link_anchor.h"
#include "ops/schema/op_def.h"

namespace ctp {
namespace {

std::string device_name(DeviceKind kind) { return kind == DeviceKind::CPU ? "CPU" : "CUDA"; }

// The place of `count` ops from `first`, run as one step.
SourceLocation ops_place(const Block& block, std::size_t first, std::size_t count,
                         const Op& op) {
  return SourceLocation{.block = block.idx,
                        .op = static_cast<int64_t>(first),
                        .op_count = static_cast<int64_t>(count),
                        .op_type = op.type};
}

// Gives an error from a step the place of its ops, unless it names an op
// already: kernels name the op they fail on (one of a batch's ops, or the
// op of a kernel they ran inside their own), while the layers below them
// (tensors, scopes, communicators) do not know it. The type of the error
// (e.g. CommAbortedError) is kept; other exceptions become ctp::Error.
// Nothing is formatted unless the step fails.
template <typename Place, typename Step>
void run_at(Place&& place_of, Step&& step) {
  try {
    step();
  } catch (Error& e) {
    if (!e.place().has_op()) e.locate(place_of());
    throw;
  } catch (const std::exception& e) {
    throw Error(place_of(), e.what());
  }
}

// Ops that reach vars outside their slots (a sub-block's ops, VAR
// attributes): gathering moves no op across them.
bool names_blocks_or_vars(const Op& op) {
  for (const NamedAttribute& a : op.attrs()) {
    const AttrType t = a.value.type();
    if (t == AttrType::BLOCK || t == AttrType::BLOCKS || t == AttrType::VAR || t == AttrType::VARS)
      return true;
  }
  return false;
}

bool is_holder(const Block& block, const std::string& name) {
  const Var* v = block.find_var(name);
  return v && (v->type == VarKind::FEED_MINIBATCH || v->type == VarKind::FETCH_LIST);
}

}  // namespace

Executor::Executor(const Program& program, RunServices services, int32_t block_idx)
    : program_(program), block_(program.block(block_idx)), services_(std::move(services)) {
  link_cpu_kernels();
  const DeviceKind device = services_.device.kind;
  // A device kind built as a library of its own (CUDA) brings its kernels
  // when it is loaded, on the first run that asks for it.
  const SourceLocation block_place{.block = block_idx};
  try {
    load_device_backend(device);
  } catch (const Error& e) {
    throw Error(block_place, "cannot run on " + services_.device.to_string() + ": " + e.what());
  }
  const KernelRegistry& kernels = KernelRegistry::global();
  const DeviceKind other = device == DeviceKind::CPU ? DeviceKind::CUDA : DeviceKind::CPU;
  std::string problems;
  std::size_t problem_count = 0;
  int64_t index = 0;
  steps_.reserve(block_.op_count());
  for (const Op& op : block_.ops()) {
    const KernelFn* kernel = kernels.find(op.type, device);
    if (!kernel) {
      ++problem_count;
      const bool known = OpRegistry::global().find(op.type) || kernels.find(op.type, other);
      problems += "\n  op " + std::to_string(index) + " '" + op.type + "': " +
                  (known ? "no " + device_name(device) + " kernel" : "unknown op");
    }
    steps_.push_back({&op, kernel});
    ++index;
  }
  communicating_.assign(steps_.size(), false);
  for (std::size_t i = 0; i < steps_.size(); ++i) communicating_[i] = communicates(*steps_[i].op);
  if (problem_count)
    throw Error(block_place, "cannot run on " + services_.device.to_string() + ": " +
                                 std::to_string(problem_count) + " op(s) without a kernel:" +
                                 problems);

  order_.resize(steps_.size());
  for (std::size_t i = 0; i < order_.size(); ++i) order_[i] = i;
  std::vector<OpRun> runs;
  if (services_.batch_ops) {
    // AMP's casts gather where a batch kernel takes them (op_batching.h).
    if (kernels.find_batch("cast", device))
      order_ = gathering_order(
          block_, [](const Op& op) { return op.type == "cast"; },
          [](const Op& op) { return communicates(op) || names_blocks_or_vars(op); });
    runs = independent_op_runs(block_, order_, [&](const Op& op) {
      return kernels.find_batch(op.type, device) != nullptr;
    });
  }
  auto run = runs.begin();
  for (std::size_t i = 0; i < steps_.size();) {
    if (run != runs.end() && run->first == i) {
      plan_.push_back({i, run->count, kernels.find_batch(steps_[order_[i]].op->type, device)});
      i += run->count;
      ++run;
    } else {
      plan_.push_back({i, 1, nullptr});
      ++i;
    }
  }
  release_ = plan_var_release(program_, block_.idx, kept_);
}

void Executor::keep_vars(const std::vector<std::string>& names) {
  bool added = false;
  for (const std::string& name : names) added |= kept_.insert(name).second;
  if (added) release_ = plan_var_release(program_, block_.idx, kept_);
}

void Executor::release_after(const PlannedStep& step, Scope& scope) {
  // What the step holds now, before the frees, is what the profile's memory
  // peak is about.
  if (services_.profile)
    services_.profile->memory().after_op(order_[step.first + step.count - 1], scope);
  if (!release_dead_vars_) return;
  for (std::size_t p = step.first; p < step.first + step.count; ++p) {
    const std::size_t i = order_[p];
    for (const std::string& name : release_.elements_after_op[i])
      if (Tensor* t = scope.find(name)) t->release_elements();
    for (const std::string& name : release_.after_op[i])
      if (Tensor* t = scope.find(name)) *t = Tensor();
  }
}

std::vector<OpRun> Executor::batched_runs() const {
  std::vector<OpRun> out;
  for (const PlannedStep& step : plan_)
    if (step.batch) out.push_back({order_[step.first], step.count});
  return out;
}

void Executor::verify_schedule_before(const PlannedStep& planned) {
  // The first communicating op of this step, if any (gathering never moves
  // an op across one, so the block's order and the run's agree on it).
  std::size_t op = steps_.size();
  for (std::size_t p = planned.first; p < planned.first + planned.count && op == steps_.size(); ++p)
    if (communicating_[order_[p]]) op = order_[p];
  if (op == steps_.size()) return;
  // Before the first ring exists (a startup program's first set-up ops)
  // there is nothing to compare over: the first op after it checks the rest.
  if (services_.comms->ring_ids().empty()) return;
  schedule_checked_ = true;
  // Its errors name the op before which the ranks compared their schedules.
  run_at([&] { return ops_place(block_, op, 1, *steps_[op].op); },
         [&] { verify_schedule_agreement(*services_.comms, collective_schedule(block_, op)); });
}

void Executor::run(Scope& scope) {
  current_scope_ = &scope;
  const bool check_schedule =
      !schedule_checked_ && services_.comms && services_.verify_collective_schedule;
  OpProfile* profile = services_.profile;
  if (profile) {
    profile->begin_step(block_, order_);
    profile->memory().begin_step(block_, services_.device.kind,
                                 release_dead_vars_ ? &release_ : nullptr);
  }
  for (const PlannedStep& planned : plan_) {
    if (check_schedule && !schedule_checked_) verify_schedule_before(planned);
    if (planned.batch) {
      run_batch(planned, scope);
      release_after(planned, scope);
      continue;
    }
    const std::size_t index = order_[planned.first];
    const PreparedOp& step = steps_[index];
    KernelContext ctx(*step.op, block_, scope, services_, static_cast<int64_t>(index));
    run_at([&] { return ops_place(block_, index, 1, *step.op); }, [&] {
      if (profile) profile->before_op(index);
      (*step.kernel)(ctx);
      if (profile) profile->after_op(index);
      if (services_.check_finite) check_finite(*step.op);
    });
    release_after(planned, scope);
  }
  if (profile) {
    profile->end_step();
    profile->memory().end_step();
  }
  ++services_.step;
}

void Executor::run_batch(const PlannedStep& step, Scope& scope) {
  std::vector<KernelContext> ops;
  ops.reserve(step.count);
  for (std::size_t p = step.first; p < step.first + step.count; ++p)
    ops.emplace_back(*steps_[order_[p]].op, block_, scope, services_,
                     static_cast<int64_t>(order_[p]));
  OpProfile* profile = services_.profile;
  const std::size_t first = order_[step.first];
  auto place = [&] { return ops_place(block_, first, step.count, *steps_[first].op); };
  run_at(place, [&] {
    if (profile) profile->before_op(first);
    (*step.batch)(ops);
    if (profile) profile->after_ops(&order_[step.first], step.count);
    // Independent ops: none read another's output, so the first in order
    // with a non-finite output produced it.
    if (services_.check_finite)
      for (const KernelContext& ctx : ops) try {
          check_finite(ctx.op());
        } catch (Error& e) {
          e.locate(ctx.location());
          throw;
        }
  });
}

void Executor::check_finite(const Op& op) {
  if (auto bad = non_finite_output(op, *current_scope_, services_.device_session))
    throw Error("step " + std::to_string(services_.step + 1) + ": " + *bad +
                " [check_nan_inf: the first op of the step to produce one]");
}

std::vector<Tensor> Executor::run(Scope& scope, std::vector<Tensor> feeds) {
  FeedFetchLists lists;
  lists.feed = std::move(feeds);
  FeedFetchLists* previous = services_.feed_fetch;
  services_.feed_fetch = &lists;
  try {
    run(scope);
  } catch (...) {
    services_.feed_fetch = previous;
    throw;
  }
  services_.feed_fetch = previous;
  return std::move(lists.fetch);
}

std::vector<std::string> unbound_inputs(const Block& block) {
  const BlockVarUses uses = block_var_uses(block);
  std::vector<std::string> out;
  for (const std::string& name : uses.order) {  // first-use order: a read here
    if (!uses.by_name.at(name).read_before_written || is_holder(block, name)) continue;
    const Var* v = block.find_var(name);
    if (v && v->persistable) continue;
    out.push_back(name);
  }
  return out;
}

}  // namespace ctp
