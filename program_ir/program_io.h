// Loading a program from bytes or a file in either of its exchange formats,
// told apart by content, and writing it in a chosen one.
#pragma once
#include <memory>
#include <string>
#include <string_view>

#include "program_ir/mapped_file.h"
#include "program_ir/program.h"

namespace ctp {

enum class ProgramFormat { Proto, Json };

// JSON when the first byte that is not JSON whitespace (after a UTF-8 byte
// order mark, if any) is '{'. A protobuf
// ProgramDesc can begin with the same two bytes as "\n{" (its first block
// being 123 bytes long); such input counts as protobuf when its top-level
// fields parse as ProgramDesc's and fill it exactly.
ProgramFormat detect_program_format(std::string_view bytes);

// Parses `bytes` in the detected format; `source` names the input in error
// messages. Empty input is an error (rather than a program without blocks).
Program parse_program(std::string_view bytes, const std::string& source);
// Reads and parses a file (ctp::read_file); errors name the path.
Program load_program_file(const std::string& path);
// The same, with the mapped file the program's ops and vars view (a caller
// may give its pages back between uses: MappedFile::release).
struct MappedProgram {
  Program program;
  std::shared_ptr<const MappedFile> file;
};
MappedProgram load_program_mapped(const std::string& path);

std::string serialize_program(const Program& program, ProgramFormat format);

}  // namespace ctp
