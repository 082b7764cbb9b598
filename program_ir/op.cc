#include "program_ir/op.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "program_ir/error.h"
#include "program_ir/wire_attrs.h"
#include "program_ir/wire_slots.h"

namespace ctp {
namespace {

const std::vector<std::string>* find_slot(const std::vector<Slot>& slots,
                                          std::string_view name) {
  for (const Slot& s : slots)
    if (s.name == name) return &s.args;
  return nullptr;
}

void put_slot(std::vector<Slot>& slots, std::string_view name,
              std::vector<std::string> args) {
  for (Slot& s : slots) {
    if (s.name == name) {
      s.args = std::move(args);
      return;
    }
  }
  slots.push_back(Slot{std::string(name), std::move(args)});
}

std::vector<std::string> flatten(const std::vector<Slot>& slots) {
  std::vector<std::string> names;
  for (const Slot& s : slots) names.insert(names.end(), s.args.begin(), s.args.end());
  return names;
}

}  // namespace

WireAttrs WireAttrs::copied(std::string_view fields, uint32_t count, bool names_lead) {
  auto copy = std::make_shared<const std::string>(fields);
  return WireAttrs{.fields = *copy, .owner = std::move(copy), .count = count,
                   .names_lead = names_lead};
}

namespace {

const std::vector<NamedAttribute> kNoAttrs;

}  // namespace

Op::Op(std::string op_type, std::vector<Slot> in, std::vector<Slot> out,
       std::vector<NamedAttribute> attributes)
    : type(std::move(op_type)) {
  if (!in.empty() || !out.empty()) slots_ = new SlotLists{std::move(in), std::move(out)};
  if (!attributes.empty()) attrs_ = new std::vector<NamedAttribute>(std::move(attributes));
}

const std::vector<std::string>* Op::input(std::string_view slot) const {
  return find_slot(inputs(), slot);
}
const std::vector<std::string>* Op::output(std::string_view slot) const {
  return find_slot(outputs(), slot);
}
void Op::set_input(std::string_view slot, std::vector<std::string> args) {
  put_slot(mutable_inputs(), slot, std::move(args));
}
void Op::set_output(std::string_view slot, std::vector<std::string> args) {
  put_slot(mutable_outputs(), slot, std::move(args));
}
bool Op::undecoded_wire_slots() const {
  return slots_in_wire_ && !slots_.load(std::memory_order_acquire);
}
bool Op::wire_may_have_slot(bool input, std::string_view slot) const {
  return (input ? wire_op_.input_names : wire_op_.output_names) & slot_name_bit(slot);
}
const WireOpShell& Op::wire_shell() const {
  // A spliced op's one owner is its shell (set_spliced_wire_op).
  return *static_cast<const WireOpShell*>(wire_.owner.get());
}
WireRuns Op::wire_runs() const {
  if (!wire_op_.spliced) return WireRuns{{wire_op_.bytes}, 1};
  return WireRuns{{wire_shell().before, wire_op_.bytes, wire_shell().after}, 3};
}
std::string_view Op::wire_type() const {
  const std::string_view in = wire_op_.spliced ? wire_shell().after : wire_op_.bytes;
  return in.substr(wire_op_.type_at, wire_op_.type_size);
}
bool Op::has_input(std::string_view slot) const {
  return has_wire_or_decoded_slot(true, slot);
}
bool Op::has_output(std::string_view slot) const {
  return has_wire_or_decoded_slot(false, slot);
}
bool Op::has_wire_or_decoded_slot(bool input, std::string_view slot) const {
  if (!undecoded_wire_slots()) return input ? this->input(slot) != nullptr : output(slot) != nullptr;
  if (!wire_may_have_slot(input, slot)) return false;
  const WireRuns wire = wire_runs();
  for (std::size_t i = 0; i < wire.count; ++i)
    if (wire_has_slot(wire.runs[i], input, slot)) return true;
  return false;
}
std::optional<std::vector<std::string>> Op::slot_args(bool input, std::string_view slot) const {
  if (undecoded_wire_slots()) {
    if (!wire_may_have_slot(input, slot)) return std::nullopt;
    const WireRuns wire = wire_runs();
    for (std::size_t i = 0; i < wire.count; ++i)
      if (auto args = wire_slot_args(wire.runs[i], input, slot)) return args;
    return std::nullopt;
  }
  if (const std::vector<std::string>* args = input ? this->input(slot) : output(slot))
    return *args;
  return std::nullopt;
}
std::optional<std::vector<std::string>> Op::input_args(std::string_view slot) const {
  return slot_args(true, slot);
}
std::optional<std::vector<std::string>> Op::output_args(std::string_view slot) const {
  return slot_args(false, slot);
}
std::vector<std::string> Op::input_arg_names() const { return flatten(inputs()); }
std::vector<std::string> Op::output_arg_names() const { return flatten(outputs()); }

const Op::SlotLists& Op::slots() const {
  static const SlotLists kNoSlots;
  if (const auto* lists = slots_.load(std::memory_order_acquire)) return *lists;
  if (!slots_in_wire_) return kNoSlots;
  // As attrs(): the first thread to publish its decoded copy wins.
  auto mine = std::make_unique<SlotLists>();
  decode_wire_runs(mine->inputs, mine->outputs);
  SlotLists* expected = nullptr;
  if (slots_.compare_exchange_strong(expected, mine.get(), std::memory_order_acq_rel,
                                     std::memory_order_acquire))
    return *mine.release();
  return *expected;
}

void Op::decode_wire_runs(std::vector<Slot>& inputs, std::vector<Slot>& outputs) const {
  const WireRuns wire = wire_runs();
  for (std::size_t i = 0; i < wire.count; ++i) decode_wire_slots(wire.runs[i], inputs, outputs);
}

void Op::drop_wire_op() {
  wire_op_ = {};
  // The owner stays while the attributes are still bytes (they lie in it).
  if (wire_.empty()) wire_.owner.reset();
}

void Op::own_slots() {
  if (slots_in_wire_) {
    if (!slots_.load(std::memory_order_acquire)) {
      auto decoded = std::make_unique<SlotLists>();
      decode_wire_runs(decoded->inputs, decoded->outputs);
      slots_.store(decoded.release(), std::memory_order_release);
    }
    slots_in_wire_ = false;
  }
  if (!slots_.load(std::memory_order_relaxed)) slots_.store(new SlotLists);
  drop_wire_op();
}

std::vector<Slot>& Op::mutable_inputs() {
  own_slots();
  return slots_.load(std::memory_order_relaxed)->inputs;
}
std::vector<Slot>& Op::mutable_outputs() {
  own_slots();
  return slots_.load(std::memory_order_relaxed)->outputs;
}

namespace {

// An op holds one owner for its OpDesc and attribute bytes (op.h: wire_).
void require_one_owner(const std::shared_ptr<const void>& a, const std::shared_ptr<const void>& b) {
  if (a != b)
    throw Error("internal error: an op's attributes and its OpDesc lie in other bytes");
}

}  // namespace

void Op::set_wire_op(WireOp wire, std::shared_ptr<const void> owner) {
  delete slots_.exchange(nullptr, std::memory_order_acq_rel);
  drop_wire_op();
  if (!wire_.empty()) require_one_owner(wire_.owner, owner);
  wire_.owner = std::move(owner);
  slots_in_wire_ = !wire.empty();
  wire_op_ = wire;
}

void Op::set_spliced_wire_op(WireOp own, std::shared_ptr<const WireOpShell> shell) {
  own.spliced = true;
  set_wire_op(own, std::move(shell));
}

std::optional<WireRuns> Op::unchanged_wire_runs() const {
  // Slot and attribute edits drop wire_op_ (own_slots, mutable_attrs); the
  // public fields are compared with what the bytes say.
  if (wire_op_.empty() || type != wire_type() || is_target != wire_op_.is_target ||
      is_target_explicit != wire_op_.is_target_explicit || !unknown_fields.empty())
    return std::nullopt;
  return wire_runs();
}

std::optional<std::string_view> Op::unchanged_wire_bytes() const {
  if (wire_op_.spliced) return std::nullopt;
  const std::optional<WireRuns> runs = unchanged_wire_runs();
  if (!runs) return std::nullopt;
  return runs->runs[0];
}

// A copy decodes nothing: an op still holding bytes shares them, and one
// holding its own lists gets copies of them.
Op::Op(const Op& other)
    : type(other.type), is_target(other.is_target),
      is_target_explicit(other.is_target_explicit), slots_in_wire_(other.slots_in_wire_),
      unknown_fields(other.unknown_fields), wire_op_(other.wire_op_), wire_(other.wire_) {
  if (!slots_in_wire_)
    if (const SlotLists* lists = other.slots_.load(std::memory_order_acquire))
      slots_ = new SlotLists(*lists);
  if (wire_.empty())
    if (const auto* list = other.attrs_.load(std::memory_order_acquire))
      attrs_ = new std::vector<NamedAttribute>(*list);
}

Op::Op(Op&& other) noexcept
    : type(std::move(other.type)), is_target(other.is_target),
      is_target_explicit(other.is_target_explicit),
      slots_in_wire_(std::exchange(other.slots_in_wire_, false)),
      unknown_fields(std::move(other.unknown_fields)),
      slots_(other.slots_.exchange(nullptr, std::memory_order_acq_rel)),
      attrs_(other.attrs_.exchange(nullptr, std::memory_order_acq_rel)),
      wire_op_(std::exchange(other.wire_op_, {})), wire_(std::exchange(other.wire_, {})) {}

Op& Op::operator=(const Op& other) {
  if (this != &other) *this = Op(other);
  return *this;
}

Op& Op::operator=(Op&& other) noexcept {
  if (this == &other) return *this;
  type = std::move(other.type);
  is_target = other.is_target;
  is_target_explicit = other.is_target_explicit;
  unknown_fields = std::move(other.unknown_fields);
  drop_lists();
  slots_.store(other.slots_.exchange(nullptr, std::memory_order_acq_rel),
               std::memory_order_release);
  attrs_.store(other.attrs_.exchange(nullptr, std::memory_order_acq_rel),
               std::memory_order_release);
  slots_in_wire_ = std::exchange(other.slots_in_wire_, false);
  wire_op_ = std::exchange(other.wire_op_, {});
  wire_ = std::exchange(other.wire_, {});
  return *this;
}

Op::~Op() { drop_lists(); }

void Op::drop_lists() {
  delete attrs_.exchange(nullptr, std::memory_order_acq_rel);
  delete slots_.exchange(nullptr, std::memory_order_acq_rel);
}

const std::vector<NamedAttribute>& Op::attrs() const {
  if (const auto* list = attrs_.load(std::memory_order_acquire)) return *list;
  if (wire_.empty()) return kNoAttrs;
  // Several threads may decode at once; the first to publish wins and the
  // others drop their copy.
  auto mine = std::make_unique<std::vector<NamedAttribute>>(decode_wire_attrs(wire_));
  std::vector<NamedAttribute>* expected = nullptr;
  if (attrs_.compare_exchange_strong(expected, mine.get(), std::memory_order_acq_rel,
                                     std::memory_order_acquire))
    return *mine.release();
  return *expected;
}

std::vector<NamedAttribute>& Op::mutable_attrs() {
  if (!wire_.empty() && !attrs_.load(std::memory_order_acquire))
    attrs_.store(new std::vector<NamedAttribute>(decode_wire_attrs(wire_)),
                 std::memory_order_release);
  // The op is no longer the bytes it was read from: its slots are decoded
  // (own_slots) while the owner still keeps those bytes, then it goes.
  if (!wire_op_.empty()) own_slots();
  wire_ = {};
  if (!attrs_.load(std::memory_order_relaxed)) attrs_.store(new std::vector<NamedAttribute>);
  return *attrs_.load(std::memory_order_relaxed);
}

const Attribute* Op::attr(std::string_view name) const {
  for (const NamedAttribute& a : attrs())
    if (a.name == name) return &a.value;
  return nullptr;
}

std::optional<Attribute> Op::attr_value(std::string_view name) const {
  if (wire_.empty() || attrs_.load(std::memory_order_acquire)) {
    const Attribute* a = attr(name);
    return a ? std::optional<Attribute>(*a) : std::nullopt;
  }
  return decode_wire_attr(wire_, name);
}

bool Op::has_attr(std::string_view name) const {
  if (wire_.empty()) return attr(name) != nullptr;
  return has_wire_attr(wire_, name);
}

void Op::set_attr(std::string_view name, Attribute value) {
  std::vector<NamedAttribute>& list = mutable_attrs();
  for (NamedAttribute& a : list) {
    if (a.name == name) {
      a.value = std::move(value);
      return;
    }
  }
  list.push_back(NamedAttribute{std::string(name), std::move(value)});
}

bool Op::remove_attr(std::string_view name) {
  std::vector<NamedAttribute>& list = mutable_attrs();
  auto it = std::find_if(list.begin(), list.end(),
                         [&](const NamedAttribute& a) { return a.name == name; });
  if (it == list.end()) return false;
  list.erase(it);
  return true;
}

void Op::set_wire_attrs(WireAttrs wire) {
  delete attrs_.exchange(nullptr, std::memory_order_acq_rel);
  // While the op keeps its OpDesc as bytes, its owner stays (set_wire_op).
  if (!wire_op_.empty()) {
    if (wire.owner) require_one_owner(wire.owner, wire_.owner);
    wire.owner = std::move(wire_.owner);
  }
  wire_ = std::move(wire);
}

bool Op::operator==(const Op& other) const {
  if (type != other.type || slots() != other.slots() ||
      is_target != other.is_target || is_target_explicit != other.is_target_explicit ||
      unknown_fields != other.unknown_fields)
    return false;
  // The same bytes are the same attributes; otherwise compare the values.
  if (!wire_.empty() && !other.wire_.empty() && wire_.fields == other.wire_.fields &&
      wire_.count == other.wire_.count)
    return true;
  return attrs() == other.attrs();
}

}  // namespace ctp
