#include "transpilers/rank_specialization.h"

#include <iterator>

#include "program_ir/error.h"
#include "transpilers/collective_rules.h"

namespace ctp {

StartupRankSpecializer::StartupRankSpecializer(Program transpiled,
                                               std::size_t original_op_count,
                                               std::vector<std::string> endpoints)
    : template_(std::move(transpiled)), endpoints_(std::move(endpoints)) {
  const Block& block = template_.global_block();
  std::size_t position = 0;
  for (const Op& op : block.ops()) {
    if (position >= original_op_count &&
        (op.type == "c_gen_nccl_id" || op.type == "c_comm_init" ||
         op.type == "c_comm_init_multitrainer"))
      positions_.push_back(position);
    ++position;
  }
}

Program StartupRankSpecializer::for_rank(int rank) const {
  if (rank < 0 || static_cast<std::size_t>(rank) >= endpoints_.size())
    throw Error("rank " + std::to_string(rank) + " is out of range for " +
                std::to_string(endpoints_.size()) + " endpoints");
  Program program = template_;
  Block& block = program.global_block();
  const std::string& endpoint = endpoints_[rank];
  auto it = block.ops().begin();
  std::size_t at = 0;
  for (std::size_t position : positions_) {
    std::advance(it, position - at);
    at = position;
    Op& op = *it;
    if (op.type == "c_gen_nccl_id") {
      op.set_attr("rank", Attribute(rank));
      op.set_attr("endpoint", Attribute(endpoint));
      op.set_attr("other_endpoints", Attribute(other_endpoints(endpoints_, endpoint)));
    } else if (op.type == "c_comm_init") {
      op.set_attr("rank", Attribute(rank));
    } else {
      op.set_attr("trainer_id", Attribute(rank));
    }
  }
  return program;
}

}  // namespace ctp
