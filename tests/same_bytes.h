// Byte-for-byte comparison of two encodings that reports where they part
// (offset, sizes and a few bytes of each there) instead of printing both
// whole: real programs are megabytes.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <string_view>

namespace ctp::test {

inline std::string hex_window(std::string_view bytes, std::size_t at) {
  std::string out;
  const std::size_t end = std::min(bytes.size(), at + 12);
  for (std::size_t i = at; i < end; ++i) {
    char buf[4];
    std::snprintf(buf, sizeof buf, "%02x ", static_cast<unsigned char>(bytes[i]));
    out += buf;
  }
  return out.empty() ? "(end)" : out;
}

inline ::testing::AssertionResult same_bytes(std::string_view actual, std::string_view expected) {
  if (actual == expected) return ::testing::AssertionSuccess();
  const auto parted = std::mismatch(actual.begin(), actual.end(), expected.begin(), expected.end());
  const auto at = static_cast<std::size_t>(parted.first - actual.begin());
  return ::testing::AssertionFailure()
         << "the bytes part at offset " << at << " (sizes " << actual.size() << " and "
         << expected.size() << "): " << hex_window(actual, at) << "vs "
         << hex_window(expected, at);
}

}  // namespace ctp::test
