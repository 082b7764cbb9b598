#include "program_ir/file_sink.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

#include "program_ir/error.h"

namespace ctp {

void write_all(int fd, std::string_view bytes, const std::string& path, WriteCall write_call) {
  while (!bytes.empty()) {
    const ssize_t n = write_call(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(path + ": write failed: " + std::strerror(errno));
    }
    // Nothing written, and no error: trying again would spin for good.
    if (n == 0) throw Error(path + ": write failed: the file system took none of its bytes");
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

FileSink::~FileSink() {
  if (!writer_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  writer_.join();
}

FileSink::Buffer FileSink::aligned_buffer() {
  Buffer buffer;
  buffer.data.reset(static_cast<char*>(std::aligned_alloc(kAlign, kBuffer)));
  if (!buffer.data) throw std::bad_alloc();
  return buffer;
}

void FileSink::append(std::string_view bytes) {
  while (!bytes.empty()) {
    if (!filling_.data) filling_ = aligned_buffer();
    const std::size_t n = std::min(bytes.size(), kBuffer - filling_.size);
    std::memcpy(filling_.data.get() + filling_.size, bytes.data(), n);
    filling_.size += n;
    bytes.remove_prefix(n);
    if (filling_.size == kBuffer) hand_over();
  }
}

void FileSink::flush() {
  if (!writer_.joinable()) {
    write(filling_.bytes());
    filling_.size = 0;
    return;
  }
  if (filling_.size > 0) hand_over();
  writer_idle();
}

// Gives the full buffer to the writer once it has written the last one.
// The first hand-over starts the writer: nothing is written yet, so every
// full buffer lies at a multiple of kBuffer, as direct I/O needs.
void FileSink::hand_over() {
  if (!writer_.joinable()) {
    set_direct(true);
    writer_ = std::thread([this] { write_handed_over(); });
  }
  std::unique_lock<std::mutex> lock = writer_idle();
  std::swap(filling_, writing_);
  filling_.size = 0;
  pending_ = true;
  lock.unlock();
  wake_.notify_one();
}

// Waits until the writer has written what it was handed; throws its error.
std::unique_lock<std::mutex> FileSink::writer_idle() {
  std::unique_lock<std::mutex> lock(mu_);
  done_.wait(lock, [&] { return !pending_; });
  if (error_) std::rethrow_exception(error_);
  return lock;
}

void FileSink::write_handed_over() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    wake_.wait(lock, [&] { return pending_ || stop_; });
    if (!pending_) return;
    lock.unlock();
    std::exception_ptr error;
    try {
      write(writing_.bytes());
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    if (error && !error_) error_ = error;
    pending_ = false;
    done_.notify_all();
  }
}

void FileSink::write(std::string_view bytes) {
  if (direct_ && write_direct(bytes)) return;
  write_all(fd_, bytes, path_, write_call_);
  written_ += bytes.size();
  if (written_ - writeback_from_ < kWriteback) return;
  // A hint: where the file system cannot, the fsync does it all.
  (void)::sync_file_range(fd_, static_cast<off_t>(writeback_from_),
                          static_cast<off_t>(written_ - writeback_from_), SYNC_FILE_RANGE_WRITE);
  writeback_from_ = written_;
}

bool FileSink::write_direct(std::string_view& bytes) {
  // Whole blocks only: the last, partial buffer and what follows a short
  // write go through the page cache, as does everything once the file
  // system has refused (EINVAL: it takes no direct I/O after all).
  while (bytes.size() % kAlign == 0 && !bytes.empty()) {
    const ssize_t n = write_call_(fd_, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EINVAL) break;
    if (n < 0) throw Error(path_ + ": write failed: " + std::strerror(errno));
    if (n == 0) break;  // the page cache's write says why, or writes them
    bytes.remove_prefix(static_cast<std::size_t>(n));
    written_ += static_cast<std::size_t>(n);
    if (static_cast<std::size_t>(n) % kAlign != 0) break;
  }
  if (bytes.empty()) return true;
  set_direct(false);
  writeback_from_ = written_;
  return false;
}

void FileSink::set_direct(bool on) {
  const int flags = ::fcntl(fd_, F_GETFL);
  if (flags < 0) return;
  const int wanted = on ? (flags | O_DIRECT) : (flags & ~O_DIRECT);
  // A file system without direct I/O refuses the flag here (or at the first
  // write, above); the file is then written through the page cache.
  if (::fcntl(fd_, F_SETFL, wanted) == 0) direct_ = on;
  else if (!on)
    throw Error(path_ + ": write failed: cannot leave direct I/O: " + std::strerror(errno));
}

}  // namespace ctp
