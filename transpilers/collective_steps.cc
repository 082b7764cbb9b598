#include "transpilers/collective_steps.h"

#include <optional>
#include <vector>

#include "program_ir/error.h"
#include "program_ir/types.h"
#include "transpilers/collective_rules.h"
#include "transpilers/grouping.h"
#include "transpilers/rewrite_support.h"

namespace ctp {

void append_communicator_init(Block& block, const CollectiveOptions& options, int ring_id,
                              bool multitrainer, NameGenerator& names, std::string_view pass) {
  const int nranks = static_cast<int>(options.endpoints.size());
  const std::string nccl_id = create_var(
      block, VarRequest{.name = names.generate("nccl_id"), .type = VarKind::RAW,
                        .persistable = true},
      pass);
  block.append_op(make_op(
      "c_gen_nccl_id", {}, {{"Out", {nccl_id}}},
      {{"rank", Attribute(options.rank)},
       {"endpoint", Attribute(options.current_endpoint)},
       {"other_endpoints",
        Attribute(other_endpoints(options.endpoints, options.current_endpoint))},
       {kOpRoleAttr, Attribute(op_role::kForward)}}));
  if (!multitrainer) {
    block.append_op(make_op("c_comm_init", {{"X", {nccl_id}}}, {},
                            {{"nranks", Attribute(nranks)},
                             {"rank", Attribute(options.rank)},
                             {"ring_id", Attribute(ring_id)},
                             {kOpRoleAttr, Attribute(op_role::kForward)}}));
  } else {
    block.append_op(make_op("c_comm_init_multitrainer", {{"X", {nccl_id}}}, {},
                            {{"ntrainers", Attribute(nranks)},
                             {"trainer_id", Attribute(options.rank)},
                             {"ring_id", Attribute(ring_id)},
                             {kOpRoleAttr, Attribute(op_role::kForward)}}));
  }
}

void append_param_broadcast(Block& block, int nrings, const ParameterSet& parameters,
                            OpDialect dialect, std::string_view pass) {
  for (const Var& var : parameters.undeclared)
    if (!block.has_var(var.name)) block.add_var(var);
  const OpSpelling broadcast = spell(dialect, "c_broadcast");
  int ring_id = -1;
  std::optional<std::string> last_param;
  for (const std::string& name : parameters.names) {
    const std::optional<Block::VarEntry> var = block.find_var_entry(name);
    if (!var)
      throw Error(SourceLocation{.pass = std::string(pass), .block = block.idx, .var_name = name},
                  "parameter is not declared in the startup program");
    last_param = name;
    if (var->is_distributed) continue;
    ring_id = (ring_id + 1) % nrings;
    block.append_op(make_var_op(broadcast.type, {{broadcast.input, name}},
                                {{broadcast.output, name}},
                                {{"ring_id", Attribute(ring_id)},
                                 {"root", Attribute(0)},
                                 {kOpRoleAttr, Attribute(op_role::kForward)}}));
  }
  if (!last_param) {
    const std::string why =
        parameters.source == ParamSource::kMarked
            ? "declares no parameter (no var is marked is_parameter; --params optimizer takes "
              "the update ops' Param inputs)"
            : "declares no parameter (no var is marked is_parameter, and no update op of the "
              "main program has a persistable Param input)";
    throw Error(std::string(pass) + ": block " + std::to_string(block.idx) + " " + why +
                ", so there is nothing for c_sync_comm_stream to name (the reference fails "
                "here too, with UnboundLocalError on 'param')");
  }
  for (int r = 0; r < nrings; ++r)
    block.append_op(make_in_place_op(
        "c_sync_comm_stream", *last_param,
        {{"ring_id", Attribute(r)}, {kOpRoleAttr, Attribute(op_role::kForward)}}));
}

void append_comm_init_all(Block& block, OpDialect dialect) {
  block.append_op(
      make_op(std::string(spell(dialect, "c_comm_init_all").type), {}, {}, {{"ring_id", Attribute(0)}}));
}

void insert_loss_grad_scale(Block& block, float scale, std::string_view pass) {
  for_each_op_reversed(block, pass, [&](Block::OpHandle it, const OpSite& site) {
    if (!is_loss_grad_at(site)) return;
    const std::vector<std::string> outputs = it->output_arg_names();
    if (outputs.empty()) site.fail("the loss-gradient op has no output to scale");
    const Var& loss_grad = require_var(site, outputs.front(), "loss gradient");
    block.insert_op_after(
        it, make_in_place_op("scale", loss_grad.name,
                             {{"scale", Attribute(scale)},
                              {kOpRoleAttr, Attribute(op_role::kBackward)}}));
  });
}

void insert_grad_collectives(Block& block, int nrings, const GradCollective& collective,
                             std::string_view pass) {
  int ring_id = -1;
  std::optional<std::string> last_grad;
  for_each_grad_op(block, pass, WalkOrder::kLastFirst, [&](const GradOp& op) {
    std::optional<Block::OpHandle> calc_sync;
    for (const ParamGrad& pair : op.pairs) {
      // Without on_param the walk needs no more of the pair's vars than that
      // they are declared and whether the param is distributed: their
      // entries, so that vars read from a file stay their bytes (on_param
      // gets a copy, for the same reason).
      bool distributed;
      if (collective.on_param) {
        const Var param = op.param_copy(pair);
        collective.on_param(pair, param);
        distributed = param.is_distributed;
      } else {
        distributed = op.param_entry(pair).is_distributed;
      }
      op.grad_entry(pair);  // fails when the grad is not declared
      last_grad = pair.grad;
      if (distributed) continue;
      if (!calc_sync)
        calc_sync = block.insert_op_after(
            op.handle, make_in_place_op("c_sync_calc_stream", pair.grad,
                                        {{kOpRoleAttr, Attribute(op_role::kBackward)}}));
      // Every collective goes right after the sync, so an op's grads come out
      // in reverse pair order, as the reference's fixed insert index makes them.
      ring_id = (ring_id + 1) % nrings;
      block.insert_op_after(*calc_sync, collective.make_op(pair, ring_id));
    }
  });
  if (last_grad) insert_comm_syncs_before_optimizer(block, nrings, *last_grad, pass);
}

void insert_grad_allreduce(Block& block, int nrings, std::string_view pass) {
  GradCollective allreduce;
  allreduce.make_op = [](const ParamGrad& pair, int ring_id) {
    return make_in_place_op("c_allreduce_sum", pair.grad,
                            {{"ring_id", Attribute(ring_id)},
                             {kOpRoleAttr, Attribute(op_role::kBackward)}});
  };
  insert_grad_collectives(block, nrings, allreduce, pass);
}

CollectedGrads collect_grads(Block& block, WalkOrder order, std::string_view pass) {
  CollectedGrads out;
  std::size_t op_number = 0;
  for_each_grad_op(block, pass, order, [&](const GradOp& op) {
    for (const ParamGrad& pair : op.pairs) {
      const bool distributed = op.param_entry(pair).is_distributed;  // all it reads of the param
      const Var& grad = op.grad(pair);
      out.saw_grad = true;
      if (distributed) continue;
      out.grads.push_back(CollectedGrad{&grad, op.handle, op.site, op_number});
    }
    ++op_number;
  });
  return out;
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

}  // namespace

void insert_bucketed_grad_allreduce(Block& block, int nrings, int64_t bucket_bytes,
                                    NameGenerator& names, std::string_view pass) {
  const CollectedGrads collected = collect_grads(block, WalkOrder::kFirstLast, pass);
  const std::vector<CollectedGrad>& grads = collected.grads;
  // A bucket is checked against the bound once per op, after all its grads.
  std::vector<GroupItem> items;
  for (std::size_t i = 0; i < grads.size(); ++i)
    items.push_back(GroupItem{
        .key = static_cast<int64_t>(grads[i].var->dtype),
        .weight = static_grad_bytes(grads[i].site, *grads[i].var),
        .may_end_group = i + 1 == grads.size() || grads[i + 1].op_number != grads[i].op_number});
  const Attribute backward(op_role::kBackward);
  int ring_id = -1;
  std::optional<std::string> last_fused;
  for (const Group& bucket : group_by_key(items, bucket_bytes)) {
    std::vector<std::string> members;
    for (std::size_t i = bucket.begin; i < bucket.end; ++i) members.push_back(grads[i].var->name);
    const DataType dtype = grads[bucket.begin].var->dtype;
    // A name the block does not use yet (a program may be transpiled again).
    std::string name = names.generate("grad_bucket");
    while (block.has_var(name)) name = names.generate("grad_bucket");
    const std::string fused = create_var(
        block,
        VarRequest{.name = name, .dtype = dtype, .persistable = false, .stop_gradient = true},
        pass);
    ring_id = (ring_id + 1) % nrings;
    Block::OpHandle at = block.insert_op_after(
        grads[bucket.end - 1].producer,
        make_op("coalesce_tensor", {{"Input", members}},
                {{"Output", members}, {"FusedOutput", {fused}}},
                {{"copy_data", Attribute(true)},
                 {"use_align", Attribute(true)},
                 {"dtype", Attribute(static_cast<int32_t>(dtype))},
                 {kOpRoleAttr, backward}}));
    at = block.insert_op_after(
        at, make_in_place_op("c_sync_calc_stream", fused, {{kOpRoleAttr, backward}}));
    block.insert_op_after(at, make_in_place_op("c_allreduce_sum", fused,
                                               {{"ring_id", Attribute(ring_id)},
                                                {kOpRoleAttr, backward}}));
    last_fused = fused;
  }
  if (last_fused) insert_comm_syncs_before_optimizer(block, nrings, *last_fused, pass);
}

}  // namespace ctp
