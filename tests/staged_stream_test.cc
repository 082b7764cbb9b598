// A streamed staged file (OutputSet::stage_streamed): appends fill a buffer
// while the sink's own thread writes the one before. The file keeps the
// order of the appends whatever their sizes, and several files staged at
// once from several threads (as `ctp transpile` stages startup beside main)
// each get their own bytes. Also built into the ThreadSanitizer tests.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace ctp
