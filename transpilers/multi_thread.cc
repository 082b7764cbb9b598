#include "transpilers/multi_thread.h"

#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "program_ir/error.h"
#include "program_ir/op_packing.h"
#include "transpilers/collective_steps.h"
#include "transpilers/grouping.h"
#include "transpilers/op_walk.h"
#include "transpilers/rewrite_support.h"

namespace ctp {
namespace {

std::string allgather_name(const std::string& param) { return param + "_allgather"; }

// MultiThread._insert_allgather_ops: GradAllReduce's allreduce walk with each
// grad gathered into "<param>_allgather" ([ranks, *param.shape]). The var is
// declared for distributed params too, and then never used.
void insert_grad_allgather(Block& block, int nrings, int allgather_ranks, OpDialect dialect,
                           std::string_view pass) {
  GradCollective allgather;
  allgather.on_param = [&](const ParamGrad& pair, const Var& param) {
    std::vector<int64_t> gathered_shape{allgather_ranks};
    gathered_shape.insert(gathered_shape.end(), param.shape.begin(), param.shape.end());
    create_var(block,
               VarRequest{.name = allgather_name(pair.param),
                          .shape = std::move(gathered_shape),
                          .dtype = DataType::FP32,
                          .persistable = false,
                          .stop_gradient = true},
               pass);
  };
  const OpSpelling spelling = spell(dialect, "c_allgather");
  allgather.make_op = [&](const ParamGrad& pair, int ring_id) {
    return make_op(std::string(spelling.type), {{std::string(spelling.input), {pair.grad}}},
                   {{std::string(spelling.output), {allgather_name(pair.param)}}},
                   {{"nranks", Attribute(allgather_ranks)},
                    {"ring_id", Attribute(ring_id)},
                    {kOpRoleAttr, Attribute(op_role::kBackward)}});
  };
  insert_grad_collectives(block, nrings, allgather, pass);
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
  for_each_op_reversed(block, pass, [&](Block::OpHandle it, const OpSite& site) {
    if (!is_optimizer_at(site) || (it->type != "adam" && it->type != "lamb")) return;
    const std::string param_name = first_input(site, "Param");
    std::vector<Slot> inputs;
    inputs.reserve(std::size(kInputs) + 1);
    // The slots' vars must exist (looked up without decoding them).
    auto existing = [&](std::string name, const char* slot) {
      require_var_entry(site, name, slot);
      return Slot{slot, {std::move(name)}};
    };
    for (const char* slot : kInputs) inputs.push_back(existing(first_input(site, slot), slot));
    std::vector<Slot> outputs;
    outputs.reserve(std::size(kOutputs));
    for (const char* slot : kOutputs) outputs.push_back(existing(first_output(site, slot), slot));
    std::vector<NamedAttribute> attrs;
    attrs.reserve(std::size(kAttrs) + 1);
    for (const char* attr : kAttrs) attrs.push_back({attr, require_attr(site, attr)});
    // The copies get no op_role from the reference, hence Paddle's default, last.
    attrs.push_back({kOpRoleAttr, Attribute(op_role::kForward)});
    std::vector<int64_t> param_shape = require_var_copy(site, param_name, "Param").shape;
    // The split's output names the pieces, which the copies then read: built
    // once, in place (a large program has as many adam ops as parameters).
    Slot split_out{"Out", {}};
    std::vector<std::string>& pieces = split_out.args;
    pieces.reserve(static_cast<std::size_t>(allgather_ranks));
    for (int i = 0; i < allgather_ranks; ++i) {
      std::string name;
      name.reserve(param_name.size() + 4);
      name.append(param_name).append("_").append(std::to_string(i));
      pieces.push_back(std::move(name));
    }
    create_vars(block, pieces,
                VarRequest{.shape = std::move(param_shape),
                           .dtype = DataType::FP32,
                           .persistable = false,
                           .stop_gradient = true},
                pass);
    const std::string_view gathered =
        require_var_entry(site, allgather_name(param_name), "gathered grad").name;
    const Slot split_in{"X", {std::string(gathered)}};
    block.insert_op(it, make_op_from_views("split", {&split_in, 1}, {&split_out, 1},
                                           {{"num", Attribute(allgather_ranks)},
                                            {"axis", Attribute(0)}}));
    inputs.push_back({"Grad", {}});
    // One copy of the op per piece, reading that piece as its Grad, all of
    // them sharing their other bytes and held by the block as one (a large
    // program has as many adam ops as parameters, and copies the size of
    // the input for every two or three ranks).
    const OpParts copy{.type = it->type, .inputs = inputs, .outputs = outputs, .attrs = attrs};
    block.insert_op_copies(it, pack_op_copies(copy, inputs.size() - 1, pieces));
    block.erase_op(it);  // the walk goes on before the ops inserted here
  });
}

// The adam and lamb ops that all_gather will split, counted in the walk
// that refuses a program with loss scaling: all_gather's adam copies read
// the gathered gradients, gathered before FP16 loss scaling
// (transpilers/loss_scaling.h) unscales and checks the local ones: they
// would step on scaled gradients, each worker on its own overflow flag.
// Refused until the gather moves after the check.
std::size_t count_adam_ops_for_all_gather(const Block& block, std::string_view pass) {
  std::size_t adam_ops = 0;
  for (const Op& op : block.ops()) {
    if (op.type == "check_finite_and_unscale")
      throw Error(std::string(pass) +
                  ": trans_mode all_gather cannot take a program with loss scaling "
                  "(check_finite_and_unscale): its adam copies read gradients gathered before "
                  "they are unscaled; use fuse_all_reduce or all_reduce, or --amp bf16 "
                  "without loss scaling");
    if (op.type == "adam" || op.type == "lamb") ++adam_ops;
  }
  return adam_ops;
}

// MultiThread._insert_fuse_allreduce_ops: grads (reverse op order) in segments
// of one dtype and at most 128; per segment a coalesce_tensor into
// "FusedOutput_<first grad>_<n>", all before the first optimizer op.
void insert_segmented_fused_allreduce(Block& block, int nrings, NameGenerator& names,
                                      std::string_view pass) {
  const int ring_id = 0 % nrings;
  const Attribute backward(op_role::kBackward);
  const CollectedGrads collected = collect_grads(block, WalkOrder::kLastFirst, pass);
  if (!collected.saw_grad) return;
  const std::vector<CollectedGrad>& grads = collected.grads;
  std::vector<GroupItem> items;
  for (const CollectedGrad& g : grads)
    items.push_back(GroupItem{.key = static_cast<int64_t>(g.var->dtype)});
  const std::vector<Group> segments =
      group_by_key(items, static_cast<int64_t>(kFuseGradSegmentLimit));
  Block::OpHandle optimizer = find_first_optimizer_op(block, pass);
  if (optimizer == block.ops().end()) return;

  // Each coalesce_tensor goes before the previous one, as inserting at one
  // fixed index does in the reference.
  std::vector<std::string> fused;
  Block::OpHandle front = optimizer;
  for (const Group& segment : segments) {
    std::vector<std::string> members;
    for (std::size_t i = segment.begin; i < segment.end; ++i) members.push_back(grads[i].var->name);
    const DataType dtype = grads[segment.begin].var->dtype;
    const std::string out = create_var(block,
                                VarRequest{.name = names.generate("FusedOutput_" + members[0]),
                                           .dtype = dtype,
                                           .persistable = false,
                                           .stop_gradient = true},
                                pass);
    fused.push_back(out);
    front = block.insert_op(
        front, make_op("coalesce_tensor", {{"Input", members}},
                       {{"Output", members}, {"FusedOutput", {out}}},
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

std::string_view to_string(MultiThreadTransMode mode) {
  switch (mode) {
    case MultiThreadTransMode::kFuseAllReduce: return "fuse_all_reduce";
    case MultiThreadTransMode::kAllGather: return "all_gather";
    case MultiThreadTransMode::kAllReduce: return "all_reduce";
  }
  return "unknown";
}

MultiThreadTransMode parse_multi_thread_trans_mode(std::string_view name) {
  for (MultiThreadTransMode m : {MultiThreadTransMode::kFuseAllReduce,
                                 MultiThreadTransMode::kAllGather,
                                 MultiThreadTransMode::kAllReduce})
    if (to_string(m) == name) return m;
  throw Error("unknown multi_thread trans mode '" + std::string(name) +
              "' (expected fuse_all_reduce, all_gather or all_reduce)");
}

void MultiThreadTranspiler::check_own_options() const {
  if (options_.gpu_num < 1)
    throw Error(error_prefix() + "gpu_num must be >= 1, got " + std::to_string(options_.gpu_num));
}

void MultiThreadTranspiler::rewrite_startup(Program& startup,
                                            const RewriteContext& context) const {
  Block& block = startup.global_block();
  if (collective().endpoints.size() > 1) {
    for (int ring_id = 0; ring_id < nrings(); ++ring_id)
      append_communicator_init(block, collective(), ring_id, /*multitrainer=*/true,
                               context.names, context.pass);
  } else {
    append_comm_init_all(block, collective().dialect);
  }
}

void MultiThreadTranspiler::rewrite_main(Program& main, const RewriteContext& context) const {
  const int nranks = static_cast<int>(collective().endpoints.size());
  Block& block = main.global_block();
  const std::size_t adam_ops = options_.trans_mode == MultiThreadTransMode::kAllGather
                                   ? count_adam_ops_for_all_gather(block, context.pass)
                                   : 0;
  insert_loss_grad_scale(block, static_cast<float>(1.0 / nranks), context.pass);
  switch (options_.trans_mode) {
    case MultiThreadTransMode::kAllGather: {
      const int allgather_ranks = nranks * options_.gpu_num;
      // A gathered grad and a piece per rank for each adam op's parameter,
      // added at once (without this, a large program's var index is rebuilt
      // as they come: bench/RESULTS.md, session 21).
      block.reserve_vars(block.var_count() +
                         adam_ops * (static_cast<std::size_t>(allgather_ranks) + 1));
      insert_grad_allgather(block, nrings(), allgather_ranks, collective().dialect, context.pass);
      split_adam_ops(block, allgather_ranks, context.pass);
      break;
    }
    case MultiThreadTransMode::kFuseAllReduce:
      insert_segmented_fused_allreduce(block, nrings(), context.names, context.pass);
      break;
    case MultiThreadTransMode::kAllReduce:
      insert_grad_allreduce(block, nrings(), context.pass);
      break;
  }
}

TranspilerRegistration multi_thread_registration() {
  return {
      .name = "multi_thread",
      .reference_class = "MultiThread",
      .summary = "several GPUs per node (Paddle's mode \"box\"): fused allreduce, all_gather "
                 "with split adam ops, or one allreduce per gradient",
      .rings = MultiThreadTranspiler::kRings,
      .settings = {{.name = "trans-mode",
                    .help = "fuse_all_reduce (default), all_gather or all_reduce",
                    .choices = {"fuse_all_reduce", "all_gather", "all_reduce"}},
                   selected_gpus_setting()},
      .create = [](const CollectiveOptions& collective, const TranspilerSettings& settings)
          -> std::unique_ptr<Transpiler> {
        MultiThreadOptions o;
        if (auto it = settings.find("trans-mode"); it != settings.end())
          o.trans_mode = parse_multi_thread_trans_mode(it->second);
        o.gpu_num = setting_list_size(settings, "selected-gpus", o.gpu_num);
        return std::make_unique<MultiThreadTranspiler>(collective, o);
      },
  };
}

}  // namespace ctp
