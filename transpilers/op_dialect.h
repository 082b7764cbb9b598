// Which op names the rewrites write. Paddle's later collective.py (the one
// beside Paddle 3's unified communication library) writes three ops
// differently from the reference: `broadcast` (slots x, out) for c_broadcast,
// `all_gather` (slots x, out; attributes nranks, ring_id) for c_allgather, and
// `comm_init_all` for c_comm_init_all. Their attributes and everything else it
// writes are the reference's. ctp's executor runs both dialects.
#pragma once
#include <string_view>

namespace ctp {

enum class OpDialect {
  kLegacy,   // the reference: c_broadcast, c_allgather, c_comm_init_all (the default)
  kPaddle3,  // broadcast, all_gather, comm_init_all
};
std::string_view to_string(OpDialect dialect);
// "legacy" or "paddle3"; throws ctp::Error otherwise.
OpDialect parse_op_dialect(std::string_view name);

// An op as a dialect spells it: its type and, for ops with one input and one
// output, their slot names.
struct OpSpelling {
  std::string_view type;
  std::string_view input;
  std::string_view output;
};

// How `dialect` spells the op the reference calls `legacy_type` (with input X
// and output Out). Ops both dialects spell alike come back unchanged.
OpSpelling spell(OpDialect dialect, std::string_view legacy_type);

}  // namespace ctp
