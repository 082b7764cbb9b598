// A whole input file's bytes for one read-only pass (load_program_file).
//
// A regular file is mapped, not read: a large program then costs page-table
// entries over the page cache instead of a copy of every byte into fresh heap
// pages (at 100k ops, 60 of the 65 ms that reading main.pb took; see
// bench/RESULTS.md). Anything else (a pipe, a device) is read into memory.
// Another process truncating the file while it is mapped would make reading
// the lost pages fault (SIGBUS), as with any mapped input.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace ctp {

class MappedFile {
 public:
  // Throws ctp::Error naming the path when the file cannot be read.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::string_view bytes() const { return map_ ? std::string_view(map_, size_) : read_; }

  // Gives the pages that lie wholly within [from, to) of bytes() back to the
  // page cache: the bytes stay as they are, and reading them again maps them
  // again (a minor fault each 64 KiB or so). Nothing for a file read into
  // memory. Why: a transpile holds its input for the writer, which copies
  // each unchanged op and var from it; held mapped between the read and the
  // write, the input was half of a large transpile's peak memory (issue 15).
  void release(const char* from, const char* to) const;
  void release_all() const { release(bytes().data(), bytes().data() + bytes().size()); }
  bool mapped() const { return map_ != nullptr; }

 private:
  char* map_ = nullptr;
  std::size_t size_ = 0;
  std::string read_;  // the bytes of a file that cannot be mapped
};

// Gives a mapped input's pages back behind a pass that reads it front to
// back (the protobuf writer's passes), or back to front (the second half of
// a large block's size pass): passed(p) says the pass has read everything
// before p (from p on, backwards), and every kStep bytes the pages it has
// passed go back, so that the pass holds a few MiB of its input instead of
// all of it. A pass that goes back to a byte it passed (an op moved) just
// maps it again.
class PagesBehind {
 public:
  enum class Direction { kForward, kBackward };
  explicit PagesBehind(const MappedFile& file, Direction direction = Direction::kForward)
      : file_(file),
        begin_(file.bytes().data()),
        end_(begin_ + file.bytes().size()),
        released_(direction == Direction::kForward ? begin_ : end_),
        forward_(direction == Direction::kForward) {}
  const MappedFile& file() const { return file_; }
  void passed(const char* p) {
    if (p < begin_ || p >= end_) return;
    if (forward_ && p >= released_ && static_cast<std::size_t>(p - released_) >= kStep) {
      file_.release(released_, p);
      released_ = p;
    } else if (!forward_ && p <= released_ && static_cast<std::size_t>(released_ - p) >= kStep) {
      file_.release(p, released_);
      released_ = p;
    }
  }

 private:
  static constexpr std::size_t kStep = std::size_t{4} << 20;
  const MappedFile& file_;
  const char* begin_;
  const char* end_;
  const char* released_;
  bool forward_;
};

// While it lives, gives all of a mapped input's pages back every `interval`,
// on a thread of its own, for a pass that reads the input here and there
// rather than front to back: a rewrite reads a few bytes of many ops (an
// op_role_var, an update op's slots), which maps nearly every page again,
// and held until the writer passes them they were the largest part of
// local_sgd's and MultiThread all_gather's peak memory after their rewrite
// (a third of a GB at 1M ops; bench/RESULTS.md, session 22). A page the pass
// reads again after it went back is mapped again (a minor fault).
class PagesGivenBack {
 public:
  PagesGivenBack(const MappedFile& file, std::chrono::milliseconds interval);
  ~PagesGivenBack();
  PagesGivenBack(const PagesGivenBack&) = delete;
  PagesGivenBack& operator=(const PagesGivenBack&) = delete;

 private:
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread giver_;
};

}  // namespace ctp
