#include "program_ir/unknown_fields.h"

namespace ctp {

const std::vector<UnknownFields::Run>& UnknownFields::no_runs() {
  static const std::vector<Run> kNone;
  return kNone;
}

void UnknownFields::append(std::size_t after, std::string_view bytes) {
  if (bytes.empty()) return;
  if (!runs_) runs_.emplace();
  if (!runs_->empty() && runs_->back().after == after)
    runs_->back().bytes.append(bytes);
  else
    runs_->push_back(Run{after, std::string(bytes)});
}

void UnknownFields::close(std::size_t known_fields) {
  if (runs_ && runs_->back().after >= known_fields) runs_->back().after = kAtEnd;
}

std::string UnknownFields::bytes() const {
  std::string out;
  for (const Run& run : runs()) out += run.bytes;
  return out;
}

}  // namespace ctp
