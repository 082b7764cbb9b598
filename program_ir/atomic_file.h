// Whole-file reads, and writes that replace their outputs all at once or
// not at all.
//
// An OutputSet stages every file (written and fsynced) in a private staging
// directory beside the outputs, then commit() renames them all into place.
// If anything fails before or during the commit, no output changes: an
// output already renamed in gets its old contents back, and directories the
// set created are removed again. Staged files are named by number
// (.ctp-partial-XXXXXX/0, /1, ...), so nothing left by a SIGKILL can be taken
// for an output. remove_staged_outputs_on_signals() makes the catchable
// terminating signals remove what is staged.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "program_ir/byte_sink.h"

namespace ctp {

// Throws ctp::Error naming the path when the file cannot be read.
std::string read_file(const std::string& path);

class OutputSet {
 public:
  // The staging directory is made in `staging_parent`, which must be on
  // the outputs' file system (their common directory).
  explicit OutputSet(std::string staging_parent);
  // Without commit(): removes everything staged and the directories this
  // set created; the outputs are as they were.
  ~OutputSet();
  OutputSet(const OutputSet&) = delete;
  OutputSet& operator=(const OutputSet&) = delete;

  // Creates `dir` and its missing parents (removed again without commit()).
  void make_directories(const std::string& dir);
  // Writes `contents` for `path`. An existing `path` must be a regular file
  // (not a directory, symlink or device: ctp::Error); the new file gets its
  // mode (and owner, where the process may set it), else 0666 & ~umask.
  // Thread-safe.
  void stage(const std::string& path, std::string_view contents);
  // The same, for an output that `write` appends to the sink piece by piece:
  // the pieces go to the staged file through a buffer as they come, so the
  // output is never whole in memory. If a write fails (a full disk, ...) or
  // `write` throws, the error propagates (ctp::Error naming `path`) and
  // nothing of the file stays staged. Thread-safe.
  void stage_streamed(const std::string& path, const std::function<void(ByteSink&)>& write);
  // The same, with the bytes of the file staged earlier in this set for
  // `staged_path`, copied file to file (by the kernel where it can: they are
  // not read into memory). Thread-safe.
  void stage_copy(const std::string& path, const std::string& staged_path);
  // Renames every staged file into place, or (ctp::Error) none. Catchable
  // signals are held in the calling thread meanwhile.
  void commit();

 private:
  // Stages `path` with what `fill` writes to the staged file's descriptor.
  void stage_with(const std::string& path, const std::function<void(int fd)>& fill);

  struct State;
  std::unique_ptr<State> state_;
};

// The deepest directory on `path` (`path` itself included) that exists, or
// "." when none of it does: where an OutputSet for outputs below `path` can
// stage, make_directories() making the rest.
std::string existing_ancestor(const std::string& path);

// An OutputSet of one file in its own directory.
void write_file_atomically(const std::string& path, std::string_view contents);

// For programs (the ctp tool, the sample trainer), not libraries: handlers
// for the catchable terminating signals (SIGINT, SIGTERM, SIGHUP, SIGQUIT,
// SIGPIPE, SIGABRT, ...) that remove every OutputSet's staged files, then
// let the signal end the process as before. Signals set to SIG_IGN stay so.
void remove_staged_outputs_on_signals();

}  // namespace ctp
