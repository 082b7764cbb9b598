// Checking ctp's wire code against libprotobuf (the tests and
// fuzz/fuzz_proto_vs_libprotobuf.cc): classes generated from
// program_ir/framework.proto under the package ctp_check.framework, and a
// comparison of a ctp Program with such a message, field by field, presence
// included.
#pragma once
#include <string>
#include <string_view>

#include "ctp_check_framework.pb.h"
#include "program_ir/program.h"

namespace ctp::libprotobuf_check {

namespace pb = ::ctp_check::framework;

// libprotobuf's reading of `bytes`: false when it does not parse or lacks a
// required field.
bool parse(std::string_view bytes, pb::ProgramDesc& out);

// The first place where `program` and `message` hold different things,
// described ("block 0, var 'x': persistable: ctp false/absent, libprotobuf
// false/set"), or "" when they hold the same program. Fields ctp keeps as
// bytes (unknown fields, SCALAR values, the op_compatible_map) are compared
// as libprotobuf reads those bytes.
std::string difference(const Program& program, const pb::ProgramDesc& message);

}  // namespace ctp::libprotobuf_check
