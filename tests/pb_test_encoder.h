// A protobuf wire encoder written for the tests from the encoding rules
// alone (varints, zig-zag-free int32 sign extension, little-endian fixed
// widths, length prefixes), so that fixtures share no code with ctp's writer.
// Field numbers in fixtures are typed in from the field table of
// ../shared/reference/PROGRAM_FORMAT.md (beside the project, not part of it).
#pragma once
#include <bit>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace ctp::testing_pb {

class Pb {
 public:
  Pb& varint(uint32_t field, uint64_t v) {
    key(field, 0);
    raw_varint(v);
    return *this;
  }
  // int32 and enum values: negative ones take ten bytes.
  Pb& int32(uint32_t field, int32_t v) {
    return varint(field, static_cast<uint64_t>(static_cast<int64_t>(v)));
  }
  Pb& int64(uint32_t field, int64_t v) { return varint(field, static_cast<uint64_t>(v)); }
  Pb& f32(uint32_t field, float v) {
    key(field, 5);
    auto bits = std::bit_cast<uint32_t>(v);
    for (int i = 0; i < 4; ++i) bytes_.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
    return *this;
  }
  Pb& f64(uint32_t field, double v) {
    key(field, 1);
    auto bits = std::bit_cast<uint64_t>(v);
    for (int i = 0; i < 8; ++i) bytes_.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
    return *this;
  }
  Pb& str(uint32_t field, std::string_view s) {
    key(field, 2);
    raw_varint(s.size());
    bytes_.append(s);
    return *this;
  }
  Pb& msg(uint32_t field, const Pb& m) { return str(field, m.bytes_); }
  // A packed repeated varint field (one length-delimited run).
  Pb& packed(uint32_t field, std::initializer_list<uint64_t> values) {
    Pb run;
    for (uint64_t v : values) run.raw_varint(v);
    return str(field, run.bytes_);
  }
  Pb& packed_f32(uint32_t field, std::initializer_list<float> values) {
    std::string run;
    for (float f : values) {
      auto bits = std::bit_cast<uint32_t>(f);
      for (int i = 0; i < 4; ++i) run.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
    }
    return str(field, run);
  }
  Pb& packed_f64(uint32_t field, std::initializer_list<double> values) {
    std::string run;
    for (double d : values) {
      auto bits = std::bit_cast<uint64_t>(d);
      for (int i = 0; i < 8; ++i) run.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
    }
    return str(field, run);
  }
  Pb& raw(std::string_view bytes) {
    bytes_.append(bytes);
    return *this;
  }

  const std::string& bytes() const { return bytes_; }

 private:
  void key(uint32_t field, uint32_t wire_type) { raw_varint((field << 3) | wire_type); }
  void raw_varint(uint64_t v) {
    while (v >= 0x80) {
      bytes_.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    bytes_.push_back(static_cast<char>(v));
  }

  std::string bytes_;
};

// A ProgramDesc of one block (idx 0, parent_idx -1) declaring `vars` (VarDescs)
// and then holding `ops` (OpDescs).
inline std::string one_block_program(const std::vector<Pb>& vars, const std::vector<Pb>& ops) {
  Pb block;
  block.int32(1, 0).int32(2, -1);
  for (const Pb& var : vars) block.msg(3, var);
  for (const Pb& op : ops) block.msg(4, op);
  Pb program;
  program.msg(1, block);
  return program.bytes();
}

}  // namespace ctp::testing_pb
