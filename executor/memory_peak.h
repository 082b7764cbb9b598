// Where a step's tensor memory peaks, for `--profile`: the op after which
// the device's tensors held the most bytes (memory_stats' current bytes,
// read after each op and before the vars that die there are freed), and
// what was held at that moment: the largest tensors, each with its dtype,
// shape and bytes, the op that made it and the op after which the step frees
// it (or that it stays past the step), and the bytes by kind (persistable
// state, intermediates still to be read, vars kept past the step).
//
// Steps repeat, so the tensors are listed from the next step that reaches
// the peak op: finding the op costs one counter read per op, and the scope
// is walked once (not at every op of a growing forward pass). memory_stats
// counts every buffer of the device kind in the process, so the bytes held
// may exceed what this scope's tensors hold (buffers outside it: kernel
// workspaces, other device threads' scopes, tensors the caller holds).
#pragma once
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "executor/runtime/scope.h"
#include "executor/var_release.h"

namespace ctp {

class Block;

class MemoryPeak {
 public:
  // Before a step of `block` on a device of `device`; `release`: the plan
  // the step frees vars by (null when it keeps every tensor). Both must
  // outlive the step.
  void begin_step(const Block& block, DeviceKind device, const VarReleasePlan* release);
  // After op `index` (the last op of a batch) ran, before the vars that die
  // there are freed.
  void after_op(std::size_t index, const Scope& scope);
  void end_step();

  struct HeldTensor {
    std::string name;
    DataType dtype = DataType::FP32;
    std::vector<int64_t> shape;
    int64_t bytes = 0;       // its buffer's (shared by `views` more vars)
    std::size_t views = 0;   // other vars viewing the same buffer (coalesce_tensor)
    std::optional<std::size_t> made_by;        // the first op writing it
    std::optional<std::size_t> freed_after;    // null: it stays past the step
    std::optional<std::size_t> elements_freed_after;  // before freed_after: only its shape is read
    bool persistable = false;
  };
  struct Snapshot {
    std::size_t op = 0;          // the peak op
    int64_t held_bytes = 0;      // memory_stats' current bytes after it
    int64_t scope_bytes = 0;     // of them, held by the scope's tensors
    std::size_t scope_tensors = 0;   // buffers, each counted once
    int64_t persistable_bytes = 0, intermediate_bytes = 0, kept_bytes = 0;
    std::vector<HeldTensor> largest;  // by bytes, the largest first
  };
  // The op after which the most bytes were held in any step so far, and
  // how many; nullopt before any op ran.
  std::optional<std::pair<std::size_t, int64_t>> peak_op() const;
  // What was held after the peak op, once a step after the one that found
  // it has reached it.
  const std::optional<Snapshot>& snapshot() const { return snapshot_; }

  // The peak op and the `top` largest tensors held after it.
  void print(std::ostream& out, std::size_t top = 12) const;

 private:
  // The release plan by var: after which op it, or its elements, go.
  struct FreedAfter {
    std::unordered_map<std::string, std::size_t> vars, elements;
  };
  Snapshot take_snapshot(std::size_t index, int64_t held, const Scope& scope) const;
  HeldTensor describe(const std::string& name, const Tensor& t, const FreedAfter& freed) const;
  std::string op_text(std::size_t index) const;  // "op 12 'mul'"


  const Block* block_ = nullptr;
  DeviceKind device_ = DeviceKind::CPU;
  const VarReleasePlan* release_ = nullptr;
  BlockVarUses uses_;
  std::vector<std::string> op_types_;  // by op index
  int64_t best_bytes_ = -1;
  std::size_t best_op_ = 0;
  std::optional<std::size_t> target_op_;  // where this step lists the tensors held
  std::optional<Snapshot> snapshot_;
};

}  // namespace ctp
