// Reading ctp's JSON form as a stream of parser events: each op and var is
// collected as a small JSON value, converted (json_convert.cc) and dropped,
// so a million-op program never exists as a JSON tree. The handler also
// enforces the nesting limit and rejects duplicate keys, with the path.
#include <memory>
#include <unordered_set>
#include <vector>

#include "program_ir/json_convert.h"
#include "program_ir/json_io.h"

namespace ctp {
namespace {

using json_convert::Converter;
using json_convert::JPath;
using json_convert::Json;

// Objects larger than this check for duplicate keys with a hash set instead
// of scanning, so a hostile object cannot make parsing quadratic.
constexpr std::size_t kLinearKeyCheck = 16;

class ProgramSax {
 public:
  ProgramSax(std::string_view text, const std::string& source)
      : text_(text), convert_(source), source_(source) {}

  Program take() { return std::move(program_); }

  // --- nlohmann's SAX interface ---
  bool null() { return add_scalar(Json(nullptr)); }
  bool boolean(bool v) { return add_scalar(Json(v)); }
  bool number_integer(Json::number_integer_t v) { return add_scalar(Json(v)); }
  bool number_unsigned(Json::number_unsigned_t v) { return add_scalar(Json(v)); }
  bool number_float(Json::number_float_t v, const std::string&) { return add_scalar(Json(v)); }
  bool string(std::string& v) { return add_scalar(Json(std::move(v))); }
  bool binary(Json::binary_t&) { return add_scalar(Json()); }  // JSON text has none

  bool start_object(std::size_t) {
    if (frames_.empty()) {
      root_ = Json::object();
      frames_.push_back(Frame{Role::Root, &root_});
      return true;
    }
    check_depth();
    Frame& top = frames_.back();
    if (top.role == Role::Blocks) {
      ++top.count;
      program_.blocks.emplace_back();
      block_ = Json::object();
      frames_.push_back(Frame{Role::Block, &block_});
    } else if (top.role == Role::Vars || top.role == Role::Ops) {
      ++top.count;
      element_ = Json::object();
      frames_.push_back(Frame{Role::Element, &element_});
    } else {
      Json* value = add_value(Json::object());
      frames_.push_back(Frame{Role::Nested, value});
    }
    return true;
  }

  bool key(std::string& name) {
    Frame& top = frames_.back();
    auto& object = top.value->get_ref<Json::object_t&>();
    if (object.size() < kLinearKeyCheck) {
      for (const auto& member : object)
        if (member.first == name) duplicate_key(name);
    } else {
      if (!top.keys) {
        top.keys = std::make_unique<std::unordered_set<std::string>>();
        for (const auto& member : object) top.keys->insert(member.first);
      }
      if (!top.keys->insert(name).second) duplicate_key(name);
    }
    // Appended directly: the members are unique already, and ordered_map's
    // own insertion would search them again.
    object.emplace_back(std::move(name), Json());
    return true;
  }

  bool end_object() {
    const Role role = frames_.back().role;
    frames_.pop_back();
    if (role == Role::Element) finish_element();
    else if (role == Role::Block) finish_block();
    else if (role == Role::Root) convert_.program_fields(root_, program_);
    return true;
  }

  bool start_array(std::size_t) {
    if (frames_.empty()) top_level_not_object();
    check_depth();
    Frame& top = frames_.back();
    Role role = Role::Nested;
    if (top.role == Role::Root && last_key(top) == "blocks") role = Role::Blocks;
    else if (top.role == Role::Block && last_key(top) == "vars") role = Role::Vars;
    else if (top.role == Role::Block && last_key(top) == "ops") role = Role::Ops;
    Json* value = add_value(Json::array());
    // Streamed arrays leave an empty array in their parent: the elements
    // go straight into the program.
    frames_.push_back(Frame{role, role == Role::Nested ? value : nullptr});
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
    if (auto at = detail.find("column "); at != std::string::npos)
      if (auto colon = detail.find(": ", at); colon != std::string::npos)
        detail = detail.substr(colon + 2);
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
    throw Error(source_ + ": line " + std::to_string(line) + ", column " +
                std::to_string(column) + ": " + detail);
  }

 private:
  // What an open container is, for the ones the program is streamed from.
  enum class Role { Root, Blocks, Block, Vars, Ops, Element, Nested };

  struct Frame {
    Role role;
    Json* value;            // the container being filled; null for streamed arrays
    std::size_t count = 0;  // elements started so far, for arrays
    std::unique_ptr<std::unordered_set<std::string>> keys;  // large objects only
  };

  static const std::string& last_key(const Frame& f) {
    return f.value->get_ref<const Json::object_t&>().back().first;
  }

  // The path of the innermost open container, as JPath::str() spells it.
  std::string path() const {
    std::string p;
    for (std::size_t i = 1; i < frames_.size(); ++i) {
      const Frame& parent = frames_[i - 1];
      if (parent.value && parent.value->is_object())
        json_convert::append_path_key(p, last_key(parent));
      else
        json_convert::append_path_index(p, static_cast<long>(parent.count) - 1);
    }
    return p;
  }

  [[noreturn]] void duplicate_key(const std::string& name) const {
    std::string p = path();
    json_convert::append_path_key(p, name);
    convert_.fail(p, "duplicate key");
  }

  [[noreturn]] void top_level_not_object() const {
    convert_.fail(std::string(), "expected a JSON object at the top level");
  }

  void check_depth() const {
    if (frames_.size() >= kMaxJsonDepth)
      convert_.fail(path(), "nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  }

  // Places a value in the innermost container; returns where it now lives.
  Json* add_value(Json value) {
    if (frames_.empty()) top_level_not_object();
    Frame& top = frames_.back();
    if (top.role == Role::Blocks || top.role == Role::Vars || top.role == Role::Ops) {
      std::string p = path();
      json_convert::append_path_index(p, static_cast<long>(top.count));
      convert_.fail(p, "expected an object, got " + std::string(value.type_name()));
    }
    Json& container = *top.value;
    if (container.is_array()) {
      ++top.count;
      container.push_back(std::move(value));
      return &container.back();
    }
    Json& slot = container.get_ref<Json::object_t&>().back().second;
    slot = std::move(value);
    return &slot;
  }

  bool add_scalar(Json value) {
    add_value(std::move(value));
    return true;
  }

  void finish_element() {
    const Frame& list = frames_.back();
    const long block_index = static_cast<long>(frames_[1].count) - 1;  // [Root, Blocks, ...]
    const long index = static_cast<long>(list.count) - 1;
    JPath root;
    JPath blocks = root.member("blocks");
    JPath block_at = blocks.at(block_index);
    Block& block = program_.blocks.back();
    if (list.role == Role::Ops) {
      JPath list_at = block_at.member("ops");
      block.append_op(convert_.op(element_, list_at.at(index)));
    } else {
      JPath list_at = block_at.member("vars");
      JPath at = list_at.at(index);
      Var var = convert_.var(element_, at);
      if (block.has_var(var.name))
        convert_.fail(at, "var '" + var.name + "' is declared twice in the block");
      block.add_var(std::move(var));
    }
    element_ = Json();
  }

  void finish_block() {
    JPath root;
    JPath blocks = root.member("blocks");
    convert_.block_fields(block_, blocks.at(static_cast<long>(frames_.back().count) - 1),
                          program_.blocks.back());
    block_ = Json();
  }

  std::string_view text_;
  Converter convert_;
  const std::string& source_;
  Program program_;
  std::vector<Frame> frames_;
  Json root_;
  Json block_;    // the open block's own fields
  Json element_;  // the open op or var
};

}  // namespace

Program parse_program_json(std::string_view text, const std::string& source) {
  ProgramSax sax(text, source);
  Json::sax_parse(text.data(), text.data() + text.size(), &sax);
  return sax.take();
}

}  // namespace ctp
