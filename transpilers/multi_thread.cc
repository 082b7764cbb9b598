#include "transpilers/multi_thread.h"

#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "transpilers/collective_rules.h"
#include "transpilers/collective_steps.h"
#include "transpilers/rewrite_support.h"

namespace ctp {
namespace {

constexpr TranspileMode kMode = TranspileMode::kMultiThread;

std::string allgather_name(const std::string& param) { return param + "_allgather"; }

// MultiThread._insert_allgather_ops: like GradAllReduce's allreduce walk, but
// each grad is gathered into "<param>_allgather" ([ranks, *param.shape]). The
// var is declared for distributed params too, and then never used.
void insert_grad_allgather(Block& block, int nrings, int allgather_ranks,
                           std::string_view pass) {
  const Attribute backward(op_role::kBackward);
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
      std::vector<int64_t> gathered_shape{allgather_ranks};
      gathered_shape.insert(gathered_shape.end(), param.shape.begin(), param.shape.end());
      const Var& gathered = create_var(block,
                                       VarRequest{.name = allgather_name(pair.param),
                                                  .shape = std::move(gathered_shape),
                                                  .dtype = DataType::FP32,
                                                  .persistable = false,
                                                  .stop_gradient = true},
                                       pass);
      const Var& grad = require_var(site, pair.grad, "op_role_var grad");
      last_grad = grad.name;
      if (param.is_distributed) continue;
      if (!calc_sync)
        calc_sync = block.insert_op_after(
            it, make_in_place_op("c_sync_calc_stream", grad.name, {{kOpRoleAttr, backward}}));
      ring_id = (ring_id + 1) % nrings;
      block.insert_op_after(*calc_sync,
                            make_op("c_allgather", {{"X", {grad.name}}},
                                    {{"Out", {gathered.name}}},
                                    {{"nranks", Attribute(allgather_ranks)},
                                     {"ring_id", Attribute(ring_id)},
                                     {kOpRoleAttr, backward}}));
    }
  }
  if (last_grad) insert_comm_syncs_before_optimizer(block, nrings, *last_grad, pass);
}

// MultiThread._update_adam_ops: each adam/lamb optimizer op becomes a split of
// "<param>_allgather" into "<param>_0".."<param>_{ranks-1}" and one copy of the
// op per piece; the copies keep five attributes and get the default role.
void split_adam_ops(Block& block, int allgather_ranks, std::string_view pass) {
  static const char* const kInputs[] = {"Param", "LearningRate", "Moment1",
                                        "Moment2", "Beta1Pow", "Beta2Pow"};
  static const char* const kOutputs[] = {"ParamOut", "Moment1Out", "Moment2Out",
                                         "Beta1PowOut", "Beta2PowOut"};
  static const char* const kAttrs[] = {"epsilon", "beta1", "beta2", "lazy_mode",
                                       "min_row_size_to_use_multithread"};
  std::size_t index = block.op_count();
  for (auto it = block.ops().end(); it != block.ops().begin();) {
    --it;
    --index;
    const OpSite site{pass, block, index, *it};
    if (!is_optimizer_at(site) || (it->type != "adam" && it->type != "lamb")) continue;
    const std::string param_name = first_input(site, "Param");
    std::vector<Slot> inputs;
    inputs.reserve(std::size(kInputs) + 1);
    for (const char* slot : kInputs)
      inputs.push_back({slot, {require_var(site, first_input(site, slot), slot).name}});
    std::vector<Slot> outputs;
    outputs.reserve(std::size(kOutputs));
    for (const char* slot : kOutputs)
      outputs.push_back({slot, {require_var(site, first_output(site, slot), slot).name}});
    std::vector<NamedAttribute> attrs;
    attrs.reserve(std::size(kAttrs) + 1);
    for (const char* attr : kAttrs) attrs.push_back({attr, require_attr(site, attr)});
    // The copies get no op_role from the reference, hence Paddle's default, last.
    attrs.push_back({kOpRoleAttr, Attribute(op_role::kForward)});
    const std::vector<int64_t> param_shape = require_var(site, param_name, "Param").shape;
    std::vector<std::string> pieces;
    pieces.reserve(static_cast<std::size_t>(allgather_ranks));
    for (int i = 0; i < allgather_ranks; ++i)
      pieces.push_back(create_var(block,
                                  VarRequest{.name = param_name + "_" + std::to_string(i),
                                             .shape = param_shape,
                                             .dtype = DataType::FP32,
                                             .persistable = false,
                                             .stop_gradient = true},
                                  pass)
                           .name);
    const Var& gathered = require_var(site, allgather_name(param_name), "gathered grad");
    Block::OpHandle split = block.insert_op(
        it, make_op("split", {{"X", {gathered.name}}}, {{"Out", pieces}},
                    {{"num", Attribute(allgather_ranks)}, {"axis", Attribute(0)}}));
    inputs.push_back({"Grad", {}});
    for (const std::string& piece : pieces) {
      inputs.back().args = {piece};
      block.insert_op(it, Op(it->type, inputs, outputs, attrs));
    }
    block.erase_op(it);
    it = split;  // the walk goes on before the ops it inserted
  }
}

// MultiThread._insert_fuse_allreduce_ops: grads (reverse op order) in segments
// of one dtype and at most 128; per segment a coalesce_tensor into
// "FusedOutput_<first grad>_<n>", all before the first optimizer op.
void insert_segmented_fused_allreduce(Block& block, int nrings, NameGenerator& names,
                                      std::string_view pass) {
  const int ring_id = 0 % nrings;
  const Attribute backward(op_role::kBackward);
  std::vector<const Var*> grads;
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
      if (!param.is_distributed) grads.push_back(&grad);
    }
  }
  if (!saw_grad) return;
  std::vector<std::vector<const Var*>> segments;
  for (const Var* grad : grads) {
    if (segments.empty() || segments.back().size() == kFuseGradSegmentLimit ||
        grad->dtype != segments.back().front()->dtype)
      segments.push_back({grad});
    else
      segments.back().push_back(grad);
  }
  Block::OpHandle optimizer = find_first_optimizer_op(block, pass);
  if (optimizer == block.ops().end()) return;

  // Each coalesce_tensor goes before the previous one, as inserting at one
  // fixed index does in the reference.
  std::vector<std::string> fused;
  Block::OpHandle front = optimizer;
  for (const auto& segment : segments) {
    std::vector<std::string> members;
    for (const Var* g : segment) members.push_back(g->name);
    const DataType dtype = segment.front()->dtype;
    const Var& out = create_var(block,
                                VarRequest{.name = names.generate("FusedOutput_" + members[0]),
                                           .dtype = dtype,
                                           .persistable = false,
                                           .stop_gradient = true},
                                pass);
    fused.push_back(out.name);
    front = block.insert_op(
        front, make_op("coalesce_tensor", {{"Input", members}},
                       {{"Output", members}, {"FusedOutput", {out.name}}},
                       {{"copy_data", Attribute(true)},
                        {"use_align", Attribute(true)},
                        {"dtype", Attribute(static_cast<int32_t>(dtype))},
                        {kOpRoleAttr, backward}}));
  }
  front = optimizer;
  for (const std::string& f : fused) {
    front = block.insert_op(front, make_in_place_op("c_allreduce_sum", f,
                                                    {{"ring_id", Attribute(ring_id)},
                                                     {"use_calc_stream", Attribute(false)},
                                                     {kOpRoleAttr, backward}}));
    front = block.insert_op(
        front, make_in_place_op("c_sync_calc_stream", f, {{kOpRoleAttr, backward}}));
  }
  if (fused.empty()) return;
  block.insert_op(optimizer, make_in_place_op("c_sync_comm_stream", fused.front(),
                                              {{"ring_id", Attribute(ring_id)},
                                               {kOpRoleAttr, backward}}));
}

}  // namespace

void MultiThreadStartupPass::run(Program& startup) {
  check_transpile_options(kMode, options_);
  Block& block = startup.global_block();
  const CollectiveOptions& c = options_.collective;
  if (c.endpoints.size() > 1) {
    for (int ring_id = 0; ring_id < resolved_nrings(kMode, c); ++ring_id)
      append_communicator_init(block, c, ring_id, /*multitrainer=*/true, names_, name());
  } else {
    append_comm_init_all(block);
  }
}

void MultiThreadMainPass::run(Program& main) {
  check_transpile_options(kMode, options_);
  const CollectiveOptions& c = options_.collective;
  const int nrings = resolved_nrings(kMode, c);
  const int nranks = effective_nranks(kMode, c);
  Block& block = main.global_block();
  insert_loss_grad_scale(block, static_cast<float>(1.0 / nranks), name());
  switch (options_.multi_thread.trans_mode) {
    case MultiThreadTransMode::kAllGather: {
      const int allgather_ranks = nranks * options_.multi_thread.gpu_num;
      insert_grad_allgather(block, nrings, allgather_ranks, name());
      split_adam_ops(block, allgather_ranks, name());
      break;
    }
    case MultiThreadTransMode::kFuseAllReduce:
      insert_segmented_fused_allreduce(block, nrings, names_, name());
      break;
    case MultiThreadTransMode::kAllReduce:
      insert_grad_allreduce(block, nrings, name());
      break;
  }
}

}  // namespace ctp
