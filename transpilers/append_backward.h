// The backward pass: Paddle's append_backward(loss) on a forward program.
// It appends to the global block what Paddle's backward.py writes:
//   - the loss op's role becomes Forward|Loss;
//   - fill_constant loss@GRAD = 1 (the loss's shape, [1] or []) with role
//     Backward|Loss;
//   - the grad ops of the ops on the way from the parameters to the loss, in
//     reverse order, made by each op's grad maker (ops/schema/grad_maker.h),
//     role Backward; no gradient for stop_gradient vars, the vars named in
//     the options, and outputs that do not lead to the loss;
//   - partial gradients x@GRAD@RENAME@block0@<n> and a `sum` into x@GRAD
//     where several ops give a var's gradient;
//   - the @GRAD vars, with their forward var's dtype and shape;
//   - op_role_var [param, param@GRAD] on the op that writes each trainable
//     parameter's gradient last, which the transpilers read.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "program_ir/op_role.h"
#include "program_ir/program.h"
#include "transpilers/pass.h"

namespace ctp {

struct BackwardOptions {
  std::string loss;  // a var of the global block: FP16/BF16/FP32/FP64, shape [1] or []
  // Paddle's no_grad_set: vars that get no gradient beside stop_gradient ones.
  std::vector<std::string> no_grad_vars;
};

struct BackwardResult {
  // Paddle's params_grads: every trainable parameter with a gradient, in the
  // global block's declaration order.
  std::vector<ParamGrad> params_grads;
  // Trainable parameters with no path to the loss: they get no gradient and
  // no update (as in Paddle, which drops them from params_grads silently;
  // ctp's command line warns, since it is most often a wrong --loss).
  std::vector<std::string> unreached_parameters;
};

// The trainable parameters of a block: the vars marked is_parameter (when
// any is) that are not stop_gradient; in a program that marks none (saved
// Paddle programs never do), the persistable float tensors that are not
// stop_gradient. In declaration order.
std::vector<std::string> trainable_parameters(const Block& block);

// Throws ctp::Error naming the place: a loss that is missing, not a float
// scalar, or written by no op; a program that already has a backward; an op
// without a grad maker on the way from a parameter to the loss; no
// parameter reaching the loss. Nothing is changed when it throws.
BackwardResult append_backward(Program& program, const BackwardOptions& options);

class AppendBackwardPass final : public ProgramPass {
 public:
  explicit AppendBackwardPass(BackwardOptions options) : options_(std::move(options)) {}
  std::string_view name() const override { return "append_backward"; }
  void run(Program& program) override { result_ = append_backward(program, options_); }
  const BackwardResult& result() const { return result_; }

 private:
  BackwardOptions options_;
  BackwardResult result_;
};

}  // namespace ctp
