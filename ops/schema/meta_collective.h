// The rules of the collectives that change shapes (c_allgather and Paddle 3's
// all_gather), written once for the
// schema's inference (ops/schema/defs_collective.cc) and the CPU and CUDA
// kernels; see meta_math.h.
#pragma once
#include <cstdint>
#include <string_view>

#include "ops/schema/op_context.h"

namespace ctp::meta {

// The slots of a collective with one input and one output. The reference's
// c_ ops name them X and Out; Paddle 3's broadcast and all_gather name them x
// and out. Their rules are the same, and one kernel serves both spellings,
// registered under each name.
struct CollectiveSlots {
  std::string_view in;
  std::string_view out;
};
inline constexpr CollectiveSlots kLegacySlots{"X", "Out"};
inline constexpr CollectiveSlots kPaddle3Slots{"x", "out"};

// c_allgather: Out stacks X from `nranks` ranks along dim 0 (a 0-D X gathers
// into [nranks]). One rank is allowed, though Paddle asks for two, so that
// a program transpiled for a single worker still infers and runs.
Shape c_allgather(const OpContext& ctx, TensorMeta x, int64_t nranks);

}  // namespace ctp::meta
