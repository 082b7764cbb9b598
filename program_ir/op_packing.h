// Ops a rewrite adds, held as compactly as the ops it read.
#pragma once
#include "program_ir/op.h"

namespace ctp {

// `op` as the protobuf reader holds an op it read from a file
// (Op::set_wire_op): its OpDesc bytes in one allocation of their own, its
// slots and attributes decoded only when asked for, written back as those
// bytes. It equals `op` and reads the same through every accessor. An op
// the reader would not keep as its bytes (one with unknown fields) comes
// back as it is, as does one whose attributes are still bytes without
// their names first.
//
// Why: a rewrite of a large program adds an op or more per parameter
// (local_sgd six, multi_thread's all_gather a copy of each adam op per
// rank). Built in memory, an op holds an allocation per slot, argument and
// attribute (a c_allreduce_sum about 700 bytes in a dozen); packed, one of
// its encoded size, which is what the writer then copies (issue 15).
Op packed_op(const Op& op);

}  // namespace ctp
