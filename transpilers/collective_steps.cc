#include "transpilers/collective_steps.h"

#include <optional>

#include "program_ir/error.h"
#include "transpilers/collective_rules.h"
#include "transpilers/rewrite_support.h"

namespace ctp {

void append_communicator_init(Block& block, const CollectiveOptions& options, int ring_id,
                              bool multitrainer, NameGenerator& names, std::string_view pass) {
  const int nranks = static_cast<int>(options.endpoints.size());
  const Var& nccl_id = create_var(
      block, VarRequest{.name = names.generate("nccl_id"), .type = VarKind::RAW,
                        .persistable = true},
      pass);
  block.append_op(make_op(
      "c_gen_nccl_id", {}, {{"Out", {nccl_id.name}}},
      {{"rank", Attribute(options.rank)},
       {"endpoint", Attribute(options.current_endpoint)},
       {"other_endpoints",
        Attribute(other_endpoints(options.endpoints, options.current_endpoint))},
       {kOpRoleAttr, Attribute(op_role::kForward)}}));
  if (!multitrainer) {
    block.append_op(make_op("c_comm_init", {{"X", {nccl_id.name}}}, {},
                            {{"nranks", Attribute(nranks)},
                             {"rank", Attribute(options.rank)},
                             {"ring_id", Attribute(ring_id)},
                             {kOpRoleAttr, Attribute(op_role::kForward)}}));
  } else {
    block.append_op(make_op("c_comm_init_multitrainer", {{"X", {nccl_id.name}}}, {},
                            {{"ntrainers", Attribute(nranks)},
                             {"trainer_id", Attribute(options.rank)},
                             {"ring_id", Attribute(ring_id)},
                             {kOpRoleAttr, Attribute(op_role::kForward)}}));
  }
}

void append_param_broadcast(Block& block, int nrings, std::string_view pass) {
  int ring_id = -1;
  std::optional<std::string> last_param;
  for (const Var& var : block.vars()) {
    if (!var.is_parameter) continue;
    last_param = var.name;
    if (var.is_distributed) continue;
    ring_id = (ring_id + 1) % nrings;
    block.append_op(make_in_place_op("c_broadcast", var.name,
                                     {{"ring_id", Attribute(ring_id)},
                                      {"root", Attribute(0)},
                                      {kOpRoleAttr, Attribute(op_role::kForward)}}));
  }
  if (!last_param)
    throw Error(std::string(pass) + ": block " + std::to_string(block.idx) +
                " declares no parameter, so there is nothing for c_sync_comm_stream to "
                "name (the reference fails here too, with UnboundLocalError on 'param')");
  for (int r = 0; r < nrings; ++r)
    block.append_op(make_in_place_op(
        "c_sync_comm_stream", *last_param,
        {{"ring_id", Attribute(r)}, {kOpRoleAttr, Attribute(op_role::kForward)}}));
}

void append_comm_init_all(Block& block) {
  block.append_op(make_op("c_comm_init_all", {}, {}, {{"ring_id", Attribute(0)}}));
}

void insert_loss_grad_scale(Block& block, float scale, std::string_view pass) {
  std::size_t index = block.op_count();
  for (auto it = block.ops().end(); it != block.ops().begin();) {
    --it;
    --index;
    const OpSite site{pass, block, index, *it};
    if (!is_loss_grad_at(site)) continue;
    const std::vector<std::string> outputs = it->output_arg_names();
    if (outputs.empty()) site.fail("the loss-gradient op has no output to scale");
    const Var& loss_grad = require_var(site, outputs.front(), "loss gradient");
    block.insert_op_after(
        it, make_in_place_op("scale", loss_grad.name,
                             {{"scale", Attribute(scale)},
                              {kOpRoleAttr, Attribute(op_role::kBackward)}}));
  }
}

void insert_grad_allreduce(Block& block, int nrings, std::string_view pass) {
  int ring_id = -1;
  std::optional<std::string> last_grad;
  std::size_t index = block.op_count();
  for (auto it = block.ops().end(); it != block.ops().begin();) {
    --it;
    --index;
    const OpSite site{pass, block, index, *it};
    if (!is_backward_at(site) || !it->has_attr(kOpRoleVarAttr)) continue;
    std::optional<Block::OpHandle> calc_sync;
    for (const ParamGrad& pair : param_grad_pairs_at(site)) {
      const Var& param = require_var(site, pair.param, "op_role_var param");
      const Var& grad = require_var(site, pair.grad, "op_role_var grad");
      last_grad = grad.name;
      if (param.is_distributed) continue;
      if (!calc_sync)
        calc_sync = block.insert_op_after(
            it, make_in_place_op("c_sync_calc_stream", grad.name,
                                 {{kOpRoleAttr, Attribute(op_role::kBackward)}}));
      // Every allreduce goes right after the sync, so an op's grads come out in
      // reverse pair order, as the reference's fixed insert index makes them.
      ring_id = (ring_id + 1) % nrings;
      block.insert_op_after(*calc_sync,
                            make_in_place_op("c_allreduce_sum", grad.name,
                                             {{"ring_id", Attribute(ring_id)},
                                              {kOpRoleAttr, Attribute(op_role::kBackward)}}));
    }
  }
  if (!last_grad) return;
  Block::OpHandle optimizer = find_first_optimizer_op(block, pass);
  if (optimizer == block.ops().end()) return;
  for (int r = 0; r < nrings; ++r)
    block.insert_op(optimizer,
                    make_in_place_op("c_sync_comm_stream", *last_grad,
                                     {{"ring_id", Attribute(r)},
                                      {kOpRoleAttr, Attribute(op_role::kBackward)}}));
}

}  // namespace ctp
