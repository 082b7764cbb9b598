// Reading ProgramDesc bytes into a Program, straight from the wire (no
// intermediate protobuf objects), so that errors name their place and unknown
// fields keep their exact bytes. VarDesc and OpDesc messages are read by
// proto_var_read.cc and proto_op_read.cc; the writer is in proto_writer.cc.
#include "program_ir/proto_io.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <thread>

#include "program_ir/framework_fields.h"
#include "program_ir/op_compatible_map.h"
#include "program_ir/proto_read_parts.h"
#include "program_ir/wire_read.h"

namespace ctp {
namespace {

using namespace wire_read;
using namespace proto_read;
namespace fl = fields;

// Version.version, when the message has it.
std::optional<int64_t> parse_version(Reader r, const SourceLocation& place) {
  std::optional<int64_t> version;
  guarded(place, [&] {
    for_each_field(r, [&](const Tag& tag, std::size_t start) {
      if (tag.field != fl::version::kVersion) unknown_in(r, tag, start, "Version");
      version = wire::as_int64(read_varint_field(r, tag, start, "version"));
    });
  });
  return version;
}

OpVersionEntry parse_op_version_pair(Reader r, const SourceLocation& place) {
  OpVersionEntry entry;
  bool has_name = false, has_version = false;
  guarded(place, [&] {
    for_each_field(r, [&](const Tag& tag, std::size_t start) {
      if (tag.field == fl::op_version_map::kPairOpName) {
        entry.op_name = read_bytes_field(r, tag, start, "op_name");
        has_name = true;
      } else if (tag.field == fl::op_version_map::kPairOpVersion) {
        Reader version = nested(r, tag, start, "op_version");
        bool has_number = false;
        for_each_field(version, [&](const Tag& inner, std::size_t inner_start) {
          if (inner.field != fl::op_version_map::kOpVersionVersion)
            unknown_in(version, inner, inner_start, "OpVersion");
          entry.version =
              wire::as_int32(read_varint_field(version, inner, inner_start, "version"));
          has_number = true;
        });
        if (!has_number) fail(place, "OpVersion has no version (field 1)");
        has_version = true;
      } else {
        unknown_in(r, tag, start, "OpVersionPair");
      }
    });
  });
  if (!has_name) fail(place, "OpVersionPair has no op_name (field 1)");
  if (!has_version) fail(place, "OpVersionPair '" + printable(entry.op_name) + "' has no op_version (field 2)");
  return entry;
}

void parse_op_version_map(Reader r, const SourceLocation& place, std::vector<OpVersionEntry>& out) {
  guarded(place, [&] {
    for_each_field(r, [&](const Tag& tag, std::size_t start) {
      if (tag.field != fl::op_version_map::kPair) unknown_in(r, tag, start, "OpVersionMap");
      out.push_back(parse_op_version_pair(nested(r, tag, start, "pair"), place));
    });
  });
}

Program parse_program(std::string_view bytes, const std::string& source,
                      const InputOwner& input, unsigned threads) {
  Program program;
  SourceLocation place{.source = source};
  Reader r(bytes, 0);
  std::size_t known = 0;
  guarded(place, [&] {
    for_each_field(r, [&](const Tag& tag, std::size_t start) {
      switch (tag.field) {
        case fl::program::kBlocks: {
          place.block = static_cast<int64_t>(program.blocks.size());
          program.blocks.push_back(
              parse_block(nested_at(r, tag, start, "blocks", place), place, input, threads));
          place.block = -1;
          break;
        }
        case fl::program::kOpCompatibleMap: {
          std::string_view map = read_bytes_field(r, tag, start, "op_compatible_map");
          SourceLocation map_place = place;
          map_place.part = "op_compatible_map";
          guarded(map_place, [&] { decode_op_compatible_map(map, r.last_payload_offset()); });
          // Messages merge; for raw bytes that is appending.
          if (!program.op_compatible_map) program.op_compatible_map.emplace();
          program.op_compatible_map->append(map);
          break;
        }
        case fl::program::kVersion: {
          place.part = "version";
          // A second Version message merges into the first.
          if (auto number = parse_version(nested(r, tag, start, "version"), place)) {
            program.version = *number;
            program.version_number_absent = false;
          } else if (!program.version) {
            program.version = 0;
            program.version_number_absent = true;
          }
          place.part.clear();
          break;
        }
        case fl::program::kOpVersionMap: {
          place.part = "op_version_map";
          if (!program.op_version_map) program.op_version_map.emplace();
          parse_op_version_map(nested(r, tag, start, "op_version_map"), place,
                               *program.op_version_map);
          place.part.clear();
          break;
        }
        default: program.unknown_fields.append(known, r.skip_field(tag, start)); return;
      }
      ++known;
    });
    program.unknown_fields.close(known);
  });
  return program;
}

}  // namespace

Program parse_program_proto(std::string_view bytes, const std::string& source) {
  return parse_program_proto(bytes, source, ProtoReadOptions{});
}

Program parse_program_proto(std::string_view bytes, const std::string& source,
                            const ProtoReadOptions& options) {
  unsigned threads = options.threads;
  if (threads == 0) threads = std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
  return parse_program(bytes, source, InputOwner{options.owner, options.mapped}, threads);
}

}  // namespace ctp
