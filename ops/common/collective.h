// Helpers shared by the CPU and CUDA kernels of the communication ops: attribute
// access that tolerates ops whose definitions are not registered (programs
// from Paddle omit attributes that have defaults), and the run's
// communicators.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "executor/runtime/communicator.h"
#include "executor/runtime/kernel.h"

namespace ctp::collective {

// The op's attribute, else the registry's default, else `fallback`; throws
// ctp::Error naming the op and the attribute when none exists.
int64_t int_attr(KernelContext& ctx, std::string_view name,
                 std::optional<int64_t> fallback = std::nullopt);
std::string string_attr(KernelContext& ctx, std::string_view name);
std::vector<std::string> strings_attr(KernelContext& ctx, std::string_view name,
                                      bool optional = false);
std::vector<int64_t> ints_attr(KernelContext& ctx, std::string_view name);

// The slots of a collective with one input and one output. The reference's
// c_ ops name them X and Out; Paddle 3's broadcast and all_gather name them x
// and out. One kernel serves both spellings, registered under each name.
struct CollectiveSlots {
  std::string_view in;
  std::string_view out;
};
inline constexpr CollectiveSlots kLegacySlots{"X", "Out"};
inline constexpr CollectiveSlots kPaddle3Slots{"x", "out"};

// The run's communicator manager; throws when the run has none.
CommunicatorManager& comms(KernelContext& ctx);
// The communicator of the op's ring_id attribute (default 0).
Communicator& ring(KernelContext& ctx);

// Makes the op's Out (slot `out_slot`, argument i) hold X's values: nothing
// to do when both name one var; otherwise Out takes X's dtype and shape and
// a copy of its data. Returns Out.
Tensor& out_like_input(KernelContext& ctx, std::size_t i = 0, std::string_view in_slot = "X",
                       std::string_view out_slot = "Out");

}  // namespace ctp::collective
