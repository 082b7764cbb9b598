// The rewrite steps of the reference's Collective and GradAllReduce classes
// that several modes share, each matching its Python method op for op. They
// walk the block's op list once, inserting at stable handles where the
// reference re-enumerates the ops and inserts by index.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "program_ir/block.h"
#include "transpilers/collective_options.h"
#include "transpilers/name_generator.h"
#include "transpilers/op_dialect.h"
#include "transpilers/op_walk.h"
#include "transpilers/parameters.h"
#include "transpilers/rewrite_support.h"

namespace ctp {

// Collective._init_communicator for one ring: a RAW var from
// names.generate("nccl_id"), c_gen_nccl_id, then c_comm_init (or, with
// `multitrainer`, c_comm_init_multitrainer), appended to the block.
void append_communicator_init(Block& block, const CollectiveOptions& options, int ring_id,
                              bool multitrainer, NameGenerator& names, std::string_view pass);

// Collective._broadcast_params: c_broadcast (paddle3: broadcast, slots x and
// out) of every non-distributed parameter in the set's order, rings
// alternating, then one c_sync_comm_stream per ring naming the last parameter,
// distributed or not. Parameters the block does not declare are declared first
// (parameters.undeclared). Throws when there is no parameter at all (the
// reference fails there with UnboundLocalError).
void append_param_broadcast(Block& block, int nrings, const ParameterSet& parameters,
                            OpDialect dialect, std::string_view pass);

// c_comm_init_all {ring_id: 0} (paddle3: comm_init_all), for
// SingleProcessMultiThread and MultiThread on one node.
void append_comm_init_all(Block& block, OpDialect dialect);

// GradAllReduce._insert_scale_loss_grad_ops: a scale op (FLOAT `scale`) right
// after every op whose role is Backward|Loss, on its first output.
void insert_loss_grad_scale(Block& block, float scale, std::string_view pass);

// GradAllReduce._insert_allreduce_ops' walk, with the collective as a
// parameter (MultiThread's all_gather walk is the same with c_allgather).
struct GradCollective {
  // Called for every pair once its param is read, distributed or not.
  std::function<void(const ParamGrad& pair, const Var& param)> on_param;
  // The collective op for a non-distributed grad (pair.grad, declared) on
  // ring `ring_id`.
  std::function<Op(const ParamGrad& pair, int ring_id)> make_op;
};

// After each backward op with op_role_var, c_sync_calc_stream on its first
// non-distributed grad, then the collective of each such grad in reverse pair
// order (rings alternating in the reference's reverse walk); then one
// c_sync_comm_stream per ring before the first optimizer op, naming the last
// grad the walk saw.
void insert_grad_collectives(Block& block, int nrings, const GradCollective& collective,
                             std::string_view pass);

// insert_grad_collectives with c_allreduce_sum {ring_id}.
void insert_grad_allreduce(Block& block, int nrings, std::string_view pass);

// The non-distributed grads of the backward ops with op_role_var, in the
// given op order (pair order within an op), each with the op that makes it.
struct CollectedGrad {
  const Var* var;
  Block::OpHandle producer;
  OpSite site;             // the producer, for error messages
  std::size_t op_number;   // which grad op of the walk (grads of one op share it)
};
struct CollectedGrads {
  std::vector<CollectedGrad> grads;
  bool saw_grad = false;  // any pair was read, distributed or not
};
CollectedGrads collect_grads(Block& block, WalkOrder order, std::string_view pass);

// One c_sync_comm_stream {ring_id} per ring, naming `var`, before the
// block's first optimizer op (nothing when it has none): the optimizer then
// reads what every ring's collectives wrote.
void insert_comm_syncs_before_optimizer(Block& block, int nrings, const std::string& var,
                                        std::string_view pass);

// GradAllReduceOptions::bucket_bytes > 0: walking the backward ops in
// order, each non-distributed grad joins the open bucket (a new one when its
// dtype differs); a bucket that reaches `bucket_bytes` is closed after the
// op that made its last grad with coalesce_tensor (copy_data, aligned) into
// a new var "grad_bucket_<k>", c_sync_calc_stream and c_allreduce_sum of it
// (rings alternating); then one c_sync_comm_stream per ring before the first
// optimizer op. Throws, naming the grad, when a grad's shape is not static.
void insert_bucketed_grad_allreduce(Block& block, int nrings, int64_t bucket_bytes,
                                    NameGenerator& names, std::string_view pass);

}  // namespace ctp
