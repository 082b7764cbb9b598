// Element-wise reductions of the CPU communicators (Gloo's reduce callback
// and the in-process thread communicator share them, so both backends give
// bit-identical results). FP16 and BF16 are reduced in float and rounded
// back to nearest-even after every step, as NCCL does (executor/runtime/float16.h).
#pragma once
#include <cstddef>
#include <cstdint>

#include "executor/runtime/communicator.h"
#include "program_ir/types.h"

namespace ctp {

// Whether all_reduce supports that element type.
bool is_reducible(DataType dtype);

// out[i] = a[i] (op) b[i] for n elements; out may alias a or b.
// Throws ctp::Error for an element type is_reducible rejects.
void reduce_elements(DataType dtype, ReduceOp op, void* out, const void* a, const void* b,
                     std::size_t n);

}  // namespace ctp
