// A whole input file's bytes for one read-only pass (load_program_file).
//
// A regular file is mapped, not read: a large program then costs page-table
// entries over the page cache instead of a copy of every byte into fresh heap
// pages (at 100k ops, 60 of the 65 ms that reading main.pb took; see
// bench/RESULTS.md). Anything else (a pipe, a device) is read into memory.
// Another process truncating the file while it is mapped would make reading
// the lost pages fault (SIGBUS), as with any mapped input.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace ctp {

class MappedFile {
 public:
  // Throws ctp::Error naming the path when the file cannot be read.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::string_view bytes() const { return map_ ? std::string_view(map_, size_) : read_; }

 private:
  char* map_ = nullptr;
  std::size_t size_ = 0;
  std::string read_;  // the bytes of a file that cannot be mapped
};

}  // namespace ctp
