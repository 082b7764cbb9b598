// A streamed staged file (OutputSet::stage_streamed): appends fill a buffer
// while the sink's own thread writes the one before. The file keeps the
// order of the appends whatever their sizes, and several files staged at
// once from several threads (as `ctp transpile` stages startup beside main)
// each get their own bytes. A file of several buffers goes to the disk
// past the page cache where the file system takes direct I/O. Also built
// into the ThreadSanitizer tests.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "program_ir/atomic_file.h"
#include "program_ir/byte_sink.h"
#include "program_ir/error.h"
#include "tests/executor_process_util.h"
#include "tests/same_bytes.h"

namespace ctp {
namespace {

// Appends pieces of these sizes, each filled with its own letter from
// `first`, and returns what the file must then hold.
std::string append_pieces(ByteSink& sink, char first) {
  // A packed op of a few hundred KiB (say a coalesce_tensor of every
  // gradient) comes between pieces of the writer's chunk size; a piece may
  // span buffers.
  const std::size_t sizes[] = {10, 70 * 1024, 3, 5, 200 * 1024, 64 * 1024, 1, 1 << 20, 7,
                               3 << 20, (1 << 20) - 7, 11};
  std::string expected;
  char fill = first;
  for (std::size_t size : sizes) {
    const std::string piece(size, fill++);
    sink.append(piece);
    expected += piece;
  }
  return expected;
}

TEST(StagedStream, AStagedFileKeepsTheOrderOfSmallAndLargeAppends) {
  test::TempDir dir("staged_stream_order");
  const std::string out = dir / "mixed.bin";
  std::string expected;
  OutputSet output(dir.path().string());
  output.stage_streamed(out, [&](ByteSink& s) { expected = append_pieces(s, 'a'); });
  output.commit();
  EXPECT_TRUE(test::same_bytes(read_file(out), expected));
}

TEST(StagedStream, FilesStagedAtOnceGetTheirOwnBytes) {
  test::TempDir dir("staged_stream_at_once");
  OutputSet output(dir.path().string());
  constexpr int kFiles = 3;
  std::vector<std::string> expected(kFiles);
  std::vector<std::thread> stagers;
  for (int f = 0; f < kFiles; ++f)
    stagers.emplace_back([&, f] {
      output.stage_streamed(dir / ("f" + std::to_string(f)), [&](ByteSink& s) {
        expected[f] = append_pieces(s, static_cast<char>('a' + 10 * f));
      });
    });
  for (std::thread& t : stagers) t.join();
  output.commit();
  for (int f = 0; f < kFiles; ++f)
    EXPECT_TRUE(test::same_bytes(read_file(dir / ("f" + std::to_string(f))), expected[f])) << f;
}

// An error in the middle of encoding, after buffers went to the writer's
// thread, stages nothing and leaves that thread stopped.
TEST(StagedStream, AnEncoderErrorAfterHandOversStagesNothing) {
  test::TempDir dir("staged_stream_throw");
  OutputSet output(dir.path().string());
  EXPECT_THROW(output.stage_streamed(dir / "b",
                                     [](ByteSink& s) {
                                       append_pieces(s, 'a');
                                       throw Error("encoder failed");
                                     }),
               Error);
  output.commit();
  EXPECT_FALSE(std::filesystem::exists(dir / "b"));
}

// How many of the first `size` bytes' pages of `path` are in the page cache.
std::size_t cached_pages(const std::string& path, std::size_t size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(path + ": cannot open: " + std::strerror(errno));
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) throw Error(path + ": cannot map: " + std::strerror(errno));
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> resident((size + page - 1) / page);
  const int rc = ::mincore(map, size, resident.data());
  ::munmap(map, size);
  if (rc != 0) throw Error(path + ": mincore failed: " + std::strerror(errno));
  std::size_t cached = 0;
  for (unsigned char r : resident) cached += r & 1;
  return cached;
}

// Whether the file system of `dir` writes an aligned block directly and
// leaves it out of the page cache (some refuse direct I/O, at the open or
// at the write; some take it and cache all the same).
bool writes_past_the_cache(const std::string& dir) {
  const std::string probe = dir + "/direct_probe";
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_DIRECT | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  constexpr std::size_t kBlock = 64 * 1024;
  std::unique_ptr<char, decltype(&std::free)> block(
      static_cast<char*>(std::aligned_alloc(4096, kBlock)), &std::free);
  std::memset(block.get(), 1, kBlock);
  const bool wrote = ::write(fd, block.get(), kBlock) == static_cast<ssize_t>(kBlock);
  ::close(fd);
  const bool past = wrote && cached_pages(probe, kBlock) == 0;
  ::unlink(probe.c_str());
  return past;
}

// A file of several buffers is written to the disk from the sink's buffers
// (direct I/O), not copied into the page cache first: on a large output
// that copy took most of the write time (bench/RESULTS.md, session 21).
// The last, partial buffer goes through the page cache; the bytes are the
// same either way.
TEST(StagedStream, AFileOfSeveralBuffersGoesToTheDiskPastThePageCache) {
  test::TempDir dir("staged_stream_direct");
  if (!writes_past_the_cache(dir.path().string()))
    GTEST_SKIP() << "the file system of " << dir.path()
                 << " takes no direct I/O, or caches what it writes directly";
  const std::string out = dir / "large.bin";
  std::string expected;
  OutputSet output(dir.path().string());
  output.stage_streamed(out, [&](ByteSink& s) { expected = append_pieces(s, 'a'); });
  output.commit();
  const std::size_t whole_buffers = (expected.size() >> 20) << 20;
  ASSERT_GE(whole_buffers, std::size_t{4} << 20);
  // Before anything reads the file (which would bring it into the cache).
  const std::size_t cached = cached_pages(out, whole_buffers);
  const std::size_t pages = whole_buffers / static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  EXPECT_LT(cached, pages / 8) << cached << " of its first " << pages << " pages are cached";
  EXPECT_TRUE(test::same_bytes(read_file(out), expected));
}

}  // namespace
}  // namespace ctp
