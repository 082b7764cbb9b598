// Shared by the libFuzzer targets: the checks every loaded program must pass,
// and how a transpile input is cut out of the fuzzer's bytes.
//
// A target may only end an input in two ways: success, or ctp::Error (bad
// input, reported). Any other exception escapes to libFuzzer, which reports
// it as a crash, as are sanitizer reports, aborts and timeouts.
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "program_ir/dot_io.h"
#include "program_ir/error.h"
#include "program_ir/json_io.h"
#include "program_ir/op_packing.h"
#include "program_ir/program.h"
#include "program_ir/proto_io.h"
#include "program_ir/text_io.h"
#include "transpilers/options.h"

namespace ctp::fuzz {

[[noreturn]] inline void broken_property(const char* what) {
  std::fprintf(stderr, "ctp fuzz: property violated: %s\n", what);
  std::abort();
}

inline void require(bool ok, const char* what) {
  if (!ok) broken_property(what);
}

inline std::string_view as_view(const uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// `program` with every op's attributes decoded: what it writes is each
// attribute encoded afresh, in the writer's field order and encoding.
inline Program with_attributes_decoded(const Program& program) {
  Program decoded = program;
  for (Block& block : decoded.blocks)
    for (Op& op : block.ops()) op.mutable_attrs();
  return decoded;
}

// Whatever loaded must write and read back to the same bytes in both forms.
// Bytes, not Program::operator==, are compared: a NaN attribute is equal to
// itself on the wire but not as a float.
//
// An op read from protobuf writes its attributes back as the bytes they came
// in (Op::wire_attrs), in whatever field order and varint lengths the input
// used; JSON holds their values only. So the JSON round trip must give the
// bytes of the same program with its attributes encoded afresh (for a file
// that protobuf's own writers made, such as every file of ../shared/realworld,
// those are the file's bytes: the realworld tests check that).
inline void check_round_trips(const Program& program) {
  const std::string proto = serialize_program_proto(program);
  const Program from_proto = parse_program_proto(proto, "round-trip.pb");
  require(serialize_program_proto(from_proto) == proto, "protobuf write/read/write differs");
  const std::string encoded_afresh = serialize_program_proto(with_attributes_decoded(program));
  require(serialize_program_proto(with_attributes_decoded(from_proto)) == encoded_afresh,
          "decoding the attributes read back from protobuf changes them");

  std::string json;
  try {
    json = program_to_json(program);
  } catch (const Error&) {
    return;  // names that are not UTF-8 (legal in protobuf bytes) have no JSON form
  }
  const Program from_json = parse_program_json(json, "round-trip.json");
  require(serialize_program_proto(from_json) == encoded_afresh,
          "JSON write/read changes the program");
  require(program_to_json(from_json) == json, "JSON write/read/write differs");
}

// The same bytes read as load_program_file reads a file, with an owner that
// keeps them alive: each op keeps its OpDesc's bytes (Op::set_wire_op) and
// an op nothing changed is written back as them, in the input's field order.
// Encoded afresh, that program must be the one `copied` (read without an
// owner) is, and what it writes must read back as that program too.
inline Program check_owned_read(std::string_view bytes, const Program& copied) {
  auto owner = std::make_shared<const std::string>(bytes);
  Program owned;
  try {
    owned = parse_program_proto(*owner, "owned.pb", ProtoReadOptions{.owner = owner});
  } catch (const Error&) {
    broken_property("the owned read refuses what the copying read accepted");
  }
  const std::string afresh = serialize_program_proto(with_attributes_decoded(copied));
  require(serialize_program_proto(with_attributes_decoded(owned)) == afresh,
          "the owned read gives another program than the copying read");
  const Program again = parse_program_proto(serialize_program_proto(owned), "owned-again.pb");
  require(serialize_program_proto(with_attributes_decoded(again)) == afresh,
          "what the owned read writes reads back as another program");
  return owned;
}

// Every op packed (packed_op, what a rewrite does with the ops it adds) must
// equal the op and be written as the op is, whatever the op holds.
inline void check_packed_ops(const Program& program) {
  Program packed = program;
  for (Block& block : packed.blocks)
    for (Op& op : block.ops()) {
      Op packed_copy = packed_op(op);
      require(packed_copy == op, "a packed op differs from its source");
      op = std::move(packed_copy);
    }
  require(serialize_program_proto(packed) == serialize_program_proto(program),
          "packed ops are written otherwise than their sources");
}

// The human-readable renderings must accept anything that loaded.
inline void render_everything(const Program& program) {
  volatile std::size_t sink = program_to_text(program).size() + program_to_dot(program).size();
  (void)sink;
}

// A transpile input: a 7-byte header of options, a startup program of the
// length the header gives (none: an empty program), and the main program.
//   byte 0: ranks - 1 (low 3 bits); bit 3: wait_port; bits 4-5: hosts (one
//           for all ranks, two alternating, one per rank, one per two ranks)
//   byte 1: rank, modulo ranks + 1 (== ranks: out of range)
//   byte 2: nrings: 0 unset, else value - 1 (modulo 8)
//   byte 3: current endpoint, modulo ranks + 1 (== ranks: one not listed)
//   byte 4: mode-specific: single_process_multi_thread fuse_allreduce (mod 3),
//           loss_scale (bit 2), gpu_nums (bits 3..5, + 1); multi_thread
//           trans_mode (mod 3), gpu_num (bits 2..5 mod 9, + 1)
//   bytes 5-6: startup length, little-endian
struct TranspileInput {
  TranspileOptions options;
  std::string_view startup;
  std::string_view main;
};

inline constexpr std::size_t kTranspileHeader = 7;

inline bool cut_transpile_input(std::string_view bytes, TranspileInput& in) {
  if (bytes.size() < kTranspileHeader) return false;
  auto byte = [&](std::size_t i) { return static_cast<uint8_t>(bytes[i]); };
  CollectiveOptions& c = in.options.collective;
  const int ranks = 1 + (byte(0) & 7);
  c.wait_port = (byte(0) & 8) != 0;
  c.rank = byte(1) % (ranks + 1);
  if (byte(2) & 7) c.nrings = (byte(2) & 7) - 1;
  // Gradient buckets of 2^(k-1) bytes (1 B to 2^30 B); 0: one call per grad.
  // Only GradAllReduce takes them (fuzz_transpile.cc clears them otherwise).
  if (const int k = byte(2) >> 3; k > 0)
    in.options.grad_allreduce.bucket_bytes = int64_t{1} << (k - 1);
  const int layout = (byte(0) >> 4) & 3;
  for (int r = 0; r < ranks; ++r) {
    const int host = layout == 0 ? 0 : layout == 1 ? r % 2 : layout == 2 ? r : r / 2;
    c.endpoints.push_back("10.0.0." + std::to_string(host + 1) + ":" + std::to_string(6170 + r));
  }
  const int current = byte(3) % (ranks + 1);
  c.current_endpoint = current < ranks ? c.endpoints[current] : "10.9.9.9:1";
  auto& spmt = in.options.single_process_multi_thread;
  spmt.fuse_allreduce = byte(4) % 3;
  spmt.loss_scale = (byte(4) >> 2) & 1;
  spmt.gpu_nums = 1 + ((byte(4) >> 3) & 7);
  auto& mt = in.options.multi_thread;
  mt.trans_mode = static_cast<MultiThreadTransMode>(byte(4) % 3);
  mt.gpu_num = 1 + ((byte(4) >> 2) & 15) % 9;
  std::size_t startup_len = byte(5) | (static_cast<std::size_t>(byte(6)) << 8);
  std::string_view rest = bytes.substr(kTranspileHeader);
  if (startup_len > rest.size()) startup_len = rest.size();
  in.startup = rest.substr(0, startup_len);
  in.main = rest.substr(startup_len);
  return true;
}

}  // namespace ctp::fuzz
