// `ctp transpile` writes every file of its output (every rank's with
// --all-ranks) or none: a failure writing one keeps what was there before,
// a catchable signal leaves nothing staged, and an output that is not a
// regular file is refused. `ctp dump -o` likewise.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "program_ir/atomic_file.h"
#include "tests/executor_process_util.h"

namespace ctp {
namespace {

namespace fs = std::filesystem;

const fs::path kCase = fs::path(CTP_SOURCE_DIR) / "tests" / "golden" /
                       "spmt_fuse1_two_hosts_n4_r3_momentum";

// `ctp transpile` of the case into `out`, as JSON (main about 18 KB,
// startup about 9 KB), after `prefix` (shell commands).
test::CommandResult transpile(const std::string& out, const std::string& extra = "",
                              const std::string& prefix = "") {
  return test::run_command(prefix + std::string(CTP_CLI_PATH) +
                           " transpile --mode grad_allreduce --emit json --endpoints "
                           "10.0.0.1:1,10.0.0.2:2,10.0.0.3:3 --startup " +
                           (kCase / "startup.json").string() + " --main " +
                           (kCase / "main.json").string() + " -o " + out + " " + extra);
}

std::vector<std::string> staged_leftovers(const fs::path& dir) {
  std::vector<std::string> found;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().string().find(".ctp-partial-") != std::string::npos)
      found.push_back(e.path().string());
  return found;
}

TEST(TranspilerCliOutput, AnOutputThatCannotBeWrittenKeepsTheOldPair) {
  test::TempDir dir("transpile_pair");
  const std::string out = dir / "out";
  fs::create_directories(out);
  write_file_atomically(out + "/startup.json", "old startup");
  fs::create_directories(out + "/main.json");  // in the way
  const test::CommandResult r = transpile(out, "--rank 0");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("main.json: is a directory, not a regular file: refusing to replace it"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(read_file(out + "/startup.json"), "old startup");  // no new startup beside the old main
  EXPECT_EQ(staged_leftovers(dir.path()), std::vector<std::string>{});
}

TEST(TranspilerCliOutput, AllRanksAreWrittenTogetherOrNotAtAll) {
  test::TempDir dir("transpile_all_ranks");
  const std::string out = dir / "out";
  ASSERT_EQ(transpile(out, "--all-ranks").exit_code, 0);
  const std::string old_main = read_file(out + "/rank_0/main.json");
  write_file_atomically(out + "/rank_0/main.json", "old rank 0 main");
  fs::remove(out + "/rank_2/main.json");
  fs::create_directories(out + "/rank_2/main.json");  // rank 2 cannot be written
  fs::remove_all(out + "/rank_1");                   // rank 1's directory is new
  const test::CommandResult r = transpile(out, "--all-ranks");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(read_file(out + "/rank_0/main.json"), "old rank 0 main");
  EXPECT_FALSE(fs::exists(out + "/rank_1"));  // made by the failed run, removed again
  EXPECT_EQ(staged_leftovers(dir.path()), std::vector<std::string>{});
  fs::remove(out + "/rank_2/main.json");
  ASSERT_EQ(transpile(out, "--all-ranks").exit_code, 0);
  EXPECT_EQ(read_file(out + "/rank_0/main.json"), old_main);
}

// A full disk, as the file size limit makes one: with SIGXFSZ ignored the
// write fails (EFBIG) and transpile exits 1; by default SIGXFSZ ends it in
// the middle of the write. Either way the old pair stays, nothing staged.
TEST(TranspilerCliOutput, AFullDiskOrASignalMidWriteKeepsTheOldPair) {
  test::TempDir dir("transpile_full");
  const std::string out = dir / "out";
  fs::create_directories(out);
  write_file_atomically(out + "/startup.json", "old startup");
  write_file_atomically(out + "/main.json", "old main");
  // 12 KB (dash counts 512-byte blocks): startup (about 9 KB) fits, main (about 18 KB) does not.
  const test::CommandResult full = transpile(out, "--rank 0", "trap '' XFSZ; ulimit -f 24; ");
  EXPECT_EQ(full.exit_code, 1) << full.output;
  EXPECT_NE(full.output.find("main.json: write failed: File too large"), std::string::npos)
      << full.output;
  const test::CommandResult killed = transpile(out, "--rank 0", "ulimit -f 24; exec ");
  EXPECT_EQ(killed.exit_code, -1) << killed.output;  // ended by SIGXFSZ
  for (const char* name : {"/startup.json", "/main.json"})
    EXPECT_EQ(read_file(out + name).substr(0, 4), "old ") << name;
  EXPECT_EQ(staged_leftovers(dir.path()), std::vector<std::string>{});
}

TEST(TranspilerCliOutput, OutputsThatAreNotRegularFilesAreRefusedAndModesKept) {
  test::TempDir dir("transpile_kinds");
  const std::string out = dir / "out";
  ASSERT_EQ(transpile(out, "--rank 0").exit_code, 0);
  ASSERT_EQ(::chmod((out + "/main.json").c_str(), 0600), 0);
  ASSERT_EQ(transpile(out, "--rank 1").exit_code, 0);
  struct stat st {};
  ASSERT_EQ(::stat((out + "/main.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);  // the replaced file kept its mode

  write_file_atomically(dir / "elsewhere", "kept");
  fs::remove(out + "/startup.json");
  fs::create_symlink(dir / "elsewhere", out + "/startup.json");
  const test::CommandResult link = transpile(out, "--rank 0");
  EXPECT_EQ(link.exit_code, 1) << link.output;
  EXPECT_NE(link.output.find("startup.json: is a symbolic link, not a regular file"),
            std::string::npos)
      << link.output;
  EXPECT_TRUE(fs::is_symlink(out + "/startup.json"));
  EXPECT_EQ(read_file(dir / "elsewhere"), "kept");

  // A special file of the test's own (a broken check must not replace the
  // machine's /dev/null).
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0666), 0);
  const test::CommandResult fifo = test::run_command(
      std::string(CTP_CLI_PATH) + " dump " + out + "/main.json -o " + (dir / "fifo"));
  EXPECT_EQ(fifo.exit_code, 1) << fifo.output;
  EXPECT_NE(fifo.output.find("fifo: is a pipe, not a regular file"), std::string::npos)
      << fifo.output;
  EXPECT_FALSE(fs::is_regular_file(dir / "fifo"));
}

}  // namespace
}  // namespace ctp
