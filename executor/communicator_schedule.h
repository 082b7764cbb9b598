// Cross-rank consistency of the collective schedule. Ranks that run
// different collectives (another op order, another shape, a rank that
// skipped a gradient, other rings) hang in Gloo or NCCL, abort inside them,
// or silently mix unrelated buffers; it is the most common cause of hung
// data-parallel jobs. Before its first communicating op that can use a ring,
// every rank exchanges a fingerprint of what its block will run from there
// (ring set-up ops with their rank counts, and collectives with their var,
// ring, dtype and element count, in order); if the fingerprints differ, the
// full schedules are exchanged and every rank stops with an error showing
// the first call where each pair differs. In a main program that is before
// its first collective; in a startup program, right after its first ring is
// set up, so the rings that follow and the parameter broadcasts are covered.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "executor/runtime/communicator.h"
#include "program_ir/block.h"

namespace ctp {

struct CollectiveCall {
  std::string op_type;  // c_allreduce_sum, c_broadcast, c_comm_init, ...
  // The first input (a set-up op's id var): ranks that reduce or broadcast
  // other vars in the same places (two broadcasts swapped) mix them.
  std::string var;
  int ring_id = 0;
  DataType dtype = DataType::FP32;
  int64_t numel = -1;   // -1 when a dimension is unknown before running
  int root = -1;        // c_broadcast's root
  int tensors = 1;      // c_allreduce_xsum fuses several
  int nranks = -1;      // a ring set-up op's rank count; -1 for collectives
  bool operator==(const CollectiveCall&) const = default;
};
using CollectiveSchedule = std::vector<CollectiveCall>;

// Whether `op` sets a ring up (c_gen_nccl_id, c_comm_init...) or is a
// collective: the ops the schedule lists. Stream syncs are neither.
bool communicates(const Op& op);

// The ring set-up ops and collectives of `block` from op `first_op` on, in
// op order, with dtypes and element counts from its var declarations.
CollectiveSchedule collective_schedule(const Block& block, std::size_t first_op = 0);

// "c_allreduce_sum ring 0 FP32[1000] X='fc_0.w_0@GRAD'".
std::string to_string(const CollectiveCall& call);
uint64_t fingerprint(const CollectiveSchedule& schedule);

// Collective over every ring `comms` holds: all ranks must pass schedules
// with the same fingerprint. Otherwise throws ctp::Error (on every rank)
// naming, for each rank that differs from the lowest one, the index of the
// first differing collective and what each side runs there.
void verify_schedule_agreement(CommunicatorManager& comms, const CollectiveSchedule& schedule);

}  // namespace ctp
