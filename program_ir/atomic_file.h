// Whole-file reads and writes. Writes go to a temporary file in the same
// directory and are renamed into place, so a failure never leaves a partial
// output file behind.
#pragma once
#include <string>

namespace ctp {

// Throws ctp::Error naming the path when the file cannot be read.
std::string read_file(const std::string& path);
// Writes `contents` to `path` atomically (temp file + fsync + rename).
void write_file_atomically(const std::string& path, const std::string& contents);

}  // namespace ctp
