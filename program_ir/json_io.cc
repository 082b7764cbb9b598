// Reading ctp's JSON form as a stream of parser events, so a million-op
// program never exists as a JSON tree: ops are built directly from the
// events (they dominate every program), each var is collected as a small
// JSON value and converted as soon as it is complete (json_convert.cc), and
// the blocks' and program's own few fields likewise. The handler also
// enforces the nesting limit and rejects duplicate keys, naming the path.
#include <memory>
#include <unordered_set>
#include <vector>

#include "program_ir/json_convert.h"
#include "program_ir/json_encoding.h"
#include "program_ir/json_io.h"

namespace ctp {
namespace {

using json_convert::Converter;
using json_convert::JPath;
using json_convert::JsonPlace;
using json_convert::Json;

// Objects larger than this check for duplicate keys with a hash set instead
// of scanning, so a hostile object cannot make parsing quadratic.
constexpr std::size_t kLinearKeyCheck = 16;

// The members of an op object and of an attribute object.
enum OpKey : uint32_t { kType = 1, kInputs = 2, kOutputs = 4, kAttrs = 8, kIsTarget = 16,
                        kUnknownFields = 32 };
enum AttrKey : uint32_t { kAttrType = 1, kAttrValue = 2 };

std::string kind_of_container(bool is_object) { return is_object ? "an object" : "an array"; }

class ProgramSax {
 public:
  ProgramSax(std::string_view text, const std::string& source)
      : text_(text), convert_(source), source_(source) {}

  Program take() { return std::move(program_); }

  // --- nlohmann's SAX interface ---
  bool null() { return scalar(Json(nullptr)); }
  bool boolean(bool v) { return scalar(Json(v)); }
  bool number_integer(Json::number_integer_t v) { return scalar(Json(v)); }
  bool number_unsigned(Json::number_unsigned_t v) { return scalar(Json(v)); }
  bool number_float(Json::number_float_t v, const std::string&) { return scalar(Json(v)); }
  bool string(std::string& v) { return scalar(Json(std::move(v))); }
  bool binary(Json::binary_t&) { return scalar(Json()); }  // JSON text has none

  bool start_object(std::size_t) { return start_container(true); }
  bool start_array(std::size_t) { return start_container(false); }

  bool key(std::string& name) {
    Frame& top = frames_.back();
    switch (top.role) {
      case Role::Op: top.key = std::move(name); return op_key(top);
      case Role::Attr: top.key = std::move(name); return attr_key(top);
      case Role::Slots:
        check_unique(top, name, *slots_, [](const Slot& s) -> const std::string& { return s.name; });
        top.key = std::move(name);
        return true;
      case Role::Attrs:
        check_unique(top, name, op_.attrs(),
                     [](const NamedAttribute& a) -> const std::string& { return a.name; });
        top.key = std::move(name);
        return true;
      default: break;
    }
    auto& object = top.value->get_ref<Json::object_t&>();
    check_unique(top, name, object,
                 [](const auto& member) -> const std::string& { return member.first; });
    // Appended directly: the members are unique already, and ordered_map's
    // own insertion would search them again.
    object.emplace_back(std::move(name), Json());
    return true;
  }

  bool end_object() {
    const Frame& top = frames_.back();
    const Role role = top.role;
    if (role == Role::Attr) finish_attr();
    if (role == Role::Op && !(top.seen & kType)) convert_.fail(path(), "op has no \"type\"");
    if (role == Role::Op && (top.seen & kUnknownFields)) finish_op_unknown_fields();
    frames_.pop_back();
    switch (role) {
      case Role::Op:
        program_.blocks.back().append_op(std::move(op_));
        op_ = Op();
        break;
      case Role::VarElement: finish_var(); break;
      case Role::Block: finish_block(); break;
      case Role::Root: convert_.program_fields(root_, program_); break;
      default: break;
    }
    return true;
  }

  bool end_array() {
    frames_.pop_back();
    return true;
  }

  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& ex) {
    // nlohmann's message is "[json.exception.parse_error.101] parse error at
    // line L, column C: DETAIL"; ctp reports the position itself.
    std::string detail = ex.what();
    if (auto at = detail.find("column "); at != std::string::npos) {
      if (auto colon = detail.find(": ", at); colon != std::string::npos)
        detail = detail.substr(colon + 2);
    } else if (detail.starts_with("[json.exception.")) {
      // Other errors (a number too large) are "[json.exception.ID] DETAIL".
      if (auto close = detail.find("] "); close != std::string::npos)
        detail = detail.substr(close + 2);
    }
    // `position` counts the characters read, the offending one included.
    std::size_t line = 1, column = 1;
    const std::size_t end = std::min(position > 0 ? position - 1 : 0, text_.size());
    for (std::size_t i = 0; i < end; ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    throw Error(SourceLocation{.source = source_,
                               .line = static_cast<int64_t>(line),
                               .column = static_cast<int64_t>(column)},
                detail);
  }

 private:
  // What an open container is. Root, Block, VarElement and Nested are
  // collected as JSON values; the others are read straight into the IR.
  enum class Role { Root, Blocks, Block, Vars, Ops, VarElement, Op, Slots, SlotArgs, Attrs,
                    Attr, Nested };

  struct Frame {
    Role role;
    Json* value = nullptr;  // the container being collected, if any
    std::size_t count = 0;  // elements started so far, for arrays
    std::string key;        // the current member, for objects read directly
    uint32_t seen = 0;      // the fixed members seen so far (OpKey, AttrKey)
    std::unique_ptr<std::unordered_set<std::string>> keys;  // large objects only
  };

  static bool is_object(const Frame& f) {
    switch (f.role) {
      case Role::Blocks: case Role::Vars: case Role::Ops: case Role::SlotArgs: return false;
      case Role::Nested: return f.value->is_object();
      default: return true;
    }
  }

  static const std::string& last_key(const Frame& f) {
    return f.value ? f.value->get_ref<const Json::object_t&>().back().first : f.key;
  }

  // The place of the innermost open container.
  JsonPlace path() const {
    JsonPlace p;
    for (std::size_t i = 1; i < frames_.size(); ++i) {
      const Frame& parent = frames_[i - 1];
      if (is_object(parent))
        p.key(last_key(parent));
      else
        p.index(static_cast<long>(parent.count) - 1);
    }
    return p;
  }
  // The place of the value now arriving in the innermost container.
  JsonPlace value_path() const {
    JsonPlace p = path();
    const Frame& top = frames_.back();
    if (is_object(top))
      p.key(last_key(top));
    else
      p.index(static_cast<long>(top.count) - 1);
    return p;
  }

  template <typename Items, typename Name>
  void check_unique(Frame& top, const std::string& name, const Items& items, Name&& name_of) {
    bool repeated = false;
    if (items.size() < kLinearKeyCheck) {
      for (const auto& item : items) repeated |= name_of(item) == name;
    } else {
      if (!top.keys) {
        top.keys = std::make_unique<std::unordered_set<std::string>>();
        for (const auto& item : items) top.keys->insert(name_of(item));
      }
      repeated = !top.keys->insert(name).second;
    }
    if (repeated) duplicate_key(name);
  }

  [[noreturn]] void duplicate_key(const std::string& name) const {
    JsonPlace p = path();
    p.key(name);
    convert_.fail(p, "duplicate key");
  }

  [[noreturn]] void top_level_not_object() const {
    convert_.fail(JsonPlace(), "expected a JSON object at the top level");
  }

  // A member of the fixed set `bit`; `seen` catches it appearing twice.
  void fixed_member(Frame& top, uint32_t bit) {
    if (top.seen & bit) {
      std::string name = std::move(top.key);
      top.key.clear();
      duplicate_key(name);
    }
    top.seen |= bit;
  }

  bool op_key(Frame& top) {
    static constexpr std::pair<std::string_view, uint32_t> kKeys[] = {
        {"type", kType}, {"inputs", kInputs}, {"outputs", kOutputs}, {"attrs", kAttrs},
        {"is_target", kIsTarget}, {"unknown_fields", kUnknownFields}};
    for (const auto& [name, bit] : kKeys) {
      if (top.key == name) {
        fixed_member(top, bit);
        return true;
      }
    }
    convert_.fail(path(), "unknown key '" + top.key + "' in an op");
  }

  bool attr_key(Frame& top) {
    if (top.key == "type") fixed_member(top, kAttrType);
    else if (top.key == "value") fixed_member(top, kAttrValue);
    else
      convert_.fail(path(), "unknown key '" + top.key +
                                "' (an attribute has \"type\" and \"value\")");
    return true;
  }

  void check_depth() const {
    if (frames_.size() >= kMaxJsonDepth)
      convert_.fail(path(), "nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  }

  [[noreturn]] void expected(const std::string& what, const std::string& got) const {
    convert_.fail(value_path(), "expected " + what + ", got " + got);
  }

  bool start_container(bool object) {
    if (frames_.empty()) {
      if (!object) top_level_not_object();
      root_ = Json::object();
      frames_.push_back(Frame{Role::Root, &root_});
      return true;
    }
    check_depth();
    Frame& top = frames_.back();
    if (!is_object(top)) ++top.count;
    const std::string got = kind_of_container(object);
    switch (top.role) {
      case Role::Blocks:
        if (!object) expected("an object", got);
        program_.blocks.emplace_back();
        block_ = Json::object();
        frames_.push_back(Frame{Role::Block, &block_});
        return true;
      case Role::Vars:
        if (!object) expected("an object", got);
        element_ = Json::object();
        element_.get_ref<Json::object_t&>().reserve(12);
        frames_.push_back(Frame{Role::VarElement, &element_});
        return true;
      case Role::Ops:
        if (!object) expected("an object", got);
        frames_.push_back(Frame{Role::Op});
        return true;
      case Role::Op:
        if (top.key == "inputs" || top.key == "outputs") {
          if (!object) expected("an object", got);
          slots_ = top.key == "inputs" ? &op_.mutable_inputs() : &op_.mutable_outputs();
          frames_.push_back(Frame{Role::Slots});
        } else if (top.key == "attrs") {
          if (!object) expected("an object", got);
          frames_.push_back(Frame{Role::Attrs});
        } else if (top.key == "unknown_fields" && !object) {
          op_unknown_ = Json::array();  // runs, converted when the op ends
          frames_.push_back(Frame{Role::Nested, &op_unknown_});
        } else {
          scalar_member_of_op(top, nullptr, got);
        }
        return true;
      case Role::Slots:
        if (object) expected("an array of var names", got);
        slots_->push_back(Slot{top.key, {}});
        frames_.push_back(Frame{Role::SlotArgs});
        return true;
      case Role::SlotArgs: expected("a string (a var name)", got);
      case Role::Attrs:
        if (!object) expected("an object", got);
        attr_type_.clear();
        attr_value_ = Json();
        frames_.push_back(Frame{Role::Attr});
        return true;
      case Role::Attr:
        if (top.key == "type") expected("a string", got);
        attr_value_ = object ? Json::object() : Json::array();
        frames_.push_back(Frame{Role::Nested, &attr_value_});
        return true;
      default: {
        // Root and block members: "blocks", "vars" and "ops" arrays are
        // streamed and leave an empty array in their parent.
        Role role = Role::Nested;
        if (!object && top.role == Role::Root && last_key(top) == "blocks")
          role = Role::Blocks;
        else if (!object && top.role == Role::Block && last_key(top) == "vars")
          role = Role::Vars;
        else if (!object && top.role == Role::Block && last_key(top) == "ops")
          role = Role::Ops;
        Json* value = place(object ? Json::object() : Json::array());
        frames_.push_back(Frame{role, role == Role::Nested ? value : nullptr});
        return true;
      }
    }
  }

  bool scalar(Json value) {
    if (frames_.empty()) top_level_not_object();
    Frame& top = frames_.back();
    if (!is_object(top)) ++top.count;
    switch (top.role) {
      case Role::Blocks: case Role::Vars: case Role::Ops: case Role::Attrs:
        expected("an object", std::string(json_convert::kind_of(value)));
      case Role::Slots: expected("an array of var names", json_convert::kind_of(value));
      case Role::SlotArgs:
        if (!value.is_string()) expected("a string (a var name)", json_convert::kind_of(value));
        slots_->back().args.push_back(std::move(value.get_ref<std::string&>()));
        return true;
      case Role::Op: scalar_member_of_op(top, &value, {}); return true;
      case Role::Attr:
        if (top.key == "type") {
          if (!value.is_string()) expected("a string", json_convert::kind_of(value));
          attr_type_ = std::move(value.get_ref<std::string&>());
        } else {
          attr_value_ = std::move(value);
        }
        return true;
      default: place(std::move(value)); return true;
    }
  }

  // type, is_target and unknown_fields; `value` is null for a container.
  void scalar_member_of_op(const Frame& top, Json* value, const std::string& container) {
    const std::string got = value ? json_convert::kind_of(*value) : container;
    if (top.key == "type") {
      if (!value || !value->is_string()) expected("a string", got);
      op_.type = std::move(value->get_ref<std::string&>());
    } else if (top.key == "is_target") {
      if (!value || !value->is_boolean()) expected("true or false", got);
      op_.is_target = value->get<bool>();
      op_.is_target_explicit = !op_.is_target;
    } else if (top.key == "unknown_fields") {
      if (!value || !value->is_string()) expected("a base64 string or an array of runs", got);
      op_unknown_ = std::move(*value);  // converted when the op ends
    } else {
      expected("an object", got);  // inputs, outputs, attrs
    }
  }

  // Places a value in the innermost collected container; returns where it
  // now lives.
  Json* place(Json value) {
    Json& container = *frames_.back().value;
    if (container.is_array()) {
      container.push_back(std::move(value));
      return &container.back();
    }
    Json& slot = container.get_ref<Json::object_t&>().back().second;
    slot = std::move(value);
    return &slot;
  }

  // Index of the open block and of the open element in its list.
  long block_index() const { return static_cast<long>(frames_[1].count) - 1; }

  void finish_attr() {
    const Frame& attr = frames_.back();
    Frame& attrs = frames_[frames_.size() - 2];
    if (!(attr.seen & kAttrType)) convert_.fail(path(), "attribute has no \"type\"");
    if (!(attr.seen & kAttrValue)) convert_.fail(path(), "attribute has no \"value\"");
    JPath root;
    JPath blocks = root.member("blocks");
    JPath block = blocks.at(block_index());
    JPath ops = block.member("ops");
    JPath op = ops.at(static_cast<long>(frames_[frames_.size() - 4].count) - 1);
    JPath op_attrs = op.member("attrs");
    JPath at = op_attrs.member(attrs.key);
    Attribute value = convert_.attribute(attr_type_, at.member("type"), attr_value_, at);
    op_.mutable_attrs().push_back(NamedAttribute{std::move(attrs.key), std::move(value)});
  }

  void finish_op_unknown_fields() {
    JPath root;
    JPath blocks = root.member("blocks");
    JPath block = blocks.at(block_index());
    JPath ops = block.member("ops");
    JPath op = ops.at(static_cast<long>(frames_[frames_.size() - 2].count) - 1);
    op_.unknown_fields = convert_.unknown_fields(op_unknown_, op.member("unknown_fields"),
                                                 {1, 2, 3, 4, 5}, "OpDesc");
    op_unknown_ = Json();
  }

  void finish_var() {
    const long index = static_cast<long>(frames_.back().count) - 1;
    JPath root;
    JPath blocks = root.member("blocks");
    JPath block_at = blocks.at(block_index());
    JPath list_at = block_at.member("vars");
    JPath at = list_at.at(index);
    Block& block = program_.blocks.back();
    const std::size_t before = block.var_count();
    const Var& added = block.get_or_add_var(convert_.var(element_, at));
    if (block.var_count() == before)
      convert_.fail(at, "var '" + added.name + "' is declared twice in the block");
    element_ = Json();
  }

  void finish_block() {
    JPath root;
    JPath blocks = root.member("blocks");
    convert_.block_fields(block_, blocks.at(block_index()), program_.blocks.back());
    block_ = Json();
  }

  std::string_view text_;
  Converter convert_;
  const std::string& source_;
  Program program_;
  std::vector<Frame> frames_;
  Json root_;
  Json block_;    // the open block's own fields
  Json element_;  // the open var
  Op op_;         // the open op
  Json op_unknown_;  // and its "unknown_fields", until it ends
  std::vector<Slot>* slots_ = nullptr;  // the open op's inputs or outputs
  std::string attr_type_;               // the open attribute's "type"
  Json attr_value_;                     // and its "value"
};

}  // namespace

Program parse_program_json(std::string_view text, const std::string& source) {
  ProgramSax sax(text, source);
  Json::sax_parse(text.data(), text.data() + text.size(), &sax);
  return sax.take();
}

}  // namespace ctp
