// Cross-rank consistency of the collective schedule. Ranks that run
// different collectives (another op order, another shape, a rank that
// skipped a gradient) hang in Gloo or NCCL, or silently mix unrelated
// buffers; it is the most common cause of hung data-parallel jobs. Before
// the first step, every rank exchanges a fingerprint of the collectives its
// program will run (op type, ring, dtype, element count, in order); if the
// fingerprints differ, the full schedules are exchanged and every rank stops
// with an error showing the first collective where each pair differs.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "executor/runtime/communicator.h"
#include "program_ir/block.h"

namespace ctp {

struct CollectiveCall {
  std::string op_type;  // c_allreduce_sum, c_broadcast, ...
  std::string var;      // the first input, for the error message
  int ring_id = 0;
  DataType dtype = DataType::FP32;
  int64_t numel = -1;   // -1 when a dimension is unknown before running
  int root = -1;        // c_broadcast's root
  int tensors = 1;      // c_allreduce_xsum fuses several
  bool operator==(const CollectiveCall&) const = default;
};
using CollectiveSchedule = std::vector<CollectiveCall>;

// The collectives `block` runs, in op order, with dtypes and element counts
// from its var declarations. Set-up and stream-sync ops are not collectives.
CollectiveSchedule collective_schedule(const Block& block);

// "c_allreduce_sum ring 0 FP32[1000] X='fc_0.w_0@GRAD'".
std::string to_string(const CollectiveCall& call);
uint64_t fingerprint(const CollectiveSchedule& schedule);

// Collective over every ring `comms` holds: all ranks must pass schedules
// with the same fingerprint. Otherwise throws ctp::Error (on every rank)
// naming, for each rank that differs from the lowest one, the index of the
// first differing collective and what each side runs there.
void verify_schedule_agreement(CommunicatorManager& comms, const CollectiveSchedule& schedule);

}  // namespace ctp
