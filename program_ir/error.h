// Errors ctp reports to users. Every error carries the place it is about
// (program_ir/source_location.h) apart from its message, and what() prints
// both: "prog.pb: block 0, op 3 'mul', attr 'axis': invalid AttrType 18".
// The place is filled once, by the code that knows each part of it; code
// further out adds only what is still missing (locate), never a second copy.
#pragma once
#include <memory>
#include <stdexcept>
#include <string>

#include "program_ir/source_location.h"

namespace ctp {

class Error : public std::runtime_error {
 public:
  // An error whose place is not known here (or is part of the message).
  explicit Error(const std::string& message) : Error(SourceLocation{}, message) {}
  Error(SourceLocation place, std::string message);

  // The message without the place.
  const std::string& message() const noexcept { return state_->message; }
  const SourceLocation& place() const noexcept { return state_->place; }

  // Adds what `outer` knows and the place lacks (SourceLocation::fill_from);
  // what() follows. For code that catches an error, knows where it happened
  // and rethrows it (`throw;` keeps its type).
  void locate(const SourceLocation& outer);

 private:
  struct State {
    SourceLocation place;
    std::string message;
  };
  static std::string text(const State& state);

  // Shared, so that copying an exception cannot throw.
  std::shared_ptr<const State> state_;
};

}  // namespace ctp
