// Errors ctp reports to users. Every error carries the place it is about
// (file, block, op index, op type, var or attribute) in its message.
#pragma once
#include <stdexcept>
#include <string>

namespace ctp {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace ctp
