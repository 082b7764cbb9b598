#include "program_ir/error.h"

namespace ctp {

Error::Error(SourceLocation place, std::string message)
    : std::runtime_error(std::string()),
      state_(std::make_shared<const State>(State{std::move(place), std::move(message)})) {
  std::runtime_error::operator=(std::runtime_error(text(*state_)));
}

std::string Error::text(const State& state) {
  std::string place = state.place.to_string();
  return place.empty() ? state.message : place + ": " + state.message;
}

void Error::locate(const SourceLocation& outer) {
  State located = *state_;
  located.place.fill_from(outer);
  if (located.place == state_->place) return;
  auto next = std::make_shared<const State>(std::move(located));
  std::runtime_error::operator=(std::runtime_error(text(*next)));
  state_ = std::move(next);
}

}  // namespace ctp
