#include "program_ir/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>

#include "program_ir/atomic_file.h"

namespace ctp {

MappedFile::MappedFile(const std::string& path) {
  // stat, not open, decides: opening a FIFO would take its writer's bytes.
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      // Not MAP_POPULATE, which maps every page at once: a read that gives
      // the pages back behind it (ProtoReadOptions::mapped) then holds a few
      // MiB of the file at a time instead of all of it at the start
      // (bench/RESULTS.md, session 22: no slower).
      void* map = ::mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ,
                         MAP_PRIVATE, fd, 0);
      ::close(fd);
      if (map != MAP_FAILED) {
        map_ = static_cast<char*>(map);
        size_ = static_cast<std::size_t>(st.st_size);
      }
    }
  }
  // Not mapped (a directory, a pipe, an empty or unreadable file): read_file
  // reads it or says why it cannot.
  if (!map_) read_ = read_file(path);
}

void MappedFile::release(const char* from, const char* to) const {
  if (!map_) return;
  static const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  // Whole pages only: the first one that starts at or after `from`.
  const std::uintptr_t first = (reinterpret_cast<std::uintptr_t>(from) + page - 1) & ~(page - 1);
  const std::uintptr_t last = reinterpret_cast<std::uintptr_t>(to) & ~(page - 1);
  if (last <= first) return;
  // A hint: the mapping is private and never written, so its bytes are the
  // file's whether or not this takes.
  (void)::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

MappedFile::~MappedFile() {
  if (map_) ::munmap(map_, size_);
}

PagesGivenBack::PagesGivenBack(const MappedFile& file, std::chrono::milliseconds interval) {
  if (!file.mapped()) return;
  giver_ = std::thread([this, &file, interval] {
    std::unique_lock<std::mutex> lock(mu_);
    while (!wake_.wait_for(lock, interval, [&] { return stop_; })) {
      lock.unlock();
      file.release_all();
      lock.lock();
    }
  });
}

PagesGivenBack::~PagesGivenBack() {
  if (!giver_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_one();
  giver_.join();
}

}  // namespace ctp
