// Real Paddle programs (../shared/realworld, beside the project; skipped,
// visibly, when absent): every readable file in programs/ and mutated/ loads
// with the blocks, ops and vars its SOURCES.md row gives, and writes back
// byte for byte: `ctp dump F --emit proto` writes F's bytes, and so does
// `ctp dump F --emit json`, then `--emit proto` of that. The files SOURCES.md calls not decodable (the
// NEG_* files and the pre-2018 format) are refused with an error.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "program_ir/atomic_file.h"
#include "program_ir/proto_io.h"
#include "tests/realworld_files.h"
#include "tests/same_bytes.h"

namespace ctp {
namespace {

namespace fs = std::filesystem;

std::size_t var_count(const Program& p) {
  std::size_t n = 0;
  for (const Block& b : p.blocks) n += b.var_count();
  return n;
}

// The bytes `ctp dump FILE --emit FORM` writes.
std::string dump(const std::string& file, const std::string& form, const fs::path& out) {
  const std::string command = std::string(CTP_CLI_PATH) + " dump '" + file + "' --emit " +
                              form + " -o '" + out.string() + "' 2>&1";
  if (std::system(command.c_str()) != 0) return "(ctp dump failed: " + command + ")";
  return read_file(out.string());
}

TEST(RealWorldPrograms, EveryReadableFileWritesBackItsBytes) {
  const test::RealWorld world = test::find_realworld();
  if (world.files.empty()) GTEST_SKIP() << world.skip_reason;
  const fs::path tmp = fs::temp_directory_path() / ("ctp_realworld_" + std::to_string(::getpid()));
  fs::create_directories(tmp);
  std::size_t readable = 0, exact = 0, exact_json = 0, refused = 0;
  for (const test::RealWorldFile& file : world.files) {
    SCOPED_TRACE(file.path);
    const std::string bytes = read_file(file.path);
    if (!file.decodable) {
      EXPECT_THROW(parse_program_proto(bytes, file.path), Error);
      ++refused;
      continue;
    }
    Program p;
    try {
      p = parse_program_proto(bytes, file.path);
    } catch (const Error& e) {
      ADD_FAILURE() << e.what();
      continue;
    }
    ++readable;
    if (file.counts) {
      EXPECT_EQ(p.blocks.size(), file.counts->blocks);
      EXPECT_EQ(p.op_count(), file.counts->ops);
      EXPECT_EQ(var_count(p), file.counts->vars);
    }
    // The CLI, as a user runs it.
    const ::testing::AssertionResult same =
        test::same_bytes(dump(file.path, "proto", tmp / "out.pb"), bytes);
    EXPECT_TRUE(same) << "ctp dump --emit proto changed the bytes";
    exact += static_cast<bool>(same);
    dump(file.path, "json", tmp / "out.json");
    const ::testing::AssertionResult same_json =
        test::same_bytes(dump((tmp / "out.json").string(), "proto", tmp / "back.pb"), bytes);
    EXPECT_TRUE(same_json) << "protobuf -> JSON -> protobuf changed the bytes";
    exact_json += static_cast<bool>(same_json);
  }
  fs::remove_all(tmp);
  // Enough of the folder was there to mean something.
  EXPECT_GE(readable, 40u);
  EXPECT_GE(refused, 4u);
  std::cout << "[ realworld ] " << readable << " readable files: " << exact
            << " write back their bytes, " << exact_json << " through JSON; " << refused
            << " refused as not decodable\n";
}

// Without the folder, the tests above skip and say why (rather than pass
// having checked nothing).
TEST(RealWorldPrograms, AnAbsentFolderGivesNoFilesAndTheReasonToSkip) {
  const test::RealWorld world = test::find_realworld("/nonexistent/shared/realworld");
  EXPECT_TRUE(world.files.empty());
  EXPECT_NE(world.skip_reason.find("no real Paddle programs at /nonexistent/shared/realworld"),
            std::string::npos)
      << world.skip_reason;
}

}  // namespace
}  // namespace ctp
