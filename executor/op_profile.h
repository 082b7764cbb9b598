// Where an executor's steps go, op by op: `ctp run --profile` and the sample
// trainer's --profile print it. For every op the host time of its kernel call
// (on a GPU that is the launch: the kernels themselves run later) and, on a
// GPU, the compute stream's time from the op's start to its end, taken with
// CUDA events recorded around the op. A collective queued on its ring's own
// stream costs the compute stream nothing there; its cost shows up on the op
// that waits for it (c_sync_comm_stream) or not at all when it overlaps.
//
// The first step is not counted (it allocates buffers and loads cuBLAS's
// kernels). Profiling on a GPU waits for each step's last event, which
// costs little where the caller reads a result back every step anyway.
// Memory (executor/memory_peak.h): the op after which a step's tensors held
// the most, and what they were.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "executor/memory_peak.h"
#include "executor/runtime/device_backend.h"

namespace ctp {

class Block;

class OpProfile {
 public:
  // `device_timer`: the run's device's (DeviceRuntime::make_op_timer; null on
  // the CPU: host times only).
  explicit OpProfile(std::unique_ptr<OpTimer> device_timer = nullptr);
  ~OpProfile();
  OpProfile(const OpProfile&) = delete;
  OpProfile& operator=(const OpProfile&) = delete;

  // The executor's hooks, around one step of `block` and each of its ops.
  // `order`: the op indices in the order the step runs them (empty: the
  // block's order); the device's events follow it.
  void begin_step(const Block& block, const std::vector<std::size_t>& order = {});
  void before_op(std::size_t index);
  void after_op(std::size_t index);
  // After the `count` ops `indices` that ran as one batch (one call, one
  // launch): each is given an even share of the batch's time.
  void after_ops(const std::size_t* indices, std::size_t count);
  void end_step();

  struct Row {
    std::size_t index = 0;  // in the block
    std::string type;
    std::string output;     // the op's first output var, to tell ops of one type apart
    double host_ms = 0;     // per counted step
    double device_ms = 0;   // per counted step; 0 on the CPU
    std::size_t batch = 1;  // ops of the batch it ran in (1: alone)
  };
  // Per op, averaged over the counted steps, in block order.
  std::vector<Row> rows() const;
  int64_t counted_steps() const { return counted_; }
  bool on_gpu() const { return timer_ != nullptr; }

  // Where the step's tensor memory peaks (the executor reports to it too).
  MemoryPeak& memory() { return memory_; }
  const MemoryPeak& memory() const { return memory_; }

  // A table of the `top` most expensive ops (device time on a GPU, host time
  // on the CPU), then the totals and the share of every op type, then where
  // the memory peaks and the largest tensors held there.
  void print(std::ostream& out, std::size_t top = 15) const;

 private:
  const Block* block_ = nullptr;
  std::unique_ptr<OpTimer> timer_;
  int64_t steps_seen_ = 0, counted_ = 0;
  bool counting_ = false;
  std::vector<double> host_total_ms_, device_total_ms_;
  std::vector<std::size_t> position_of_;  // op index -> place in the run order
  std::vector<std::size_t> order_;        // place -> op index
  std::vector<double> step_ms_;           // a step's device times, by place
  std::vector<std::vector<std::size_t>> batches_;  // the ops of each batch run
  std::vector<bool> in_batch_;                     // by op index
  double op_start_ms_ = 0;  // of the op running now: the executor runs one at a time
  MemoryPeak memory_;
};

}  // namespace ctp
