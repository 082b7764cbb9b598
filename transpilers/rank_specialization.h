// Per-rank programs from one transpile. Of everything the transpilers write,
// only a few startup attributes depend on the rank: c_gen_nccl_id's rank,
// endpoint and other_endpoints, c_comm_init's rank and
// c_comm_init_multitrainer's trainer_id. The main program is the same for every
// rank. So `ctp transpile --all-ranks` transpiles once for rank 0 and asks this
// class for each rank's startup program.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "program_ir/program.h"

namespace ctp {

class StartupRankSpecializer {
 public:
  // `transpiled` is the startup program transpiled for rank 0 with current
  // endpoint endpoints[0]; `original_op_count` the global block's op count
  // before the transpile (the passes only append, so the ops to rewrite are
  // among those after it).
  StartupRankSpecializer(Program transpiled, std::size_t original_op_count,
                         std::vector<std::string> endpoints);

  // The startup program a transpile for `rank` (current endpoint
  // endpoints[rank]) would produce. Throws ctp::Error when rank is out of range.
  Program for_rank(int rank) const;

  std::size_t rank_dependent_op_count() const { return positions_.size(); }

 private:
  Program template_;
  std::vector<std::size_t> positions_;  // in the global block, ascending
  std::vector<std::string> endpoints_;
};

}  // namespace ctp
