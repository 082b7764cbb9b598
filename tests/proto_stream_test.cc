// The streamed protobuf writer (write_program_proto) and the staged files it
// writes into (OutputSet::stage_streamed, stage_copy): the same bytes as the
// real Paddle files it read, handed over in bounded pieces (never the whole
// output at once), and a write that fails (a full disk, an exception in the
// middle) leaves nothing on disk.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <functional>

#include "bench/training_program.h"
#include "program_ir/atomic_file.h"
#include "program_ir/byte_sink.h"
#include "program_ir/error.h"
#include "program_ir/proto_io.h"
#include "tests/executor_process_util.h"
#include "tests/realworld_files.h"
#include "tests/same_bytes.h"

namespace ctp {
namespace {

namespace fs = std::filesystem;

// Keeps every piece it is handed, and how large the largest was.
class RecordingSink final : public ByteSink {
 public:
  void append(std::string_view bytes) override {
    bytes_.append(bytes);
    ++pieces_;
    largest_ = std::max(largest_, bytes.size());
  }
  void expect_total(std::size_t bytes) override { expected_ = bytes; }
  const std::string& bytes() const { return bytes_; }
  std::size_t pieces() const { return pieces_; }
  std::size_t largest() const { return largest_; }
  std::size_t expected() const { return expected_; }

 private:
  std::string bytes_;
  std::size_t pieces_ = 0, largest_ = 0, expected_ = 0;
};

// Every file left in `dir` (staging directories and their files included).
std::vector<std::string> everything_in(const fs::path& dir) {
  std::vector<std::string> found;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    found.push_back(fs::relative(e.path(), dir).string());
  std::sort(found.begin(), found.end());
  return found;
}

int in_child(const std::function<int()>& body) {
  pid_t pid = ::fork();
  if (pid == 0) ::_exit(body());
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

TEST(ProtoStream, RealPaddleFilesComeBackByteForByteThroughAStagedFile) {
  const test::RealWorld world = test::find_realworld();
  if (world.files.empty()) GTEST_SKIP() << world.skip_reason;
  test::TempDir dir("proto_stream_realworld");
  std::size_t checked = 0;
  for (const test::RealWorldFile& file : world.files) {
    if (!file.decodable) continue;
    SCOPED_TRACE(file.path);
    const std::string bytes = read_file(file.path);
    const Program program = parse_program_proto(bytes, file.path);
    RecordingSink sink;
    write_program_proto(program, sink);
    EXPECT_TRUE(test::same_bytes(sink.bytes(), bytes));
    EXPECT_EQ(sink.expected(), bytes.size());  // the size pass counted the same
    const std::string out = dir / "out.pb";
    OutputSet output(dir.path().string());
    output.stage_streamed(out, [&](ByteSink& s) { write_program_proto(program, s); });
    output.commit();
    EXPECT_TRUE(test::same_bytes(read_file(out), bytes));
    ++checked;
  }
  EXPECT_GE(checked, 40u);
}

// The pieces are bounded by the writer's chunk (64 KiB) plus one op or var,
// whatever the program's size: the output is never built whole.
TEST(ProtoStream, ALargeProgramIsHandedOverInBoundedPieces) {
  const bench::TrainingPrograms programs = bench::make_training_programs(5000);
  const std::string whole = serialize_program_proto(programs.main);
  ASSERT_GT(whole.size(), std::size_t{2} << 20);
  RecordingSink sink;
  write_program_proto(programs.main, sink);
  EXPECT_TRUE(test::same_bytes(sink.bytes(), whole));
  EXPECT_EQ(sink.expected(), whole.size());
  EXPECT_GE(sink.pieces(), whole.size() / (80 * 1024));
  EXPECT_LT(sink.largest(), std::size_t{80} * 1024);
  // And it reads back as the same program.
  EXPECT_EQ(serialize_program_proto(parse_program_proto(sink.bytes(), "streamed")), whole);
}

// A full disk (here: the file size limit, with SIGXFSZ ignored so that the
// write fails with EFBIG) is a clear error naming the output, and neither
// the output nor anything staged stays.
TEST(ProtoStream, AFailedWriteLeavesNothingOnDisk) {
  const bench::TrainingPrograms programs = bench::make_training_programs(2000);
  test::TempDir dir("proto_stream_full");
  const std::string out = dir / "main.pb";
  const int status = in_child([&] {
    ::signal(SIGXFSZ, SIG_IGN);
    rlimit limit{256 * 1024, 256 * 1024};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    try {
      OutputSet output(dir.path().string());
      output.stage_streamed(out, [&](ByteSink& s) { write_program_proto(programs.main, s); });
      output.commit();
    } catch (const Error& e) {
      const std::string what = e.what();
      const bool clear = what.find(out + ": write failed: File too large") != std::string::npos;
      if (!clear) std::fprintf(stderr, "unexpected error: %s\n", what.c_str());
      return clear ? 42 : 1;
    }
    return 0;
  });
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 42) << "the write should have failed with a clear error";
  EXPECT_EQ(everything_in(dir.path()), std::vector<std::string>{});
}

// An error in the middle of encoding (the writer throwing after some pieces
// went to the file) stages nothing either; the set's other outputs commit.
TEST(ProtoStream, AnErrorInTheMiddleStagesNothing) {
  test::TempDir dir("proto_stream_throw");
  OutputSet output(dir.path().string());
  output.stage(dir / "a", "a");
  EXPECT_THROW(output.stage_streamed(dir / "b",
                                     [](ByteSink& s) {
                                       s.append(std::string(3 << 20, 'x'));
                                       throw Error("encoder failed");
                                     }),
               Error);
  output.commit();
  EXPECT_EQ(everything_in(dir.path()), std::vector<std::string>{"a"});
}

TEST(ProtoStream, AStagedCopyHasTheSameBytes) {
  test::TempDir dir("proto_stream_copy");
  const std::string big(5 << 20, 'y');
  OutputSet output(dir.path().string());
  output.make_directories(dir / "r0");
  output.make_directories(dir / "r1");
  output.stage_streamed(dir / "r0/main.pb", [&](ByteSink& s) {
    s.append("head");
    s.append(big);
    s.append("tail");
  });
  output.stage_copy(dir / "r1/main.pb", dir / "r0/main.pb");
  EXPECT_THROW(output.stage_copy(dir / "r1/other.pb", dir / "r0/missing.pb"), Error);
  output.commit();
  EXPECT_EQ(read_file(dir / "r1/main.pb"), "head" + big + "tail");
  EXPECT_EQ(read_file(dir / "r0/main.pb"), read_file(dir / "r1/main.pb"));
}

}  // namespace
}  // namespace ctp
