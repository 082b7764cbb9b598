// A mapped input's pages given back to the page cache (MappedFile::release,
// PagesBehind): the bytes read the same afterwards, the process's
// file-backed memory drops, and the protobuf writer given the input holds a
// few MiB of it at a time while writing the same bytes (issue 15).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "bench/training_program.h"
#include "program_ir/atomic_file.h"
#include "program_ir/byte_sink.h"
#include "program_ir/mapped_file.h"
#include "program_ir/program_io.h"
#include "program_ir/proto_io.h"
#include "tests/same_bytes.h"

namespace ctp {
namespace {

namespace fs = std::filesystem;
constexpr std::size_t kMiB = std::size_t{1} << 20;

// The process's resident file-backed memory (RssFile in /proc/self/status).
std::size_t resident_file_bytes() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "RssFile:") {
      std::size_t kb = 0;
      status >> kb;
      return kb * 1024;
    }
    status.ignore(1 << 16, '\n');
  }
  ADD_FAILURE() << "no RssFile in /proc/self/status";
  return 0;
}

// Records the highest RssFile seen at any append, and the bytes.
class RssSampler final : public ByteSink {
 public:
  void append(std::string_view bytes) override {
    bytes_.append(bytes);
    highest_ = std::max(highest_, resident_file_bytes());
  }
  const std::string& bytes() const { return bytes_; }
  std::size_t highest() const { return highest_; }

 private:
  std::string bytes_;
  std::size_t highest_ = 0;
};

class InputPages : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ctp_input_pages_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  // Writes `size` bytes that differ from byte to byte as `path`; returns them.
  static std::string write_input(const std::string& path, std::size_t size) {
    std::string bytes(size, '\0');
    for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 131 % 251);
    write_file_atomically(path, bytes);
    return bytes;
  }
  // A 40,000-op training program's main.pb (over 20 MiB), written in dir_:
  // its path, and its bytes in `bytes`.
  std::string write_main_pb(std::string& bytes) const {
    bytes = serialize_program_proto(bench::make_training_programs(40000).main);
    EXPECT_GT(bytes.size(), 20 * kMiB);
    const std::string path = (dir_ / "main.pb").string();
    write_file_atomically(path, bytes);
    return path;
  }
  fs::path dir_;
};

TEST_F(InputPages, ReleasedPagesReadTheSameAndLeaveTheProcess) {
  const std::string path = (dir_ / "input.bin").string();
  const std::string bytes = write_input(path, 24 * kMiB);
  const MappedFile file(path);
  ASSERT_TRUE(file.mapped());
  EXPECT_TRUE(test::same_bytes(file.bytes(), bytes));  // read: mapped
  const std::size_t mapped = resident_file_bytes();
  file.release_all();
  const std::size_t released = resident_file_bytes();
  EXPECT_LT(released + 20 * kMiB, mapped) << "mapped " << mapped << ", released " << released;
  EXPECT_TRUE(test::same_bytes(file.bytes(), bytes));  // read again, mapped again
  // Part of it: only whole pages inside the range go.
  const std::size_t again = resident_file_bytes();
  file.release(file.bytes().data() + 1, file.bytes().data() + 8 * kMiB);
  EXPECT_LT(resident_file_bytes() + 6 * kMiB, again);
  EXPECT_EQ(file.bytes().substr(0, 16), bytes.substr(0, 16));
}

// The writer given the input maps it again a few MiB at a time: its
// file-backed memory grows by far less than the input while it writes the
// same bytes; without it, by about the whole input.
TEST_F(InputPages, TheWriterHoldsAFewMiBOfItsInputAtATime) {
  std::string bytes;
  const std::string path = write_main_pb(bytes);
  const MappedProgram input = load_program_mapped(path);
  ASSERT_TRUE(input.file->mapped());

  input.file->release_all();
  const std::size_t before_behind = resident_file_bytes();
  RssSampler behind;
  write_program_proto(input.program, behind, input.file.get());
  EXPECT_TRUE(test::same_bytes(behind.bytes(), bytes));
  EXPECT_LT(behind.highest(), before_behind + 12 * kMiB)
      << "grew " << (behind.highest() - before_behind) / kMiB << " MiB of "
      << bytes.size() / kMiB;

  input.file->release_all();
  const std::size_t before_held = resident_file_bytes();
  RssSampler held;
  write_program_proto(input.program, held);
  EXPECT_TRUE(test::same_bytes(held.bytes(), bytes));
  EXPECT_GT(held.highest(), before_held + bytes.size() - 4 * kMiB);
}

// The highest RssFile seen while it lives, sampled on a thread of its own
// (for a pass with no place to sample from, as the reader's).
class RssFileWatch {
 public:
  RssFileWatch()
      : watcher_([this] {
          while (!stop_.load()) {
            highest_ = std::max(highest_.load(), resident_file_bytes());
            std::this_thread::sleep_for(std::chrono::microseconds(500));
          }
        }) {}
  ~RssFileWatch() { stop(); }
  std::size_t stop() {
    if (watcher_.joinable()) {
      stop_ = true;
      watcher_.join();
    }
    return highest_;
  }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<std::size_t> highest_{0};
  std::thread watcher_;
};

// The reader given the mapped file gives its pages back behind it, when it
// finds a block's messages and after each chunk it parses: its file-backed
// memory grows by a fraction of the input, and the program read is the
// same; without it, by about the whole input.
TEST_F(InputPages, TheReaderHoldsAFewMiBOfItsInputAtATime) {
  std::string bytes;
  const std::string path = write_main_pb(bytes);
  const auto file = std::make_shared<const MappedFile>(path);
  ASSERT_TRUE(file->mapped());
  // Two threads, so that the ops come in sixteen chunks on any machine.
  const ProtoReadOptions given_back{.owner = file, .threads = 2, .mapped = file.get()};
  const ProtoReadOptions held{.owner = file, .threads = 2};

  file->release_all();
  const std::size_t before_given = resident_file_bytes();
  RssFileWatch watch_given;
  const Program read_given = parse_program_proto(file->bytes(), path, given_back);
  const std::size_t highest_given = watch_given.stop();
  EXPECT_LT(highest_given, before_given + 12 * kMiB)
      << "grew " << (highest_given - before_given) / kMiB << " MiB of " << bytes.size() / kMiB;

  file->release_all();
  const std::size_t before_held = resident_file_bytes();
  RssFileWatch watch_held;
  const Program read_held = parse_program_proto(file->bytes(), path, held);
  EXPECT_GT(watch_held.stop(), before_held + bytes.size() - 4 * kMiB);
  EXPECT_EQ(read_given, read_held);
  EXPECT_TRUE(test::same_bytes(serialize_program_proto(read_given), bytes));
}

// Reads one byte of every page of `file`, from the last page to the first
// (as a rewrite walks a block backwards), and returns their sum and the
// highest RssFile seen, sampled every MiB.
std::pair<unsigned, std::size_t> read_every_page(const MappedFile& file) {
  const std::string_view bytes = file.bytes();
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  unsigned sum = 0;
  std::size_t highest = 0;
  for (std::size_t at = bytes.size(); at >= page; at -= page) {
    sum += static_cast<unsigned char>(bytes[at - page]);
    if ((at - page) % kMiB == 0) {
      highest = std::max(highest, resident_file_bytes());
      // About as long as a rewrite takes over a MiB of its input.
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  return {sum, highest};
}

// While a PagesGivenBack lives, a pass that reads an input here and there
// holds little of it mapped however much it reads, and reads the same
// bytes; without it, it holds about all it has read.
TEST_F(InputPages, PagesGivenBackWhileAPassReadsKeepFewMapped) {
  const std::string path = (dir_ / "input.bin").string();
  const std::string bytes = write_input(path, 32 * kMiB);
  const MappedFile file(path);
  ASSERT_TRUE(file.mapped());

  file.release_all();
  const std::size_t before_given = resident_file_bytes();
  std::pair<unsigned, std::size_t> given;
  {
    const PagesGivenBack given_back(file, std::chrono::milliseconds(5));
    given = read_every_page(file);
  }
  EXPECT_LT(given.second, before_given + 16 * kMiB)
      << "grew " << (given.second - before_given) / kMiB << " MiB of 32";

  file.release_all();
  const std::size_t before_held = resident_file_bytes();
  const std::pair<unsigned, std::size_t> held = read_every_page(file);
  EXPECT_GT(held.second, before_held + 24 * kMiB);
  EXPECT_EQ(given.first, held.first);
}

}  // namespace
}  // namespace ctp
