// Turning parsed pieces of ctp's JSON form (one var, one attribute value, a
// block's or the program's own fields) into the IR, with errors that name the JSON
// path. json_io.cc streams the document and hands each piece over as soon
// as it is complete.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "program_ir/program.h"
#include "program_ir/source_location.h"

namespace ctp::json_convert {

// Objects keep their members in document order.
using Json = nlohmann::ordered_json;

// A place in a JSON document, built one step (member or element) at a
// time: the path, `blocks[0].ops[3].attrs.scale` (a key that is not a plain
// name, letters, digits, '_', '@', is written `["a.b"]`), and the fields of
// SourceLocation that the path names (block, op, var, slot, attribute).
class JsonPlace {
 public:
  void key(std::string_view name);
  void index(long i);
  const SourceLocation& location() const { return at_; }

 private:
  SourceLocation at_;
  std::string last_key_;  // the step before, when it was a member
  int steps_ = 0;
};

// A JSON path as a chain of links that live on the stack; made into a
// JsonPlace only when an error is reported.
struct JPath {
  const JPath* parent = nullptr;
  std::string_view key;  // a member name, when index < 0
  long index = -1;       // an array index

  JPath member(std::string_view name) const { return JPath{this, name, -1}; }
  JPath at(long i) const { return JPath{this, {}, i}; }
  JsonPlace place() const;
};

// "a number", "an array", ...: what the input had where something else was
// expected.
std::string kind_of(const Json& j);

class Converter {
 public:
  explicit Converter(const std::string& source) : source_(source) {}

  // "prog.json: blocks[0].ops[3]: message".
  [[noreturn]] void fail(const JsonPlace& at, const std::string& message) const;
  [[noreturn]] void fail(const JPath& at, const std::string& message) const {
    fail(at.place(), message);
  }

  // The elements may be moved from.
  // Raw wire fields kept for the protobuf writer, which appends them to their
  // message. They must be well-formed fields that use none of the message's
  // own numbers (`known`): anything else writes a file that does not read back
  // (as ctp or Paddle), e.g. bytes that reuse field 5 of a VarDesc as a string.
  void check_unknown_fields(std::string_view bytes, const JsonPlace& at,
                            std::initializer_list<uint32_t> known, const char* message) const;
  // Unknown fields: a base64 string (all after the known fields) or an
  // array of runs {"after": N, "bytes": base64}, checked as above.
  UnknownFields unknown_fields(Json& j, const JPath& at, std::initializer_list<uint32_t> known,
                               const char* message) const;
  Var var(Json& j, const JPath& at) const;
  // An op attribute from its "type" (a name) and "value" members.
  Attribute attribute(const std::string& type_name, const JPath& type_at, Json& value,
                      const JPath& at) const;
  // idx, parent_idx, forward_block_idx, unknown_fields; the vars and ops
  // were streamed into `block` already and appear here as empty arrays.
  void block_fields(Json& j, const JPath& at, Block& block) const;
  // version, op_version_map, op_compatible_map, unknown_fields; blocks as
  // for block_fields.
  void program_fields(Json& j, Program& program) const;

 private:
  const std::string& source_;
};

}  // namespace ctp::json_convert
