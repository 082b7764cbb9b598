// An operator (framework.proto's OpDesc): type, ordered input and output
// slots, and ordered typed attributes.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "program_ir/attribute.h"
#include "program_ir/unknown_fields.h"

namespace ctp {

struct Slot {
  std::string name;
  std::vector<std::string> args;
  bool operator==(const Slot&) const = default;
};

// An op's attributes as they were read from protobuf: the OpDesc.attrs
// fields (tag, length and Attr message each, valid and in file order),
// `count` of them. A rewrite reads only a few attributes of most ops
// (op_role, op_role_var), so the others stay as these bytes until asked for
// and are written back as they came (program_ir/wire_attrs.h decodes them).
struct WireAttrs {
  std::string_view fields;
  // Keeps `fields` alive: the input an op was read from (shared by every op
  // of a program read lazily), or a copy of the bytes made for this op. In
  // an Op that keeps its OpDesc as bytes it keeps those alive too, even
  // when the op has no attributes (Op::set_wire_op).
  std::shared_ptr<const void> owner;
  uint32_t count = 0;
  // Every Attr message starts with its name and holds no other name field
  // (as protobuf libraries write them): finding an attribute by name then
  // reads one field of each, not all of them (op_callstack has dozens).
  bool names_lead = false;
  // Where the first op_role and op_role_var attributes start in `fields`
  // (kAbsent: none), when the reader noted them (roles_noted): a rewrite
  // asks every op for both, and then reads one message instead of looking.
  static constexpr uint32_t kAbsent = UINT32_MAX;
  bool roles_noted = false;
  // op_role's value, when the reader decoded it (an INT or LONG, as Paddle
  // writes it): a rewrite reads every op's role, and then touches no op's
  // bytes, which lie far apart in a large input (a cache miss each).
  enum class RoleKind : uint8_t { kNotDecoded, kInt, kLong };
  RoleKind op_role_kind = RoleKind::kNotDecoded;
  uint32_t op_role_at = kAbsent;
  uint32_t op_role_var_at = kAbsent;
  int64_t op_role_value = 0;
  bool empty() const { return count == 0; }
  // Fields held in a string of their own.
  static WireAttrs copied(std::string_view fields, uint32_t count, bool names_lead);
};

// The whole OpDesc an op was read from, kept (a view that holds its input
// alive) while nothing edits the op: its slots are decoded from it on first
// use, and an op that nothing changed is written back as these bytes, which
// is what makes a large rewrite cost little more than a copy of its input
// (issue 15). See Op::unchanged_wire_bytes.
struct WireOp {
  std::string_view bytes;  // the OpDesc message's fields (kept alive by the Op)
  // A summary of the slots' names, a bit each (slot_name_bit, wire_slots.h):
  // asking for a slot the op lacks then seldom reads its bytes (a rewrite
  // asks every op whether it has Param, Grad and LearningRate). Whoever
  // makes a WireOp fills them (the reader and packed_op do).
  uint32_t input_names = 0;
  uint32_t output_names = 0;
  // What the bytes say of the fields Op keeps as public members, so that a
  // change to them is seen when the op is written: the type as where it
  // lies in `bytes` (set_type). 32 bytes in all: an Op holds one, and a
  // large program has a million ops.
  uint32_t type_at = 0;
  uint16_t type_size = 0;
  bool is_target : 1 = false;
  bool is_target_explicit : 1 = false;
  // The op is one of several copies that share all their bytes but a run
  // of whole fields (Op::set_spliced_wire_op): its OpDesc is the shell's
  // `before`, then `bytes`, then the shell's `after`, where the type lies
  // (type_at counts from the start of `after`).
  bool spliced : 1 = false;
  // The longest type a WireOp can say (an op with a longer one, which no
  // real program has, is held decoded).
  static constexpr std::size_t kMaxTypeSize = UINT16_MAX;
  // `type` lies within `bytes` and is at most kMaxTypeSize long.
  void set_type(std::string_view type) {
    type_at = static_cast<uint32_t>(type.data() - bytes.data());
    type_size = static_cast<uint16_t>(type.size());
  }
  bool empty() const { return bytes.empty(); }
};

// What the copies of a spliced op share (WireOp::spliced): the fields
// before and after each copy's own run. The object that keeps them alive
// is the copies' one owner (Op::set_spliced_wire_op).
struct WireOpShell {
  std::string_view before;
  std::string_view after;
};

// An OpDesc's bytes as up to three runs of whole fields, in order.
struct WireRuns {
  std::string_view runs[3];
  std::size_t count = 0;
};

class Op {
 public:
  std::string type;
  bool is_target = false;
  // The file wrote is_target although it is false (proto2 presence; see
  // Var::ExplicitDefaults).
  bool is_target_explicit = false;

 private:
  // Here, beside the public flags, where they take no room of their own.
  bool slots_in_wire_ = false;
  // A block holds copies of this op after it (Block::insert_op_copies): a
  // mark of its place in the list, which copying or moving an op does not
  // carry, and assigning to it keeps.
  bool heads_held_copies_ = false;
  friend class Block;

 public:
  bool heads_held_copies() const { return heads_held_copies_; }
  UnknownFields unknown_fields;  // OpDesc fields ctp does not know

  Op() = default;
  explicit Op(std::string op_type) : type(std::move(op_type)) {}
  Op(std::string op_type, std::vector<Slot> in, std::vector<Slot> out,
     std::vector<NamedAttribute> attributes = {});
  Op(const Op& other);
  Op(Op&& other) noexcept;
  Op& operator=(const Op& other);
  Op& operator=(Op&& other) noexcept;
  ~Op();

  // --- input and output slots, in order ---
  // An op read lazily from protobuf decodes them from its wire bytes on
  // first use, once (concurrent const calls are safe, as for attrs()).
  const std::vector<Slot>& inputs() const { return slots().inputs; }
  const std::vector<Slot>& outputs() const { return slots().outputs; }
  // The slots for editing (decoded for good: the op is no longer written
  // back as the bytes it was read from).
  std::vector<Slot>& mutable_inputs();
  std::vector<Slot>& mutable_outputs();
  // nullptr when the slot is absent.
  const std::vector<std::string>* input(std::string_view slot) const;
  const std::vector<std::string>* output(std::string_view slot) const;
  // Decode nothing: an op still holding its slots as bytes reads only the
  // slots' names there (a rewrite asks every op, e.g. is_update_op).
  bool has_input(std::string_view slot) const;
  bool has_output(std::string_view slot) const;
  // A copy of the slot's arguments (nullptr's case: nullopt), decoding
  // nothing: an op still holding its slots as bytes reads that slot alone
  // there (a rewrite asks each update op for its Param, not for its dozen
  // slots).
  std::optional<std::vector<std::string>> input_args(std::string_view slot) const;
  std::optional<std::vector<std::string>> output_args(std::string_view slot) const;
  // Replaces the slot's arguments, appending the slot if it is new.
  void set_input(std::string_view slot, std::vector<std::string> args);
  void set_output(std::string_view slot, std::vector<std::string> args);
  // All argument names in slot order, as Paddle's input_arg_names().
  std::vector<std::string> input_arg_names() const;
  std::vector<std::string> output_arg_names() const;

  // --- attributes, in order ---
  // An op read from protobuf holds them as wire bytes (wire_attrs()); the
  // first call decodes them, once: concurrent const calls are safe (the
  // decoded list is published through an atomic and never changes after).
  const std::vector<NamedAttribute>& attrs() const;
  // The list for editing (decoded for good; the wire bytes are dropped).
  std::vector<NamedAttribute>& mutable_attrs();
  // nullptr when absent. Decodes the attributes (attrs()).
  const Attribute* attr(std::string_view name) const;
  // A copy of one attribute, read from the wire bytes without decoding the
  // others: what a pass that asks every op (op_role, op_role_var) uses.
  std::optional<Attribute> attr_value(std::string_view name) const;
  bool has_attr(std::string_view name) const;  // decodes nothing
  // Replaces the attribute's value, appending it if it is new.
  void set_attr(std::string_view name, Attribute value);
  bool remove_attr(std::string_view name);

  // The undecoded attributes (empty once decoded or when built in memory).
  const WireAttrs& wire_attrs() const { return wire_; }
  // For the protobuf reader: the op's attributes become `wire`, which must
  // hold valid OpDesc.attrs fields.
  void set_wire_attrs(WireAttrs wire);
  // For the protobuf reader: the op was read from `wire`, a checked OpDesc
  // with no unknown fields whose attributes are one run (already set with
  // set_wire_attrs, from the same bytes); its slots are decoded from it when
  // first asked for. `owner` keeps the bytes alive (one owner per op, held
  // in wire_attrs().owner: the attributes lie in the same bytes).
  void set_wire_op(WireOp wire, std::shared_ptr<const void> owner);
  // The same for one of several copies (packed_op_copies): its OpDesc is
  // shell->before, `own` (its own run: own.bytes), then shell->after, and
  // `shell`, which keeps all of them alive, is its owner. Its attributes,
  // set first with set_wire_attrs, lie in shell->after.
  void set_spliced_wire_op(WireOp own, std::shared_ptr<const WireOpShell> shell);
  // The OpDesc bytes the op was read from when nothing has changed it since
  // (slots, attributes, type, is_target): what the writer writes for it.
  // nullopt for a spliced op (unchanged_wire_runs).
  std::optional<std::string_view> unchanged_wire_bytes() const;
  // The same as runs, spliced ops' included.
  std::optional<WireRuns> unchanged_wire_runs() const;

  // Attributes compare by value, whether decoded or not.
  bool operator==(const Op& other) const;

 private:
  struct SlotLists {
    std::vector<Slot> inputs;
    std::vector<Slot> outputs;
    bool operator==(const SlotLists&) const = default;
  };
  const SlotLists& slots() const;
  // wire_op_'s OpDesc as runs, and the type they say; a spliced op's shell.
  WireRuns wire_runs() const;
  const WireOpShell& wire_shell() const;
  std::string_view wire_type() const;
  // The slots are still only wire_op_'s bytes (has_input and the like
  // read them there).
  bool undecoded_wire_slots() const;
  // False when the summary of the slots' names rules `slot` out.
  bool wire_may_have_slot(bool input, std::string_view slot) const;
  bool has_wire_or_decoded_slot(bool input, std::string_view slot) const;
  void decode_wire_runs(std::vector<Slot>& inputs, std::vector<Slot>& outputs) const;
  std::optional<std::vector<std::string>> slot_args(bool input, std::string_view slot) const;
  void own_slots();  // decodes the slots into slots_ for editing
  void drop_wire_op();
  void drop_lists();

  // A large program holds a few hundred thousand ops, nearly all of them
  // read from a file or packed, so what only an op built or edited in
  // memory needs lives behind a pointer (issue 15: 184 bytes an op, where
  // lists held inline made 280).
  //
  // The slots: while slots_in_wire_, the list decoded from wire_op_ (set
  // once, by the first reader; nullptr until then); otherwise the op's own
  // lists (nullptr: none).
  mutable std::atomic<SlotLists*> slots_{nullptr};
  // The attributes, likewise: decoded from wire_ while it is not empty.
  mutable std::atomic<std::vector<NamedAttribute>*> attrs_{nullptr};
  WireOp wire_op_;
  // Its owner also keeps wire_op_'s bytes alive (the reader's and packed
  // ops' attributes lie in their OpDesc's bytes): an op holds one owner.
  WireAttrs wire_;
};

}  // namespace ctp
