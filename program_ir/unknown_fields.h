// Fields of a message that ctp does not know (a newer Paddle's, another
// writer's), kept as their wire bytes (tag, length and value) and their place,
// so that writing the message gives back the bytes it was read from.
//
// The place of a run of unknown fields is the number of known fields that came
// before it in the message (counting each element of a repeated field), or
// "at the end" when no known field followed it. Protobuf libraries write
// unknown fields after the known ones, so that is where nearly all of them
// are; "at the end" stays at the end however many ops or vars a rewrite adds.
// A count is exact for the message as read and best-effort after edits.
#pragma once
#include <cstddef>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "program_ir/heap_optional.h"

namespace ctp {

class UnknownFields {
 public:
  static constexpr std::size_t kAtEnd = std::numeric_limits<std::size_t>::max();

  struct Run {
    std::size_t after = kAtEnd;  // known fields before it, or kAtEnd
    std::string bytes;           // one or more whole fields
    bool operator==(const Run&) const = default;
  };

  UnknownFields() = default;
  // Bytes that follow every known field.
  UnknownFields(std::string bytes_at_end) { append(kAtEnd, bytes_at_end); }

  bool empty() const { return !runs_; }
  const std::vector<Run>& runs() const { return runs_ ? *runs_ : no_runs(); }
  // Appends bytes placed after `after` known fields; runs keep the order in
  // which they are appended, and a run placed like the one before it joins
  // it. Empty bytes add nothing.
  void append(std::size_t after, std::string_view bytes);
  // A run that was read with no known field after it moves to the end (a
  // reader calls this once the message is done, with the known fields read).
  void close(std::size_t known_fields);
  // Every run's bytes, in order: the fields as a protobuf library keeps them.
  std::string bytes() const;

  bool operator==(const UnknownFields&) const = default;

 private:
  // Absent until a run is appended: nearly every message has none, and a
  // program holds one of these per var and op.
  HeapOptional<std::vector<Run>> runs_;
  static const std::vector<Run>& no_runs();
};

// Writes the runs of `fields` at their places while a message's known fields
// are written: call before_known() before each known field and finish() after
// the last one.
template <typename Sink>
class UnknownFieldsCursor {
 public:
  UnknownFieldsCursor(const UnknownFields& fields, Sink& sink)
      : runs_(fields.runs()), sink_(sink) {}

  void before_known() {
    flush(written_);
    ++written_;
  }
  void finish() { flush(UnknownFields::kAtEnd); }

 private:
  void flush(std::size_t up_to) {
    while (next_ < runs_.size() && runs_[next_].after <= up_to) sink_(runs_[next_++].bytes);
  }

  const std::vector<UnknownFields::Run>& runs_;
  Sink& sink_;
  std::size_t next_ = 0;
  std::size_t written_ = 0;
};

}  // namespace ctp
