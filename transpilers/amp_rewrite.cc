#include "transpilers/amp_rewrite.h"

#include <cctype>
#include <map>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "program_ir/error.h"
#include "program_ir/op_role.h"
#include "transpilers/rewrite_support.h"

namespace ctp {
namespace {

constexpr std::string_view kPass = "amp_rewrite";

// Paddle's fp16_lists.py white list: numerically safe, and where 16-bit pays.
// With it flash_attn, whose only GPU kernels in Paddle are 16-bit (its
// softmax is computed in FP32 inside, and softmax_lse stays FP32).
const std::set<std::string>& default_white() {
  static const std::set<std::string> ops = {"conv2d", "matmul", "matmul_v2", "mul", "flash_attn"};
  return ops;
}

// Paddle's black list (exp/log/square overflow or lose precision in 16
// bits, reductions and losses accumulate), with its extra black list
// (embedding lookups), and beside it layer_norm, which torch.autocast also
// keeps in FP32.
const std::set<std::string>& default_black() {
  static const std::set<std::string> ops = {
      "exp", "square", "log", "mean", "sum", "cos_sim", "softmax", "softmax_with_cross_entropy",
      "sigmoid_cross_entropy_with_logits", "c_softmax_with_cross_entropy", "cross_entropy",
      "cross_entropy2", "reduce_sum", "lookup_table", "lookup_table_v2", "layer_norm"};
  return ops;
}

// Paddle's gray list, less the ops whose output dtype an attribute sets
// (cast, fill_constant, the random initializers: this pass leaves them
// FP32), plus the shape ops and gelu that ctp has (they move or map values
// one by one; torch.autocast runs gelu in the input's dtype too).
const std::set<std::string>& default_gray() {
  static const std::set<std::string> ops = {
      "elementwise_add", "elementwise_sub", "elementwise_mul", "elementwise_div",
      "elementwise_max", "elementwise_min", "elementwise_pow", "batch_norm", "tanh", "sigmoid",
      "gelu",
      "relu", "relu6", "leaky_relu", "pool2d", "dropout", "scale", "clip", "flatten2",
      "flatten_contiguous_range", "squeeze2", "unsqueeze2", "reshape2", "transpose2", "stack",
      "slice", "concat", "split", "gather"};
  return ops;
}

// Slots that stay FP32 whatever the op computes in: normalization
// statistics, scale and bias (the kernels take them FP32 beside 16-bit X),
// scale's ScaleTensor and flash_attn's softmax_lse.
bool keeps_fp32(const std::string& op_type, const std::string& slot) {
  static const std::map<std::string, std::set<std::string>> slots = {
      {"batch_norm",
       {"Scale", "Bias", "Mean", "Variance", "MeanOut", "VarianceOut", "SavedMean",
        "SavedVariance", "ReserveSpace"}},
      {"layer_norm", {"Scale", "Bias", "Mean", "Variance"}},
      {"flash_attn", {"softmax_lse"}},
      {"scale", {"ScaleTensor"}}};
  const auto it = slots.find(op_type);
  return it != slots.end() && it->second.contains(slot);
}

bool is_float_tensor(const Var& var) {
  return var.type == VarKind::LOD_TENSOR && var.has_tensor_desc() &&
         (var.dtype == DataType::FP32 || var.dtype == DataType::FP16 ||
          var.dtype == DataType::BF16);
}

// Ops whose output dtype an attribute names: they are never made 16-bit.
bool output_dtype_is_an_attribute(const Op& op) {
  return op.has_attr("dtype") || op.has_attr("out_dtype");
}

enum class Compute { Fp32, Low };

class AmpRewriter {
 public:
  AmpRewriter(Block& block, const AmpOptions& options)
      : block_(block), lists_(amp_op_lists(options)), low_(options.dtype) {}

  AmpResult run() {
    find_pinned_ops();
    for (auto it = block_.ops().begin(); it != block_.ops().end(); ++it) {
      if (!touches_float_tensors(*it)) continue;
      const Compute compute = decide(*it);
      rewrite(it, compute);
      if (compute == Compute::Low) ++result_.low_precision_ops;
    }
    return result_;
  }

 private:
  // Float args of an op, skipping the FP32-kept slots.
  template <typename F>
  void for_float_args(const Op& op, const std::vector<Slot>& slots, F&& f) const {
    for (const Slot& slot : slots) {
      if (keeps_fp32(op.type, slot.name)) continue;
      for (const std::string& arg : slot.args) {
        const Var* var = block_.find_var(arg);
        if (var && is_float_tensor(*var)) f(*var);
      }
    }
  }

  bool touches_float_tensors(const Op& op) const {
    bool any = false;
    for_float_args(op, op.inputs(), [&](const Var&) { any = true; });
    for_float_args(op, op.outputs(), [&](const Var&) { any = true; });
    return any;
  }

  // Ops that must stay FP32 because changing their outputs' dtype would
  // change what other ops see: an output written by several ops, written in
  // place (also an input), or persistable.
  void find_pinned_ops() {
    std::unordered_map<std::string, int> writers;
    for (const Op& op : block_.ops())
      for_float_args(op, op.outputs(), [&](const Var& v) { ++writers[v.name]; });
    for (const Op& op : block_.ops()) {
      std::unordered_set<std::string> inputs;
      for (const Slot& slot : op.inputs()) inputs.insert(slot.args.begin(), slot.args.end());
      for_float_args(op, op.outputs(), [&](const Var& v) {
        if (writers[v.name] > 1 || inputs.contains(v.name) || v.persistable) pinned_.insert(&op);
      });
    }
  }

  Compute decide(const Op& op) const {
    if (pinned_.contains(&op) || output_dtype_is_an_attribute(op)) return Compute::Fp32;
    if (lists_.black.contains(op.type)) return Compute::Fp32;
    if (lists_.white.contains(op.type)) return Compute::Low;
    if (!lists_.gray.contains(op.type)) return Compute::Fp32;
    // Gray: 16-bit after a 16-bit op, unless an input comes from an op that
    // computed in FP32 (Paddle's "upstream black op" rule).
    bool low_input = false, fp32_producer = false;
    for_float_args(op, op.inputs(), [&](const Var& v) {
      if (v.dtype == low_) low_input = true;
      if (produced_in_fp32_.contains(v.name)) fp32_producer = true;
    });
    return low_input && !fp32_producer ? Compute::Low : Compute::Fp32;
  }

  // The name of `var` cast to `dtype` just before `at`, reusing an earlier
  // cast of the same var when nothing wrote the var since.
  std::string cast_copy(Block::OpHandle at, const Var& var, DataType dtype) {
    const std::pair<std::string, DataType> key{var.name, dtype};
    if (const auto it = casts_.find(key); it != casts_.end()) return it->second;
    std::string suffix(to_string(dtype));
    for (char& ch : suffix) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    std::string name = var.name + ".cast_" + suffix;
    for (int n = 1; block_.has_var(name); ++n)
      name = var.name + ".cast_" + suffix + "_" + std::to_string(n);
    const DataType from = var.dtype;
    create_var(block_,
               VarRequest{.name = name, .shape = var.shape, .dtype = dtype, .persistable = false,
                          .stop_gradient = var.stop_gradient},
               kPass);
    block_.insert_op(at, make_op("cast", {{"X", {var.name}}}, {{"Out", {name}}},
                                 {{"in_dtype", Attribute(static_cast<int32_t>(from))},
                                  {"out_dtype", Attribute(static_cast<int32_t>(dtype))},
                                  {kOpRoleAttr, Attribute(op_role::kForward)}}));
    ++result_.casts;
    casts_.emplace(key, name);
    return name;
  }

  void rewrite(Block::OpHandle it, Compute compute) {
    Op& op = *it;
    const DataType want = compute == Compute::Low ? low_ : DataType::FP32;
    for (Slot& slot : op.mutable_inputs()) {
      const DataType slot_want = keeps_fp32(op.type, slot.name) ? DataType::FP32 : want;
      for (std::string& arg : slot.args) {
        const Var* var = block_.find_var(arg);
        if (var && is_float_tensor(*var) && var->dtype != slot_want)
          arg = cast_copy(it, *var, slot_want);
      }
    }
    for (const Slot& slot : op.outputs())
      for (const std::string& arg : slot.args) {
        // A var written again: earlier casts of it are stale.
        casts_.erase({arg, DataType::FP32});
        casts_.erase({arg, low_});
        produced_in_fp32_.erase(arg);
      }
    for_float_args(op, op.outputs(), [&](const Var& v) {
      if (compute == Compute::Low) {
        block_.var(v.name).dtype = low_;
      } else {
        produced_in_fp32_.insert(v.name);
      }
    });
  }

  Block& block_;
  const AmpOpLists lists_;
  const DataType low_;
  std::unordered_set<const Op*> pinned_;
  std::unordered_set<std::string> produced_in_fp32_;
  std::map<std::pair<std::string, DataType>, std::string> casts_;
  AmpResult result_;
};

void check_program(const Program& program, const AmpOptions& options) {
  if (options.dtype != DataType::BF16 && options.dtype != DataType::FP16)
    throw Error(std::string(kPass) + ": mixed precision computes in BF16 or FP16, not " +
                std::string(to_string(options.dtype)));
  for (std::size_t b = 1; b < program.blocks.size(); ++b)
    if (program.blocks[b].op_count() > 0)
      throw Error(std::string(kPass) + ": block " + std::to_string(b) +
                  " has ops; mixed precision rewrites single-block programs only");
  const Block& block = program.global_block();
  std::size_t index = 0;
  for (const Op& op : block.ops()) {
    const OpSite site{kPass, block, index++, op};
    if (is_backward_at(site) || is_optimizer_at(site))
      site.fail("the program already has a backward or optimizer op; run amp_rewrite on the "
                "forward program, before append_backward");
  }
  for (const Var& var : block.vars())
    if (is_float_tensor(var) && var.dtype != DataType::FP32)
      throw Error(std::string(kPass) + ": var '" + var.name + "' is " +
                  std::string(to_string(var.dtype)) +
                  "; mixed precision rewrites programs whose float vars are all FP32");
}

}  // namespace

AmpOpLists amp_op_lists(const AmpOptions& options) {
  AmpOpLists lists{default_white(), default_black(), default_gray()};
  for (const std::string& op : options.custom_white_list)
    for (const std::string& other : options.custom_black_list)
      if (op == other)
        throw Error(std::string(kPass) + ": op '" + op +
                    "' is in both the custom white list and the custom black list");
  for (const std::string& op : options.custom_white_list) {
    lists.black.erase(op);
    lists.gray.erase(op);
    lists.white.insert(op);
  }
  for (const std::string& op : options.custom_black_list) {
    lists.white.erase(op);
    lists.gray.erase(op);
    lists.black.insert(op);
  }
  return lists;
}

AmpResult amp_rewrite(Program& program, const AmpOptions& options) {
  check_program(program, options);
  // The rewriter validates nothing after this point that could leave a
  // half-rewritten program, except amp_op_lists' overlap check, run first.
  (void)amp_op_lists(options);
  return AmpRewriter(program.global_block(), options).run();
}

}  // namespace ctp
