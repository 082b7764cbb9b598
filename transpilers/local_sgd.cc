#include "transpilers/local_sgd.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "program_ir/error.h"
#include "transpilers/found_infinite_sync.h"
#include "transpilers/op_walk.h"
#include "transpilers/rewrite_support.h"

namespace ctp {

void LocalSgdTranspiler::rewrite_startup(Program& startup, const RewriteContext& context) const {
  rewrite_collective_startup(*this, startup, context);
  Block& block = startup.global_block();
  for (const std::string& name : context.parameters->names) {
    // A copy, read for its shape: the param stays bytes in the block.
    const std::optional<Var> param = block.copy_var(name);
    if (!param || param->is_distributed) continue;
    // No dtype: the reference passes none here (unlike in the main program).
    const std::string snapshot = create_var(block,
                                     VarRequest{.name = snapshot_name(name),
                                                .shape = param->shape,
                                                .persistable = true,
                                                .stop_gradient = true},
                                     context.pass);
    block.append_op(make_var_op("assign", {{"X", name}}, {{"Out", snapshot}},
                                {{kOpRoleAttr, Attribute(op_role::kForward)}}));
  }
}

void LocalSgdTranspiler::rewrite_main(Program& main, const RewriteContext& context) const {
  const std::string_view pass = context.pass;
  const double nranks = static_cast<double>(collective().endpoints.size());
  Block& block = main.global_block();
  const Attribute optimize_role(op_role::kOptimize);

  std::vector<std::pair<std::string, std::string>> param_snapshots;  // reverse op order
  std::optional<std::string> last_param;
  int ring_id = -1;
  std::vector<Block::OpHandle> checks;  // check_finite_and_unscale ops, last first
  for_each_op_reversed(block, pass, [&](Block::OpHandle it, const OpSite& site) {
    if (it->type == "check_finite_and_unscale") checks.push_back(it);
    if (!is_update_op(*it)) return;
    const Var param = require_var_copy(site, first_input(site, "Param"), "Param");
    last_param = param.name;
    if (param.is_distributed) return;
    const std::string snapshot = create_var(block,
                                     VarRequest{.name = snapshot_name(param.name),
                                                .shape = param.shape,
                                                .dtype = param.dtype,
                                                .persistable = true,
                                                .stop_gradient = true},
                                     pass);
    auto sub = block.insert_op_after(
        it, make_var_op("elementwise_sub", {{"X", snapshot}, {"Y", param.name}},
                        {{"Out", param.name}}, {{kOpRoleAttr, optimize_role}}));
    auto sync = block.insert_op_after(
        sub, make_in_place_op("c_sync_calc_stream", param.name, {{kOpRoleAttr, optimize_role}}));
    ring_id = (ring_id + 1) % nrings();
    block.insert_op_after(sync, make_in_place_op("c_allreduce_sum", param.name,
                                                 {{"ring_id", Attribute(ring_id)},
                                                  {kOpRoleAttr, optimize_role}}));
    param_snapshots.emplace_back(param.name, snapshot);
  });
  if (!last_param)
    throw Error(std::string(pass) + ": block " + std::to_string(block.idx) +
                " has no update op (an op with Param, Grad and LearningRate inputs), so "
                "there is nothing for c_sync_comm_stream to name (the reference fails here "
                "too, with UnboundLocalError on 'param')");
  for (int r = 0; r < nrings(); ++r)
    block.append_op(make_in_place_op("c_sync_comm_stream", *last_param,
                                     {{"ring_id", Attribute(r)}, {kOpRoleAttr, optimize_role}}));
  for (auto it = param_snapshots.rbegin(); it != param_snapshots.rend(); ++it) {
    const auto& [param, snapshot] = *it;
    block.append_op(make_in_place_op("scale", param,
                                     {{"scale", Attribute(static_cast<float>(1.0 / nranks))},
                                      {kOpRoleAttr, optimize_role}}));
    block.append_op(make_var_op("elementwise_sub", {{"X", snapshot}, {"Y", param}},
                                {{"Out", param}}, {{kOpRoleAttr, optimize_role}}));
    block.append_op(make_var_op("assign", {{"X", param}}, {{"Out", snapshot}},
                                {{kOpRoleAttr, optimize_role}}));
  }
  // Each rank checks its own gradients here (none are reduced): agree on
  // an overflow so that all skip and rescale together. The walk collected
  // the checks, last first (the rewrite above adds none).
  std::reverse(checks.begin(), checks.end());
  insert_found_infinite_allreduce(block, checks, pass);
}

TranspilerRegistration local_sgd_registration() {
  return {
      .name = "local_sgd",
      .reference_class = "LocalSGD",
      .summary = "each rank steps alone; after each update the parameter change is allreduced "
                 "and averaged",
      .rings = LocalSgdTranspiler::kRings,
      .settings = {},
      .create = [](const CollectiveOptions& collective, const TranspilerSettings&)
          -> std::unique_ptr<Transpiler> {
        return std::make_unique<LocalSgdTranspiler>(collective);
      },
  };
}

}  // namespace ctp
