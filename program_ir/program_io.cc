#include "program_ir/program_io.h"

#include <memory>

#include "program_ir/atomic_file.h"
#include "program_ir/json_io.h"
#include "program_ir/mapped_file.h"
#include "program_ir/proto_io.h"
#include "program_ir/wire_format.h"

namespace ctp {
namespace {

bool is_json_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Whether the top level of `bytes` is a sequence of well-formed fields with
// ProgramDesc's numbers and wire types (cheap: nested messages are skipped).
bool top_level_is_program_desc(std::string_view bytes) {
  try {
    wire::Reader r(bytes, 0);
    while (!r.done()) {
      std::size_t start = r.position();
      wire::Tag tag = r.read_tag();
      if (tag.field >= 1 && tag.field <= 5 && tag.type != wire::WireType::LengthDelimited)
        return false;
      r.skip_field(tag, start);
    }
    return true;
  } catch (const wire::WireFault&) {
    return false;
  }
}

// Protobuf's tags and lengths are mostly control bytes; text has none.
bool looks_like_text(std::string_view bytes) {
  std::string_view head = bytes.substr(0, 64);
  for (char c : head) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 && !is_json_space(c)) return false;
  }
  return true;
}

}  // namespace

ProgramFormat detect_program_format(std::string_view bytes) {
  // A UTF-8 byte order mark, which some editors write and JSON readers skip.
  std::size_t i = bytes.starts_with("\xEF\xBB\xBF") ? 3 : 0;
  while (i < bytes.size() && is_json_space(bytes[i])) ++i;
  if (i == bytes.size() || bytes[i] != '{') return ProgramFormat::Proto;
  if (i == 1 && bytes[0] == '\n' && top_level_is_program_desc(bytes)) return ProgramFormat::Proto;
  return ProgramFormat::Json;
}

namespace {

// parse_program; a protobuf program's ops keep views of `bytes` when
// `owner` keeps them alive (parse_program_proto), and its pages go back
// behind the read when `mapped` is the file `bytes` are.
Program parse_program_owned(std::string_view bytes, const std::string& source,
                            std::shared_ptr<const void> owner, const MappedFile* mapped = nullptr) {
  std::size_t first = 0;
  while (first < bytes.size() && is_json_space(bytes[first])) ++first;
  if (first == bytes.size())
    throw Error(SourceLocation{.source = source}, "empty input, not a program");
  if (detect_program_format(bytes) == ProgramFormat::Json)
    return parse_program_json(bytes, source);
  try {
    // `owner` is copied, not moved: the message below still reads `bytes`.
    return owner ? parse_program_proto(bytes, source,
                                       ProtoReadOptions{.owner = owner, .mapped = mapped})
                 : parse_program_proto(bytes, source);
  } catch (const Error& e) {
    // Text that is not a JSON object fails as protobuf; say what was expected.
    if (looks_like_text(bytes))
      throw Error(e.place(), e.message() + " (the input is neither protobuf nor a JSON program, "
                                           "which starts with '{')");
    throw;
  }
}

}  // namespace

Program parse_program(std::string_view bytes, const std::string& source) {
  return parse_program_owned(bytes, source, nullptr);
}

MappedProgram load_program_mapped(const std::string& path) {
  auto file = std::make_shared<const MappedFile>(path);
  // The program's ops keep views of the mapped bytes (and the mapping alive)
  // instead of copies of them: a large program then costs little more memory
  // than its file, and an op nothing changes is written back as it came.
  const std::string_view bytes = file->bytes();
  // Its pages go back behind the read (ProtoReadOptions::mapped).
  Program program = parse_program_owned(bytes, path, file, file.get());
  return {std::move(program), std::move(file)};
}

Program load_program_file(const std::string& path) {
  return load_program_mapped(path).program;
}

std::string serialize_program(const Program& program, ProgramFormat format) {
  return format == ProgramFormat::Json ? program_to_json(program)
                                       : serialize_program_proto(program);
}

}  // namespace ctp
