#include "transpilers/collective_steps.h"

#include <optional>
#include <vector>

#include "program_ir/error.h"
#include "program_ir/types.h"
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
  if (last_grad) insert_comm_syncs_before_optimizer(block, nrings, *last_grad, pass);
}

void insert_comm_syncs_before_optimizer(Block& block, int nrings, const std::string& var,
                                        std::string_view pass) {
  Block::OpHandle optimizer = find_first_optimizer_op(block, pass);
  if (optimizer == block.ops().end()) return;
  for (int r = 0; r < nrings; ++r)
    block.insert_op(optimizer,
                    make_in_place_op("c_sync_comm_stream", var,
                                     {{"ring_id", Attribute(r)},
                                      {kOpRoleAttr, Attribute(op_role::kBackward)}}));
}

namespace {

// Bytes of a gradient, from its declared shape; a bucket needs them at
// transpile time.
int64_t static_grad_bytes(const OpSite& site, const Var& grad) {
  int64_t count = 1;
  for (int64_t d : grad.shape) {
    if (d < 0) {
      std::string shape;
      for (int64_t e : grad.shape) shape += (shape.empty() ? "" : ", ") + std::to_string(e);
      site.fail("gradient buckets need static shapes, but grad '" + grad.name +
                "' has shape [" + shape + "]");
    }
    count *= d;
  }
  return count * static_cast<int64_t>(element_size(grad.dtype));
}

struct Bucket {
  std::vector<std::string> grads;
  DataType dtype = DataType::FP32;
  int64_t bytes = 0;
  Block::OpHandle last_producer;
};

}  // namespace

void insert_bucketed_grad_allreduce(Block& block, int nrings, int64_t bucket_bytes,
                                    NameGenerator& names, std::string_view pass) {
  const Attribute backward(op_role::kBackward);
  int ring_id = -1;
  std::optional<std::string> last_fused;
  Bucket open;
  const auto close = [&] {
    if (open.grads.empty()) return;
    // A name the block does not use yet (a program may be transpiled again).
    std::string name = names.generate("grad_bucket");
    while (block.has_var(name)) name = names.generate("grad_bucket");
    const Var& fused = create_var(block,
                                  VarRequest{.name = name,
                                             .dtype = open.dtype,
                                             .persistable = false,
                                             .stop_gradient = true},
                                  pass);
    ring_id = (ring_id + 1) % nrings;
    Block::OpHandle at = block.insert_op_after(
        open.last_producer,
        make_op("coalesce_tensor", {{"Input", open.grads}},
                {{"Output", open.grads}, {"FusedOutput", {fused.name}}},
                {{"copy_data", Attribute(true)},
                 {"use_align", Attribute(true)},
                 {"dtype", Attribute(static_cast<int32_t>(open.dtype))},
                 {kOpRoleAttr, backward}}));
    at = block.insert_op_after(
        at, make_in_place_op("c_sync_calc_stream", fused.name, {{kOpRoleAttr, backward}}));
    block.insert_op_after(at, make_in_place_op("c_allreduce_sum", fused.name,
                                               {{"ring_id", Attribute(ring_id)},
                                                {kOpRoleAttr, backward}}));
    last_fused = fused.name;
    open = Bucket{};
  };
  std::size_t index = 0;
  for (auto it = block.ops().begin(); it != block.ops().end(); ++it, ++index) {
    const OpSite site{pass, block, index, *it};
    if (!is_backward_at(site) || !it->has_attr(kOpRoleVarAttr)) continue;
    for (const ParamGrad& pair : param_grad_pairs_at(site)) {
      const Var& param = require_var(site, pair.param, "op_role_var param");
      const Var& grad = require_var(site, pair.grad, "op_role_var grad");
      if (param.is_distributed) continue;
      const int64_t bytes = static_grad_bytes(site, grad);
      if (!open.grads.empty() && grad.dtype != open.dtype) close();
      open.grads.push_back(grad.name);
      open.dtype = grad.dtype;
      open.bytes += bytes;
      open.last_producer = it;
    }
    if (open.bytes >= bucket_bytes) close();
  }
  close();
  if (last_fused) insert_comm_syncs_before_optimizer(block, nrings, *last_fused, pass);
}

}  // namespace ctp
