// Ops a rewrite adds, held as compactly as the ops it read.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "program_ir/op.h"

namespace ctp {

// A slot that names one var, as views: what most of the ops a rewrite adds
// per parameter have, built without copying a name (OpParts::var_inputs).
struct VarSlot {
  std::string_view name;
  std::string_view var;
};

// What an op is made of, none of it copied: the type, the slots and the
// attributes, either as values (`attrs`) or as the wire bytes of an op that
// was read (`wire_attrs`, set and non-empty: written as they are).
struct OpParts {
  std::string_view type;
  std::span<const Slot> inputs;
  std::span<const Slot> outputs;
  // Slots of one var each, after `inputs` and `outputs` (usually instead).
  std::span<const VarSlot> var_inputs;
  std::span<const VarSlot> var_outputs;
  std::span<const NamedAttribute> attrs;
  // Written after `attrs` (a default the caller adds without copying them).
  std::span<const NamedAttribute> more_attrs;
  const WireAttrs* wire_attrs = nullptr;
  bool is_target = false;
  bool is_target_explicit = false;
};

// The op as the protobuf reader holds an op it read from a file
// (Op::set_wire_op): its OpDesc encoded once, as the writer encodes it, into
// one allocation of its own; its slots and attributes decoded only when asked
// for; written back as those bytes. The reader's notes (slot names, where
// op_role and op_role_var lie, op_role's value) are taken while encoding.
// An op whose type is longer than WireOp::kMaxTypeSize comes back built in
// memory, as the reader holds one.
//
// Why: a rewrite of a large program adds an op or more per parameter
// (local_sgd six, multi_thread's all_gather a copy of each adam op per
// rank). Built in memory, an op holds an allocation per slot, argument and
// attribute (a c_allreduce_sum about 700 bytes in a dozen); packed, one of
// its encoded size, which is what the writer then copies (issue 15).
Op packed_op(const OpParts& parts);

// Copies of the op `parts` describe, one per var of `vars`, copy i with its
// input slot number `slot` naming vars[i] alone: all_gather's adam copies,
// one per gathered piece, each reading its own Grad. Each equals
// packed_op() of its parts and is written as the same bytes, but the copies
// share every byte but that slot's field (WireOp::spliced): 18 copies of an
// adam op cost a little more than one, where each had its own ~500 bytes.
std::vector<Op> packed_op_copies(const OpParts& parts, std::size_t slot,
                                 std::span<const std::string> vars);

// The same copies, kept as one: the bytes they share, each one's own field,
// and what an Op of each is made of, so that a block can hold all but the
// first without an Op (a 168-byte list node) each until something asks for
// its ops (Block::insert_op_copies), and the writer writes them from here.
// MultiThread all_gather makes 18 copies of each of a large program's adam
// ops: four and a half million at 1M ops.
class OpCopies {
 public:
  OpCopies();
  OpCopies(OpCopies&&) noexcept;
  OpCopies& operator=(OpCopies&&) noexcept;
  ~OpCopies();
  std::size_t size() const;
  // Copy i, as packed_op_copies gives it.
  Op op(std::size_t i) const;
  // Whether the copies share their bytes (not so for a type longer than a
  // WireOp can say, or for `parts` with var_inputs: one op each then).
  bool shares_bytes() const { return shared_ != nullptr; }
  // Copy i's OpDesc bytes, as the writer writes op(i); copies that share
  // their bytes only.
  WireRuns runs(std::size_t i) const;

 private:
  friend OpCopies pack_op_copies(const OpParts&, std::size_t, std::span<const std::string>);
  struct Shared;
  std::string_view own(std::size_t i) const;
  // The copies' one owner (Op::set_spliced_wire_op), a share of shared_.
  std::shared_ptr<const WireOpShell> shell() const;
  // Shared form: the bytes, each copy's own field's end in them (from
  // own_from_), and the copies' common type, flags and attributes.
  std::shared_ptr<Shared> shared_;
  const char* own_from_ = nullptr;
  std::vector<uint32_t> own_ends_;
  std::string type_;
  WireOp wire_;
  WireAttrs attrs_;
  // Otherwise (a type too long for a WireOp, or var_inputs), the ops.
  std::vector<Op> ops_;
};
OpCopies pack_op_copies(const OpParts& parts, std::size_t slot,
                        std::span<const std::string> vars);

// `op` packed: it equals `op` and reads the same through every accessor.
// An op the reader would not keep as its bytes (one with unknown fields)
// comes back as it is, as does one whose attributes are still bytes without
// their names first.
Op packed_op(const Op& op);

}  // namespace ctp
