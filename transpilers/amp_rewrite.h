// Automatic mixed precision of a forward program, as Paddle's static AMP O1
// (paddle.static.amp's rewrite_program): each op computes in FP32 or in a
// 16-bit type (BF16 or FP16) by three op lists, and casts are inserted where
// a var's dtype differs from what its reader computes in.
//   - white ops (conv2d, matmul_v2, mul, ...): numerically safe and worth
//     it: always 16-bit;
//   - black ops (softmax, the losses, mean, sum, layer_norm,
//     lookup_table_v2, ...): always FP32;
//   - gray ops (elementwise, activations, pooling, batch_norm, reshapes,
//     ...): 16-bit
//     when an input comes from a 16-bit op and none from a black op, so a
//     run of them after a white op stays 16-bit instead of casting back and
//     forth; FP32 otherwise;
//   - every other op: FP32.
// A 16-bit op reads `<var>.cast_bf16` (or .cast_fp16) copies of its FP32
// float inputs, made by a `cast` just before it (one per var, reused until
// the var is written again), and its float outputs become 16-bit vars; an
// FP32 op reads FP32 copies of 16-bit inputs likewise. Parameters stay FP32,
// so append_backward, run after this pass, gives FP32 parameter gradients
// (through cast's gradient). batch_norm's and layer_norm's statistics,
// scale and bias stay FP32 whatever the list (Paddle keeps them so too).
//
// Run it before append_backward. This pass rewrites the forward only; the
// loss scaling that FP16's small gradients need (BF16 has FP32's exponent
// range and needs none) is AmpOptions::loss_scaling, which
// transpilers/minimize.h applies around the backward and the optimizer
// (transpilers/loss_scaling.h).
#pragma once
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "program_ir/program.h"
#include "transpilers/loss_scaling.h"
#include "transpilers/pass.h"

namespace ctp {

struct AmpOptions {
  DataType dtype = DataType::BF16;  // BF16 or FP16
  // Paddle's custom_white_list / custom_black_list: op types moved into the
  // white or black list (an op in both is an error).
  std::vector<std::string> custom_white_list;
  std::vector<std::string> custom_black_list;
  // Paddle's decorator's loss scaling (use_dynamic_loss_scaling and the
  // rest): set, minimize() scales the loss and unscales the gradients;
  // unset, none (the usual choice for BF16).
  std::optional<LossScalingOptions> loss_scaling;
};

struct AmpOpLists {
  std::set<std::string> white, black, gray;
};

// The default lists with the options' custom lists applied. Throws
// ctp::Error when an op type is in both custom lists.
AmpOpLists amp_op_lists(const AmpOptions& options);

struct AmpResult {
  std::size_t low_precision_ops = 0;  // ops that now compute in options.dtype
  std::size_t casts = 0;              // cast ops inserted
};

// Rewrites the global block in place. Throws ctp::Error, changing nothing,
// when dtype is not BF16/FP16, the program has more than one block, or it
// already has a backward.
AmpResult amp_rewrite(Program& program, const AmpOptions& options);

class AmpRewritePass final : public ProgramPass {
 public:
  explicit AmpRewritePass(AmpOptions options) : options_(std::move(options)) {}
  std::string_view name() const override { return "amp_rewrite"; }
  void run(Program& program) override { result_ = amp_rewrite(program, options_); }
  const AmpResult& result() const { return result_; }

 private:
  AmpOptions options_;
  AmpResult result_;
};

}  // namespace ctp
