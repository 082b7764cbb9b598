// The protobuf reader's parsers of VarDesc and OpDesc messages, which
// proto_io.cc's block reader calls (from several threads for a large block:
// each call has its own SourceLocation).
#pragma once
#include <memory>

#include "program_ir/block.h"
#include "program_ir/mapped_file.h"
#include "program_ir/op.h"
#include "program_ir/source_location.h"
#include "program_ir/var.h"
#include "program_ir/wire_format.h"

namespace ctp::proto_read {

// Where the bytes being read live, when something keeps them alive: ops
// then keep views of them (their attributes, and their whole OpDesc) rather
// than copies. Without an owner every op gets copies of its attribute bytes
// and decoded slots.
struct InputOwner {
  std::shared_ptr<const void> owner;
  // Where the input's pages go back behind the read (ProtoReadOptions::mapped).
  const MappedFile* mapped = nullptr;
};

// The parsers share one SourceLocation (wire_read.h): each sets the fields
// of the place it enters, and its caller clears them when it returns.
inline void leave_attr(SourceLocation& place) {
  place.attr = -1;
  place.attr_name.clear();
}

// One VarDesc; malformed bytes raise ctp::Error naming `place`. With
// `name_bytes`, also where the name lies in the input.
Var parse_var(wire::Reader r, SourceLocation& place, std::string_view* name_bytes = nullptr);
// One OpDesc; malformed bytes raise ctp::Error naming `place`.
Op parse_op(wire::Reader r, SourceLocation& place, const InputOwner& input);
// One BlockDesc, its vars and ops parsed on `threads` threads when it has
// many (proto_block_read.cc).
Block parse_block(wire::Reader r, SourceLocation& place, const InputOwner& input,
                  unsigned threads);

}  // namespace ctp::proto_read
