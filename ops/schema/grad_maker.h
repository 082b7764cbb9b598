// An op's grad maker (Paddle's GradOpMaker): given a forward op and the vars
// that need no gradient, the grad ops that compute its inputs' gradients.
// Every op schema says one of three things about its gradient
// (OpDef::grad): it has a maker, it has none by nature (Paddle's
// EmptyGradOpMaker: initializers, feed, fetch; gradients stop there), or
// nothing is declared (the backward pass refuses such an op on a path from a
// parameter to the loss, naming it).
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "program_ir/op.h"

namespace ctp {

// Paddle's grad var naming: x -> x@GRAD; a var that needs no gradient is
// written as @EMPTY@ where a list must keep its positions.
inline constexpr std::string_view kGradVarSuffix = "@GRAD";
inline constexpr std::string_view kEmptyVarName = "@EMPTY@";
std::string grad_var_name(std::string_view var);
// The forward var of a grad var: x@GRAD and x@GRAD@RENAME@block0@1 -> x; a
// name without @GRAD is returned as it is.
std::string_view strip_grad_suffix(std::string_view name);

// What a grad maker reads: the forward op, and which of its vars need no
// gradient (stop_gradient, or not on the way to the loss).
class GradMakerContext {
 public:
  GradMakerContext(const Op& forward, const std::unordered_set<std::string>& no_grad_vars)
      : forward_(forward), no_grad_vars_(no_grad_vars) {}

  const Op& forward() const { return forward_; }
  // The forward op's vars of an input or output slot (empty when absent).
  std::vector<std::string> input(std::string_view slot) const;
  std::vector<std::string> output(std::string_view slot) const;
  bool has_input(std::string_view slot) const { return forward_.has_input(slot); }
  // x@GRAD for every var of forward output `slot`.
  std::vector<std::string> output_grad(std::string_view slot) const;
  // x@GRAD for every var of forward input `slot`, @EMPTY@ for one that needs
  // no gradient. drop_empty (Paddle's default): a one-var slot whose var
  // needs no gradient gives an empty list, so the grad op keeps the slot
  // with no var (mul_grad's X@GRAD=[] on a data input).
  std::vector<std::string> input_grad(std::string_view slot, bool drop_empty = true) const;
  // The forward op's attribute, or nullptr.
  const Attribute* attr(std::string_view name) const { return forward_.attr(name); }

 private:
  const Op& forward_;
  const std::unordered_set<std::string>& no_grad_vars_;
};

using GradMakerFn = std::function<std::vector<Op>(const GradMakerContext&)>;

struct GradMaker {
  enum class Kind {
    kUndeclared,  // the schema says nothing: refused on a path to the loss
    kNone,        // no gradient by nature: gradients stop at this op
    kOps,         // `make` gives the grad ops
  };
  Kind kind = Kind::kUndeclared;
  GradMakerFn make;

  static GradMaker none() { return {Kind::kNone, {}}; }
  static GradMaker ops(GradMakerFn fn) { return {Kind::kOps, std::move(fn)}; }
  bool declared() const { return kind != Kind::kUndeclared; }
};

// The common maker (Paddle's SingleGradOpMaker with SetAttrMap(Attrs())):
// one op of type `type` that copies every forward attribute. Its input
// slots are named as the grad op names them: "S@GRAD" takes the gradients of
// forward output S, a plain "S" takes the vars of forward input (else
// output) S. Its output slots "S@GRAD" take the gradients of forward input S
// (input_grad). A forward slot the op leaves out is left out.
//   grad_op("mul_grad", {"X", "Y", "Out@GRAD"}, {"X@GRAD", "Y@GRAD"})
GradMaker grad_op(std::string type, std::vector<std::string> inputs,
                  std::vector<std::string> outputs);

}  // namespace ctp
