// Non-finite values (NaN, +-Inf) in what ops wrote, as Paddle's
// FLAGS_check_nan_inf finds them: the executor checks every op's
// floating-point outputs after the op when RunServices::check_finite is set,
// and a trainer whose loss is not finite asks which op's output went bad.
#pragma once
#include <optional>
#include <string>

#include "executor/runtime/scope.h"
#include "program_ir/program.h"

namespace ctp {

class DeviceSession;

// When `tensor` (in host memory) holds a non-finite value: "FP32[8, 4] holds
// inf at element 5 (3 of 32 values are not finite)".
std::optional<std::string> non_finite_value(const Tensor& tensor);

// The first output of `op` (slot by slot, as the op lists them) that holds a
// non-finite value, described as "output Out='fc_0.tmp_0' FP32[8, 4] holds
// inf at element 5 (3 of 32 values are not finite)"; nullopt when every
// floating-point output is finite. Outputs on a GPU are copied to the host
// through `device` (its session) once its queued work is done (slow: for
// debugging).
std::optional<std::string> non_finite_output(const Op& op, const Scope& scope,
                                             DeviceSession* device);

// Of the ops of `block`, in program order, the first whose output now holds
// a non-finite value: "block 0, op 12 'matmul': output ...". After a step
// every temporary keeps the value its op wrote, so for the ops before the
// optimizer this is the op that produced the first non-finite value.
std::optional<std::string> first_non_finite_op(const Block& block, const Scope& scope,
                                               DeviceSession* device);

}  // namespace ctp
