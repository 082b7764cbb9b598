// Helpers the CPU and CUDA kernels of the communication ops share: the run's
// communicators, c_allgather's rank count, errors naming the input, and
// outputs that alias their inputs.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "executor/runtime/communicator.h"
#include "executor/runtime/kernel.h"
#include "ops/schema/meta_collective.h"

namespace ctp::collective {

// The slots of c_ ops (X, Out) and Paddle 3's (x, out), from the rules.
using meta::CollectiveSlots;
using meta::kLegacySlots;
using meta::kPaddle3Slots;

// The run's communicator manager; throws when the run has none.
CommunicatorManager& comms(KernelContext& ctx);
// The communicator of the op's ring_id attribute (default 0).
Communicator& ring(KernelContext& ctx);

// The ranks c_allgather gathers from: its nranks attribute (the ring's size
// when absent), which must be the ring's size.
int64_t allgather_nranks(KernelContext& ctx, const Communicator& ring);

// Runs `collective`, rethrowing its ctp::Error with the op's place and the
// input (of slot `in`) it worked on: "block 0, op 7 'c_allreduce_sum':
// X='g': ...".
template <typename F>
void naming_input(KernelContext& ctx, std::string_view in, F&& collective,
                  const std::string& what = "") {
  try {
    collective();
  } catch (const Error& e) {
    ctx.fail(what + std::string(in) + "='" + ctx.input_names(in).at(0) + "': " + e.what());
  }
}

// Makes the op's Out (slot `out_slot`, argument i) hold X's values: nothing
// to do when both name one var; otherwise Out takes X's dtype and shape and
// a copy of its data. Returns Out.
Tensor& out_like_input(KernelContext& ctx, std::size_t i = 0, std::string_view in_slot = "X",
                       std::string_view out_slot = "Out");

}  // namespace ctp::collective
