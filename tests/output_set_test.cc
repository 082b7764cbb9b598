// OutputSet (program_ir/atomic_file.h): every file of an output or none,
// what was there before kept on any failure, nothing staged left behind by a
// catchable signal, a leftover of SIGKILL that cannot pass for an output,
// and outputs that are not regular files refused.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <functional>

#include "program_ir/atomic_file.h"
#include "program_ir/error.h"
#include "tests/executor_process_util.h"

namespace ctp {
namespace {

namespace fs = std::filesystem;

// The staging directories left in `dir` (and their files).
std::vector<std::string> leftovers(const fs::path& dir) {
  std::vector<std::string> found;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    const std::string rel = fs::relative(e.path(), dir).string();
    if (rel.find(".ctp-partial-") != std::string::npos) found.push_back(rel);
  }
  return found;
}

// Runs `body` in a child process; returns its wait status.
int in_child(const std::function<void()>& body) {
  pid_t pid = ::fork();
  if (pid == 0) {
    body();
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

TEST(OutputSet, CommitsEveryFileTogether) {
  test::TempDir dir("output_set_commit");
  write_file_atomically(dir / "a", "old a");
  OutputSet out(dir.path().string());
  out.make_directories(dir / "sub/deeper");
  out.stage(dir / "a", "new a");
  out.stage(dir / "sub/deeper/b", "new b");
  EXPECT_EQ(read_file(dir / "a"), "old a");  // nothing visible before the commit
  EXPECT_FALSE(fs::exists(dir / "sub/deeper/b"));
  out.commit();
  EXPECT_EQ(read_file(dir / "a"), "new a");
  EXPECT_EQ(read_file(dir / "sub/deeper/b"), "new b");
  EXPECT_EQ(leftovers(dir.path()), std::vector<std::string>{});
}

TEST(OutputSet, AFailureBeforeTheCommitChangesNothing) {
  test::TempDir dir("output_set_abandon");
  write_file_atomically(dir / "a", "old a");
  fs::create_directories(dir / "b");  // in the way of output b
  {
    OutputSet out(dir.path().string());
    out.make_directories(dir / "new/dirs");
    out.stage(dir / "a", "new a");
    try {
      out.stage(dir / "b", "new b");
      FAIL();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("/b: is a directory, not a regular file: refusing to "
                                           "replace it"),
                std::string::npos)
          << e.what();
    }
  }  // abandoned
  EXPECT_EQ(read_file(dir / "a"), "old a");
  EXPECT_FALSE(fs::exists(dir / "new"));  // the directories it made are gone again
  EXPECT_EQ(leftovers(dir.path()), std::vector<std::string>{});
}

TEST(OutputSet, AFailedRenameInTheCommitPutsBackWhatWasThere) {
  test::TempDir dir("output_set_rollback");
  fs::create_directories(dir / "x");
  fs::create_directories(dir / "y");
  write_file_atomically(dir / "x/a", "old a");
  OutputSet out(dir.path().string());
  out.stage(dir / "x/a", "new a");
  out.stage(dir / "y/b", "new b");
  fs::remove(dir / "y");  // b's directory vanishes: its rename fails after a's
  EXPECT_THROW(out.commit(), Error);
  EXPECT_EQ(read_file(dir / "x/a"), "old a");
  EXPECT_EQ(leftovers(dir.path()), std::vector<std::string>{});
}

TEST(OutputSet, AReplacedFileKeepsItsModeAndOwner) {
  test::TempDir dir("output_set_mode");
  write_file_atomically(dir / "a", "old");
  ASSERT_EQ(::chmod((dir / "a").c_str(), 0640), 0);
  const bool root = ::geteuid() == 0;
  if (root) ASSERT_EQ(::chown((dir / "a").c_str(), 4321, 4322), 0);
  write_file_atomically(dir / "a", "new");
  struct stat st {};
  ASSERT_EQ(::stat((dir / "a").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  if (root) {
    EXPECT_EQ(st.st_uid, 4321u);
    EXPECT_EQ(st.st_gid, 4322u);
  }
  write_file_atomically(dir / "fresh", "x");  // a new file: 0666 less the umask
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ASSERT_EQ(::stat((dir / "fresh").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0666u & ~mask);
}

TEST(OutputSet, OutputsThatAreNotRegularFilesAreRefused) {
  test::TempDir dir("output_set_kinds");
  write_file_atomically(dir / "target", "kept");
  fs::create_symlink(dir / "target", dir / "link");
  EXPECT_THROW(write_file_atomically(dir / "link", "x"), Error);
  EXPECT_TRUE(fs::is_symlink(dir / "link"));
  EXPECT_EQ(read_file(dir / "target"), "kept");
  // Special files of the test's own (never the machine's /dev/null: a
  // broken check would replace it): a pipe, and as root a device node.
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0666), 0);
  std::vector<std::pair<std::string, std::string>> special = {{"fifo", "is a pipe"}};
  if (::geteuid() == 0 && ::mknod((dir / "device").c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0)
    special.push_back({"device", "is a device"});  // as root this was replaced by a file
  for (const auto& [name, kind] : special) {
    try {
      write_file_atomically(dir / name, "x");
      FAIL() << name;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(name + ": " + kind + ", not a regular file"),
                std::string::npos)
          << e.what();
    }
    struct stat st {};
    ASSERT_EQ(::lstat((dir / name).c_str(), &st), 0);
    EXPECT_FALSE(S_ISREG(st.st_mode)) << name;
  }
}

// A catchable signal in the middle of writing (SIGXFSZ from the file size
// limit, SIGTERM between two files) removes what was staged; the outputs
// stay as they were, and the process still dies by that signal.
TEST(OutputSet, ACatchableSignalLeavesNothingStaged) {
  test::TempDir dir("output_set_signal");
  write_file_atomically(dir / "a", "old a");
  const int xfsz = in_child([&] {
    remove_staged_outputs_on_signals();
    OutputSet out(dir.path().string());
    out.stage(dir / "a", "new a");
    rlimit limit{4096, 4096};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    out.stage(dir / "b", std::string(1 << 20, 'x'));  // SIGXFSZ part way through
    out.commit();
  });
  EXPECT_TRUE(WIFSIGNALED(xfsz) && WTERMSIG(xfsz) == SIGXFSZ) << xfsz;
  const int term = in_child([&] {
    remove_staged_outputs_on_signals();
    OutputSet out(dir.path().string());
    out.stage(dir / "a", "new a");
    ::raise(SIGTERM);
    out.stage(dir / "b", "new b");
    out.commit();
  });
  EXPECT_TRUE(WIFSIGNALED(term) && WTERMSIG(term) == SIGTERM) << term;
  EXPECT_EQ(read_file(dir / "a"), "old a");
  EXPECT_FALSE(fs::exists(dir / "b"));
  EXPECT_EQ(leftovers(dir.path()), std::vector<std::string>{});
}

// SIGKILL cannot be caught: what it leaves is a hidden staging directory
// whose files are numbered, never a file named like an output.
TEST(OutputSet, WhatSigkillLeavesCannotPassForAnOutput) {
  test::TempDir dir("output_set_sigkill");
  const int status = in_child([&] {
    OutputSet out(dir.path().string());
    out.stage(dir / "main.pb", "new main");
    ::raise(SIGKILL);
  });
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  EXPECT_FALSE(fs::exists(dir / "main.pb"));
  const std::vector<std::string> left = leftovers(dir.path());
  ASSERT_EQ(left.size(), 2u);  // the directory and its file "0"
  for (const std::string& name : left) EXPECT_EQ(name.find("main"), std::string::npos) << name;
  write_file_atomically(dir / "main.pb", "later");  // a later write is not disturbed by it
  EXPECT_EQ(read_file(dir / "main.pb"), "later");
}

}  // namespace
}  // namespace ctp
