// Paddle's op roles (the INT attribute `op_role`, a bit set) and the
// `op_role_var` attribute: [param, grad, param, grad, ...].
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "program_ir/op.h"

namespace ctp {

namespace op_role {
inline constexpr int32_t kForward = 0x0000;
inline constexpr int32_t kBackward = 0x0001;
inline constexpr int32_t kOptimize = 0x0002;
inline constexpr int32_t kRPC = 0x0004;
inline constexpr int32_t kDist = 0x0008;
inline constexpr int32_t kLRSched = 0x0010;
inline constexpr int32_t kLoss = 0x0100;
inline constexpr int32_t kNotSpecified = 0x1000;
}  // namespace op_role

inline constexpr const char* kOpRoleAttr = "op_role";
inline constexpr const char* kOpRoleVarAttr = "op_role_var";

// The op's role bits, or nullopt when it has no op_role attribute.
std::optional<int64_t> get_op_role(const Op& op);
// The reference's predicates (collective.py _is_backward_op & co.).
bool is_backward_op(const Op& op);
bool is_optimizer_op(const Op& op);
bool is_loss_grad_op(const Op& op);
// An optimizer update op: has Param, Grad and LearningRate inputs.
bool is_update_op(const Op& op);

struct ParamGrad {
  std::string param;
  std::string grad;
};
// The op's op_role_var as pairs; empty when absent. Throws ctp::Error when the
// list has odd length or is not STRINGS.
std::vector<ParamGrad> param_grad_pairs(const Op& op);

}  // namespace ctp
