#include "program_ir/source_location.h"

#include <ostream>

namespace ctp {
namespace {

void add(std::string& out, std::string_view separator, const std::string& part) {
  if (part.empty()) return;
  if (!out.empty()) out += separator;
  out += part;
}

// "var 'x'", or "var 3" when the name is not known (yet).
std::string named(std::string_view what, int64_t index, const std::string& name) {
  std::string out(what);
  if (!name.empty()) return out + " '" + printable(name) + "'";
  return index >= 0 ? out + " " + std::to_string(index) : out;
}

std::string op_text(const SourceLocation& at) {
  const std::string type = at.op_type.empty() ? "" : "'" + printable(at.op_type) + "'";
  if (at.op_count > 1 && at.op >= 0)
    return "ops " + std::to_string(at.op) + " to " + std::to_string(at.op + at.op_count - 1) +
           " (" + std::to_string(at.op_count) + (type.empty() ? "" : " " + type) +
           " run as one batch)";
  std::string out = "op";
  if (at.op >= 0) out += " " + std::to_string(at.op);
  return type.empty() ? out : out + " " + type;
}

// Where in the document: a text position, the path, or block .. attribute.
std::string document_place(const SourceLocation& at) {
  std::string out;
  if (at.line > 0)
    add(out, ", ", "line " + std::to_string(at.line) + ", column " + std::to_string(at.column));
  if (!at.path.empty()) {
    add(out, ", ", at.path);
    return out;
  }
  if (at.has_block()) add(out, ", ", "block " + std::to_string(at.block));
  if (at.has_op()) add(out, ", ", op_text(at));
  if (at.has_var()) add(out, ", ", named("var", at.var, at.var_name));
  if (at.has_slot()) add(out, ", ", named(at.slot_side, at.slot, at.slot_name));
  if (at.has_attr()) add(out, ", ", named("attr", at.attr, at.attr_name));
  return out;
}

// "rank 1 of 4, ring 0 (gloo)".
std::string run_place(const SourceLocation& at) {
  std::string out;
  if (at.rank >= 0)
    out = "rank " + std::to_string(at.rank) +
          (at.nranks >= 0 ? " of " + std::to_string(at.nranks) : "");
  if (at.ring >= 0) add(out, ", ", "ring " + std::to_string(at.ring));
  if (!out.empty() && !at.backend.empty()) out += " (" + at.backend + ")";
  return out;
}

}  // namespace

std::string printable(std::string_view name) {
  constexpr std::size_t kMax = 80;
  std::size_t n = name.size();
  if (n > kMax) {
    n = kMax;
    while (n > 0 && (static_cast<unsigned char>(name[n]) & 0xc0) == 0x80) --n;
  }
  std::string out;
  out.reserve(n + 8);
  for (char c : name.substr(0, n)) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    } else {
      out += c;
    }
  }
  if (n < name.size()) out += "...";
  return out;
}

std::ostream& operator<<(std::ostream& os, const SourceLocation& at) {
  return os << (at.empty() ? std::string("(no place)") : at.to_string());
}

bool SourceLocation::empty() const { return *this == SourceLocation{}; }

std::string SourceLocation::to_string() const {
  std::string out;
  add(out, ": ", source);
  add(out, ": ", pass);
  add(out, ": ", part);
  add(out, ": ", document_place(*this));
  add(out, ": ", run_place(*this));
  add(out, ": ", collective);
  return out;
}

void SourceLocation::fill_from(const SourceLocation& outer) {
  auto fill = [](std::string& mine, const std::string& theirs) {
    if (mine.empty()) mine = theirs;
  };
  fill(source, outer.source);
  fill(pass, outer.pass);
  fill(part, outer.part);
  if (line == 0) {
    line = outer.line;
    column = outer.column;
  }
  fill(path, outer.path);
  // A place that names its op by type alone (IR code that knows the op but
  // not where it is) is the same op as `outer`'s of that type.
  const bool op_by_type_only = op < 0 && !has_block() && op_type == outer.op_type;
  if (!has_op() || op_by_type_only) {
    if (!has_block()) block = outer.block;
    if (block == outer.block) {
      op = outer.op;
      op_count = outer.op_count;
      op_type = outer.op_type;
      if (!has_var()) {
        var = outer.var;
        var_name = outer.var_name;
      }
      if (!has_slot()) {
        slot_side = outer.slot_side;
        slot = outer.slot;
        slot_name = outer.slot_name;
      }
      if (!has_attr()) {
        attr = outer.attr;
        attr_name = outer.attr_name;
      }
    }
  }
  if (!has_rank()) {
    rank = outer.rank;
    nranks = outer.nranks;
    ring = outer.ring;
    backend = outer.backend;
  }
  fill(collective, outer.collective);
}

}  // namespace ctp
