// libFuzzer target: the same bytes through ctp's protobuf loader and through
// libprotobuf (classes generated from program_ir/framework.proto under
// another package, tests/libprotobuf/). Whatever ctp reads, libprotobuf must
// read too, as the same message (field by field, presence included), and
// ctp's output must read in libprotobuf as that message again. Where the
// input is libprotobuf's own (canonical) encoding, ctp must write it back
// byte for byte. ctp may refuse what libprotobuf reads (it checks more: an
// attr's value of another type, a var declared twice, ...), never the
// reverse.
#include <google/protobuf/stubs/logging.h>

#include "fuzz/fuzz_support.h"
#include "tests/libprotobuf/program_compare.h"

// libprotobuf logs every string field that is not UTF-8; Paddle's are
// proto2 strings, which may hold any bytes, so the log is only noise here.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace ctp;
  namespace check = libprotobuf_check;
  const std::string_view bytes = fuzz::as_view(data, size);
  Program program;
  try {
    program = parse_program_proto(bytes, "fuzz.pb");
  } catch (const Error&) {
    return 0;
  }
  check::pb::ProgramDesc message;
  fuzz::require(check::parse(bytes, message), "ctp read bytes that libprotobuf refuses");
  const std::string diff = check::difference(program, message);
  if (!diff.empty()) std::fprintf(stderr, "ctp fuzz: %s\n", diff.c_str());
  fuzz::require(diff.empty(), "ctp and libprotobuf read different programs");

  const std::string written = serialize_program_proto(program);
  check::pb::ProgramDesc again;
  fuzz::require(check::parse(written, again), "libprotobuf cannot read what ctp wrote");
  const std::string canonical = message.SerializeAsString();
  fuzz::require(again.SerializeAsString() == canonical,
                "ctp wrote another message than it read");
  if (bytes == canonical)
    fuzz::require(written == canonical, "ctp changed the bytes of a canonical encoding");
  // Read keeping the bytes (load_program_file's way), unchanged ops are
  // written back as they came: libprotobuf must read the same message.
  const std::string written_owned =
      serialize_program_proto(fuzz::check_owned_read(bytes, program));
  check::pb::ProgramDesc owned;
  fuzz::require(check::parse(written_owned, owned), "libprotobuf cannot read the owned write");
  fuzz::require(owned.SerializeAsString() == canonical,
                "the owned read wrote another message than it read");
  return 0;
}
