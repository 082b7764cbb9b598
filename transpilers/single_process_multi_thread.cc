#include "transpilers/single_process_multi_thread.h"

#include <optional>
#include <string>
#include <vector>

#include "program_ir/error.h"
#include "transpilers/collective_rules.h"
#include "transpilers/collective_steps.h"
#include "transpilers/op_walk.h"
#include "transpilers/rewrite_support.h"

namespace ctp {
namespace {

// _get_update_param_count: non-distributed params named by backward ops'
// op_role_var (a param named twice counts twice).
int count_update_params(Block& block, std::string_view pass) {
  int count = 0;
  for_each_grad_op(block, pass, WalkOrder::kLastFirst, [&](const GradOp& op) {
    for (const ParamGrad& pair : op.pairs)
      if (!op.param_entry(pair).is_distributed) ++count;
  });
  return count;
}

// SingleProcessMultiThread._insert_fuse_allreduce_ops.
void insert_fused_allreduce(Block& block, int fuse_allreduce, std::string_view pass) {
  const CollectedGrads collected = collect_grads(block, WalkOrder::kLastFirst, pass);
  if (!collected.saw_grad || collected.grads.empty()) return;
  std::vector<std::string> input_grads;  // reverse op order, pair order within an op
  for (const CollectedGrad& g : collected.grads) input_grads.push_back(g.var->name);
  const Attribute backward(op_role::kBackward);
  const int ring_id = 0;
  // After the last op that makes a grad (the reference's global_offset).
  Block::OpHandle at = collected.grads.front().producer;
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
  const std::string fused = create_var(block,
                                VarRequest{.name = "fused_output",
                                           .shape = std::vector<int64_t>{1},
                                           .dtype = DataType::FP32,
                                           .persistable = false,
                                           .stop_gradient = true},
                                pass);
  // No op_role here in the reference, so the op gets Paddle's default (Forward).
  at = block.insert_op_after(
      at, make_op("coalesce_tensor", {{"Input", input_grads}},
                  {{"Output", input_grads}, {"FusedOutput", {fused}}},
                  {{"copy_data", Attribute(true)},
                   {"set_constant", Attribute(false)},
                   {"dtype", Attribute(static_cast<int32_t>(DataType::FP32))}}));
  at = block.insert_op_after(
      at, make_in_place_op("c_sync_calc_stream", fused, {{kOpRoleAttr, backward}}));
  at = block.insert_op_after(at, make_in_place_op("c_allreduce_sum", fused,
                                                  {{"ring_id", Attribute(ring_id)},
                                                   {kOpRoleAttr, backward}}));
  block.insert_op_after(at, make_in_place_op("c_sync_comm_stream", fused,
                                             {{"ring_id", Attribute(ring_id)},
                                              {kOpRoleAttr, backward}}));
}

}  // namespace

int SingleProcessMultiThreadTranspiler::node_count() const {
  const std::vector<std::string>& endpoints = collective().endpoints;
  const int hosts = endpoints.size() > 1 ? distinct_host_count(endpoints) : 0;
  return hosts > 1 ? hosts : 1;
}

void SingleProcessMultiThreadTranspiler::check_own_options() const {
  if (options_.gpu_nums < 1)
    throw Error(error_prefix() + "gpu_nums must be >= 1, got " +
                std::to_string(options_.gpu_nums));
}

void SingleProcessMultiThreadTranspiler::rewrite_startup(Program& startup,
                                                         const RewriteContext& context) const {
  Block& block = startup.global_block();
  if (node_count() > 1) {
    for (int ring_id = 0; ring_id < nrings(); ++ring_id)
      append_communicator_init(block, collective(), ring_id, /*multitrainer=*/true,
                               context.names, context.pass);
  } else {
    append_comm_init_all(block, collective().dialect);
  }
}

void SingleProcessMultiThreadTranspiler::rewrite_main(Program& main,
                                                      const RewriteContext& context) const {
  const SingleProcessMultiThreadOptions& o = options_;
  Block& block = main.global_block();
  const int param_count = count_update_params(block, context.pass);
  if (o.loss_scale == 0 && param_count == 0) return;
  if (o.loss_scale != 0) {
    const double nranks = node_count();
    const double scale = param_count > 0 ? 1.0 / nranks / o.gpu_nums : 1.0 / o.gpu_nums;
    insert_loss_grad_scale(block, static_cast<float>(scale), context.pass);
  }
  if (param_count == 0) return;
  if (o.fuse_allreduce > 0)
    insert_fused_allreduce(block, o.fuse_allreduce, context.pass);
  else
    insert_grad_allreduce(block, nrings(), context.pass);
}

TranspilerRegistration single_process_multi_thread_registration() {
  return {
      .name = "single_process_multi_thread",
      .reference_class = "SingleProcessMultiThread",
      .summary = "one process drives several GPUs; across hosts one fused allreduce (or xsum)",
      .rings = SingleProcessMultiThreadTranspiler::kRings,
      .settings = {{.name = "fuse-allreduce",
                    .help = "0 allreduce per grad, 1 coalesce (default), 2 c_allreduce_xsum",
                    .kind = SettingKind::kInt,
                    .choices = {"0", "1", "2"},
                    .env = "PADDLE_FUSE_ALLREDUCE"},
                   {.name = "loss-scale",
                    .help = "0 leaves the loss gradient unscaled, 1 scales it (default)",
                    .kind = SettingKind::kInt,
                    .choices = {"0", "1"},
                    .env = "PADDLE_LOSS_SCALE"},
                   selected_gpus_setting()},
      .create = [](const CollectiveOptions& collective, const TranspilerSettings& settings)
          -> std::unique_ptr<Transpiler> {
        SingleProcessMultiThreadOptions o;
        o.fuse_allreduce = setting_int(settings, "fuse-allreduce", o.fuse_allreduce);
        o.loss_scale = setting_int(settings, "loss-scale", o.loss_scale);
        o.gpu_nums = setting_list_size(settings, "selected-gpus", o.gpu_nums);
        return std::make_unique<SingleProcessMultiThreadTranspiler>(collective, o);
      },
  };
}

}  // namespace ctp
