#include "transpilers/single_process_multi_thread.h"

#include <optional>
#include <string>
#include <vector>

#include "transpilers/collective_rules.h"
#include "transpilers/collective_steps.h"
#include "transpilers/rewrite_support.h"

namespace ctp {
namespace {

constexpr TranspileMode kMode = TranspileMode::kSingleProcessMultiThread;

// _get_update_param_count: non-distributed params named by backward ops'
// op_role_var (a param named twice counts twice).
int count_update_params(Block& block, std::string_view pass) {
  int count = 0;
  std::size_t index = block.op_count();
  for (auto it = block.ops().end(); it != block.ops().begin();) {
    --it;
    --index;
    const OpSite site{pass, block, index, *it};
    if (!is_backward_at(site) || !it->has_attr(kOpRoleVarAttr)) continue;
    for (const ParamGrad& pair : param_grad_pairs_at(site))
      if (!require_var(site, pair.param, "op_role_var param").is_distributed) ++count;
  }
  return count;
}

// SingleProcessMultiThread._insert_fuse_allreduce_ops.
void insert_fused_allreduce(Block& block, int fuse_allreduce, std::string_view pass) {
  std::vector<std::string> input_grads;  // reverse op order, pair order within an op
  std::optional<Block::OpHandle> last_grad_op;  // the reference's global_offset - 1
  bool saw_grad = false;
  std::size_t index = block.op_count();
  for (auto it = block.ops().end(); it != block.ops().begin();) {
    --it;
    --index;
    const OpSite site{pass, block, index, *it};
    if (!is_backward_at(site) || !it->has_attr(kOpRoleVarAttr)) continue;
    for (const ParamGrad& pair : param_grad_pairs_at(site)) {
      const Var& param = require_var(site, pair.param, "op_role_var param");
      const Var& grad = require_var(site, pair.grad, "op_role_var grad");
      saw_grad = true;
      if (param.is_distributed) continue;
      input_grads.push_back(grad.name);
      if (!last_grad_op) last_grad_op = it;
    }
  }
  if (!saw_grad || !last_grad_op) return;
  const Attribute backward(op_role::kBackward);
  const int ring_id = 0;
  Block::OpHandle at = *last_grad_op;
  if (fuse_allreduce == 2) {
    const std::string& first = input_grads.front();
    at = block.insert_op_after(at, make_in_place_op("c_sync_calc_stream", first,
                                                    {{kOpRoleAttr, backward}}));
    at = block.insert_op_after(
        at, make_op("c_allreduce_xsum", {{"X", input_grads}}, {{"Out", input_grads}},
                    {{"ring_id", Attribute(ring_id)}, {kOpRoleAttr, backward}}));
    block.insert_op_after(at, make_in_place_op("c_sync_comm_stream", first,
                                               {{"ring_id", Attribute(ring_id)},
                                                {kOpRoleAttr, backward}}));
    return;
  }
  const Var& fused = create_var(block,
                                VarRequest{.name = "fused_output",
                                           .shape = std::vector<int64_t>{1},
                                           .dtype = DataType::FP32,
                                           .persistable = false,
                                           .stop_gradient = true},
                                pass);
  // No op_role here in the reference, so the op gets Paddle's default (Forward).
  at = block.insert_op_after(
      at, make_op("coalesce_tensor", {{"Input", input_grads}},
                  {{"Output", input_grads}, {"FusedOutput", {fused.name}}},
                  {{"copy_data", Attribute(true)},
                   {"set_constant", Attribute(false)},
                   {"dtype", Attribute(static_cast<int32_t>(DataType::FP32))}}));
  at = block.insert_op_after(
      at, make_in_place_op("c_sync_calc_stream", fused.name, {{kOpRoleAttr, backward}}));
  at = block.insert_op_after(at, make_in_place_op("c_allreduce_sum", fused.name,
                                                  {{"ring_id", Attribute(ring_id)},
                                                   {kOpRoleAttr, backward}}));
  block.insert_op_after(at, make_in_place_op("c_sync_comm_stream", fused.name,
                                             {{"ring_id", Attribute(ring_id)},
                                              {kOpRoleAttr, backward}}));
}

}  // namespace

void SingleProcessMultiThreadStartupPass::run(Program& startup) {
  check_transpile_options(kMode, options_);
  Block& block = startup.global_block();
  const CollectiveOptions& c = options_.collective;
  if (effective_nranks(kMode, c) > 1) {
    for (int ring_id = 0; ring_id < resolved_nrings(kMode, c); ++ring_id)
      append_communicator_init(block, c, ring_id, /*multitrainer=*/true, names_, name());
  } else {
    append_comm_init_all(block);
  }
}

void SingleProcessMultiThreadMainPass::run(Program& main) {
  check_transpile_options(kMode, options_);
  const SingleProcessMultiThreadOptions& o = options_.single_process_multi_thread;
  Block& block = main.global_block();
  const int param_count = count_update_params(block, name());
  if (o.loss_scale == 0 && param_count == 0) return;
  if (o.loss_scale != 0) {
    const double nranks = effective_nranks(kMode, options_.collective);
    const double scale = param_count > 0 ? 1.0 / nranks / o.gpu_nums : 1.0 / o.gpu_nums;
    insert_loss_grad_scale(block, static_cast<float>(scale), name());
  }
  if (param_count == 0) return;
  if (o.fuse_allreduce > 0)
    insert_fused_allreduce(block, o.fuse_allreduce, name());
  else
    insert_grad_allreduce(block, resolved_nrings(kMode, options_.collective), name());
}

}  // namespace ctp
