// A staged file's sink (program_ir/file_sink.h) where the file system does
// not do what direct I/O asks of it: it takes O_DIRECT on the descriptor
// and then refuses the first direct write (EINVAL), or writes less than it
// was given, in whole blocks or not. The file then holds the same bytes as
// ever, what direct I/O did not write going through the page cache. No file
// system here does these things on demand, so a stand-in for write(2) does
// them (FileSink's WriteCall), over a real file whose descriptor really is
// in direct mode. Also built into the ThreadSanitizer tests (the sink
// writes on a thread of its own).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include "program_ir/atomic_file.h"
#include "program_ir/error.h"
#include "program_ir/file_sink.h"
#include "tests/executor_process_util.h"
#include "tests/same_bytes.h"

namespace ctp {
namespace {

constexpr std::size_t kBlock = 4096;

// What the stand-ins saw of the direct writes (the sink's writer thread
// calls them).
std::atomic<std::size_t> direct_calls{0};
std::atomic<std::size_t> direct_bytes{0};

bool in_direct_mode(int fd) { return (::fcntl(fd, F_GETFL) & O_DIRECT) != 0; }

// A file system that takes O_DIRECT and then refuses every direct write.
ssize_t refuses_direct_writes(int fd, const void* bytes, std::size_t size) {
  if (!in_direct_mode(fd)) return ::write(fd, bytes, size);
  ++direct_calls;
  errno = EINVAL;
  return -1;
}

// One that writes a direct write's first block only: short, but by whole
// blocks, so the sink goes on writing directly.
ssize_t writes_a_block_at_a_time(int fd, const void* bytes, std::size_t size) {
  if (!in_direct_mode(fd)) return ::write(fd, bytes, size);
  ++direct_calls;
  const ssize_t n = ::write(fd, bytes, std::min(size, kBlock));
  if (n > 0) direct_bytes += static_cast<std::size_t>(n);
  return n;
}

// One whose first direct write stops short of a block's end. A direct write
// takes whole blocks only, so the stand-in writes those bytes through a
// descriptor of its own (the same file, without O_DIRECT) and moves the
// sink's offset past them, as the kernel would.
ssize_t writes_short_of_a_block(int fd, const void* bytes, std::size_t size) {
  if (!in_direct_mode(fd)) return ::write(fd, bytes, size);
  ++direct_calls;
  const std::size_t n = size > kBlock ? size - kBlock / 2 : size;
  const off_t at = ::lseek(fd, 0, SEEK_CUR);
  const int plain = ::open(("/proc/self/fd/" + std::to_string(fd)).c_str(), O_WRONLY | O_CLOEXEC);
  if (plain < 0 || at < 0) return -1;
  const ssize_t wrote = ::pwrite(plain, bytes, n, at);
  ::close(plain);
  if (wrote < 0) return -1;
  ::lseek(fd, at + wrote, SEEK_SET);
  direct_bytes += static_cast<std::size_t>(wrote);
  return wrote;
}

// One that takes no bytes and says no error (which write(2) may do).
ssize_t writes_nothing(int, const void*, std::size_t) { return 0; }

// Whether the file system of `dir` takes O_DIRECT on a descriptor (without
// it the sink never writes directly, and these tests would test nothing).
bool takes_direct_mode(const std::string& dir) {
  const std::string probe = dir + "/direct_probe";
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  const int flags = ::fcntl(fd, F_GETFL);
  const bool takes = flags >= 0 && ::fcntl(fd, F_SETFL, flags | O_DIRECT) == 0;
  ::close(fd);
  ::unlink(probe.c_str());
  return takes;
}

// Five and a half buffers and a bit of bytes that differ from block to
// block, written through a sink with `write_call` into `path`; returns them.
// (The last buffer, not a whole number of blocks, goes through the page
// cache in any case.)
std::string write_through(const std::string& path, WriteCall write_call) {
  std::string expected;
  for (std::size_t i = 0; i < (11u << 20) / 2 + 100; ++i)
    expected.push_back(static_cast<char>('a' + (i / kBlock + i) % 26));
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) throw Error(path + ": cannot open: " + std::strerror(errno));
  try {
    FileSink sink(fd, path, write_call);
    // In pieces that do not line up with the buffers.
    for (std::size_t at = 0; at < expected.size(); at += 300000)
      sink.append(std::string_view(expected).substr(at, 300000));
    sink.flush();
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  return expected;
}

class FileSinkFallback : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!takes_direct_mode(dir_.path().string()))
      GTEST_SKIP() << "the file system of " << dir_.path() << " takes no O_DIRECT";
    direct_calls = 0;
    direct_bytes = 0;
  }
  test::TempDir dir_{"file_sink_fallback"};
};

// Refused at the first direct write: the sink leaves direct I/O for good
// (one refusal, not one per buffer) and writes everything buffered.
TEST_F(FileSinkFallback, AFileSystemRefusingDirectWritesGetsTheBytesBuffered) {
  const std::string out = dir_ / "refused.bin";
  const std::string expected = write_through(out, &refuses_direct_writes);
  EXPECT_EQ(direct_calls.load(), 1u);
  EXPECT_TRUE(test::same_bytes(read_file(out), expected));
}

// Short by whole blocks: the sink goes on writing the rest of each full
// buffer directly, a block at a time here.
TEST_F(FileSinkFallback, ADirectWriteShortByWholeBlocksGoesOnDirectly) {
  const std::string out = dir_ / "blocks.bin";
  const std::string expected = write_through(out, &writes_a_block_at_a_time);
  // The five full buffers, all of them direct.
  EXPECT_EQ(direct_bytes.load(), std::size_t{5} << 20);
  EXPECT_EQ(direct_calls.load(), (std::size_t{5} << 20) / kBlock);
  EXPECT_TRUE(test::same_bytes(read_file(out), expected));
}

// Short by part of a block: the offset is no longer aligned, so the rest of
// that buffer and all that follows go through the page cache.
TEST_F(FileSinkFallback, ADirectWriteShortOfABlockSendsTheRestBuffered) {
  const std::string out = dir_ / "short.bin";
  const std::string expected = write_through(out, &writes_short_of_a_block);
  EXPECT_EQ(direct_calls.load(), 1u);
  EXPECT_EQ(direct_bytes.load(), (std::size_t{1} << 20) - kBlock / 2);
  EXPECT_TRUE(test::same_bytes(read_file(out), expected));
}

// A write that takes nothing fails, naming the file, instead of spinning.
TEST_F(FileSinkFallback, AWriteThatTakesNothingFailsNamingTheFile) {
  const std::string out = dir_ / "nothing.bin";
  try {
    write_through(out, &writes_nothing);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(out), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("took none of its bytes"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ctp
