// The sink an OutputSet stages a streamed file through (program_ir/
// atomic_file.h): bytes go to the file as they come, a buffer at a time.
// Internal to program_ir.
#pragma once
#include <sys/types.h>
#include <unistd.h>

#include <condition_variable>
#include <cstddef>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "program_ir/byte_sink.h"

namespace ctp {

// write(2), or what a test calls in its place: a file system that takes
// O_DIRECT and then refuses a direct write (EINVAL), or writes less than it
// was given, cannot be had on demand.
using WriteCall = ssize_t (*)(int fd, const void* bytes, std::size_t size);

// Writes all of `bytes` to `fd`; ctp::Error naming `path` on failure.
void write_all(int fd, std::string_view bytes, const std::string& path,
               WriteCall write_call = &::write);

// A file written through two buffers: appends fill one while a thread of
// the sink's own writes the other, since write(2) is about half of what
// staging a large program takes, and the encoder need not wait for it. A
// file of one buffer or less is written on the caller's thread, with no
// thread started.
//
// Once a file outgrows one buffer, its full buffers are written with direct
// I/O (O_DIRECT) where the file system takes it: they go from the buffer to
// the disk with no copy into the page cache. That copy was most of a large
// output's write time, and grew faster than the bytes on this project's
// machine (bench/RESULTS.md, session 21: 3.2 GB took 8.3 s through the page
// cache and 1.3 s direct, both with the fsync the commit needs). The last,
// partial buffer goes through the page cache (direct I/O writes whole
// blocks), as does every buffer where the file system refuses direct I/O.
// Buffered, every kWriteback bytes the writer asks the kernel to start
// writing them to disk (sync_file_range, which does not wait), so that the
// fsync before the commit waits for the last ones only.
//
// A write error is thrown by the next append or by flush().
class FileSink final : public ByteSink {
 public:
  FileSink(int fd, const std::string& path, WriteCall write_call = &::write)
      : fd_(fd), path_(path), write_call_(write_call) {}
  FileSink(const FileSink&) = delete;
  FileSink& operator=(const FileSink&) = delete;
  ~FileSink();
  void append(std::string_view bytes) override;
  // Writes what is buffered and waits for the writer.
  void flush();

 private:
  static constexpr std::size_t kBuffer = 1 << 20;
  static constexpr std::size_t kWriteback = 8 << 20;
  // Direct I/O wants the memory, the offset and the length aligned to the
  // file system's block; 4 KiB is a multiple of every common one, and
  // kBuffer of 4 KiB.
  static constexpr std::size_t kAlign = 4096;

  struct Buffer {
    std::unique_ptr<char, decltype(&std::free)> data{nullptr, &std::free};
    std::size_t size = 0;
    std::string_view bytes() const { return {data.get(), size}; }
  };
  static Buffer aligned_buffer();

  void hand_over();
  std::unique_lock<std::mutex> writer_idle();
  void write_handed_over();
  void write(std::string_view bytes);
  // Writes what it can of `bytes` directly; false when the rest must go
  // through the page cache.
  bool write_direct(std::string_view& bytes);
  void set_direct(bool on);

  int fd_;
  const std::string& path_;
  WriteCall write_call_;
  Buffer filling_;  // the caller's
  Buffer writing_;  // the writer's while pending_
  // The writer's (the caller's before it starts): what it has written, from
  // where the page cache holds what it has not yet asked to write back, and
  // whether the descriptor is in direct mode.
  std::size_t written_ = 0;
  std::size_t writeback_from_ = 0;
  bool direct_ = false;
  std::thread writer_;
  std::mutex mu_;
  std::condition_variable wake_, done_;
  bool pending_ = false;
  bool stop_ = false;
  std::exception_ptr error_;
};

}  // namespace ctp
