// Where a streamed output goes: bytes appended in order, so that a writer
// can hand a large output over in pieces instead of building it whole in
// memory first (write_program_proto, OutputSet::stage_streamed).
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace ctp {

class ByteSink {
 public:
  virtual ~ByteSink() = default;
  // Appends `bytes`; throws ctp::Error (naming the output) when they cannot
  // be written.
  virtual void append(std::string_view bytes) = 0;
  // Says how many bytes the whole output will have, before the first
  // append(); a sink may use it to reserve room. Only a hint.
  virtual void expect_total(std::size_t bytes) { (void)bytes; }
};

// Appends to a string.
class StringSink final : public ByteSink {
 public:
  explicit StringSink(std::string& out) : out_(out) {}
  void append(std::string_view bytes) override { out_.append(bytes); }
  void expect_total(std::size_t bytes) override { out_.reserve(out_.size() + bytes); }

 private:
  std::string& out_;
};

}  // namespace ctp
