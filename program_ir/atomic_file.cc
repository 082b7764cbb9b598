#include "program_ir/atomic_file.h"

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <optional>
#include <set>
#include <vector>

#include "program_ir/error.h"
#include "program_ir/file_sink.h"

namespace ctp {
namespace {

namespace fs = std::filesystem;

// --- what the signal handler may touch: fixed memory, atomics only ---

// One OutputSet's staging directory, as the handler sees it. Staged files
// are named 0..files-1, the commit's backups b0..b<files-1>.
struct StagingSlot {
  std::atomic<bool> in_use{false};  // claimed by an OutputSet
  std::atomic<bool> ready{false};   // dir and files published for the handler
  std::atomic<bool> committing{false};
  std::atomic<int> files{0};
  char dir[PATH_MAX] = {};
};
constexpr int kSlots = 16;  // OutputSets in flight at once; more go without signal cleanup
StagingSlot g_slots[kSlots];

constexpr int kCleanupSignals[] = {SIGHUP,  SIGINT,    SIGQUIT, SIGTERM, SIGPIPE,
                                   SIGALRM, SIGUSR1,   SIGUSR2, SIGXCPU, SIGXFSZ,
                                   SIGVTALRM, SIGPROF, SIGPWR,  SIGABRT};

// "dir/<prefix><n>" into `out` (async-signal-safe).
void staged_name(const char* dir, const char* prefix, int n, char* out, std::size_t size) {
  std::size_t len = 0;
  auto put = [&](char c) {
    if (len + 1 < size) out[len++] = c;
  };
  for (const char* p = dir; *p; ++p) put(*p);
  put('/');
  for (const char* p = prefix; *p; ++p) put(*p);
  char digits[16];
  int d = 0;
  do {
    digits[d++] = static_cast<char>('0' + n % 10);
    n /= 10;
  } while (n > 0);
  while (d > 0) put(digits[--d]);
  out[len] = '\0';
}

void remove_staged(const char* dir, int files) {
  char path[PATH_MAX + 32];
  for (int i = 0; i < files; ++i)
    for (const char* prefix : {"", "b"}) {
      staged_name(dir, prefix, i, path, sizeof path);
      ::unlink(path);
    }
  ::rmdir(dir);
}

void on_terminating_signal(int sig) {
  const int saved = errno;
  for (StagingSlot& slot : g_slots) {
    if (!slot.ready.load()) continue;
    // A commit in another thread finishes first (it holds signals in its
    // own): its renames are all done or all undone when it returns.
    for (int spins = 0; slot.committing.load() && spins < 1000000; ++spins) ::sched_yield();
    // Another thread may be staging its next file meanwhile (`ctp transpile`
    // stages startup's and main's on two threads): one it creates after
    // `files` was read keeps the directory from going, and goes in the next
    // round; once the directory is gone, none can be created.
    for (int round = 0; round < 1000; ++round) {
      remove_staged(slot.dir, slot.files.load());
      if (::access(slot.dir, F_OK) != 0) break;
      ::sched_yield();
    }
  }
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(sig, &dfl, nullptr);
  errno = saved;
  ::raise(sig);  // delivered with the default action when the handler returns
}

StagingSlot* claim_slot(const std::string& dir) {
  if (dir.size() >= PATH_MAX) return nullptr;
  for (StagingSlot& slot : g_slots) {
    bool expected = false;
    if (!slot.in_use.load() && slot.in_use.compare_exchange_strong(expected, true)) {
      std::memcpy(slot.dir, dir.c_str(), dir.size() + 1);
      slot.files.store(0);
      slot.ready.store(true);  // the handler reads dir and files only after this
      return &slot;
    }
  }
  return nullptr;
}

// Holds the catchable terminating signals in this thread for a scope.
class SignalHold {
 public:
  SignalHold() {
    sigset_t set;
    sigemptyset(&set);
    for (int sig : kCleanupSignals) sigaddset(&set, sig);
    ::pthread_sigmask(SIG_BLOCK, &set, &old_);
  }
  ~SignalHold() { ::pthread_sigmask(SIG_SETMASK, &old_, nullptr); }

 private:
  sigset_t old_;
};

// --- plain file helpers ---

std::string errno_text(int err) { return std::strerror(err); }

// Copies what is left of `from` to `to`: in the kernel (copy_file_range)
// where the file systems allow it, else through a buffer.
void copy_file_contents(int from, int to, const std::string& path) {
  for (;;) {
    const ssize_t n = ::copy_file_range(from, nullptr, to, nullptr, std::size_t{1} << 30, 0);
    if (n > 0) continue;
    if (n == 0) return;
    if (errno == EINTR) continue;
    if (errno == EXDEV || errno == ENOSYS || errno == EOPNOTSUPP || errno == EINVAL) break;
    throw Error(path + ": write failed: " + errno_text(errno));
  }
  std::string buffer(std::size_t{1} << 20, '\0');
  for (;;) {
    const ssize_t n = ::read(from, buffer.data(), buffer.size());
    if (n == 0) return;
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(path + ": cannot read the staged copy: " + errno_text(errno));
    }
    write_all(to, std::string_view(buffer.data(), static_cast<std::size_t>(n)), path);
  }
}

// "a directory", "a symbolic link", ... for an existing output that is not
// a regular file.
const char* not_regular_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  if (S_ISFIFO(mode)) return "a pipe";
  if (S_ISSOCK(mode)) return "a socket";
  return nullptr;
}

// The existing file at `path` if it is a regular file; nullopt if there is
// none; ctp::Error if something else is there.
std::optional<struct stat> existing_output(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return std::nullopt;
    throw Error(path + ": cannot inspect the existing output: " + errno_text(errno));
  }
  if (const char* kind = not_regular_kind(st.st_mode))
    throw Error(path + ": is " + std::string(kind) +
                ", not a regular file: refusing to replace it with the output");
  return st;
}

void sync_directory(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);  // best effort: the renames are done either way
  ::close(fd);
}

std::string parent_of(const std::string& path) {
  fs::path p(path);
  return p.has_parent_path() ? p.parent_path().string() : std::string(".");
}

}  // namespace

std::string read_file(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw Error(path + ": is a directory, expected a program file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open: " + std::strerror(errno));
  // One sized read: streaming through an ostringstream costs ~2.5x on large
  // programs. A pipe or a device has no size up front (and cannot seek).
  if (fs::is_regular_file(path, ec)) {
    const std::uintmax_t size = fs::file_size(path, ec);
    if (!ec) {
      std::string contents(static_cast<std::size_t>(size), '\0');
      if (!in.read(contents.data(), static_cast<std::streamsize>(size)))
        throw Error(path + ": read failed");
      return contents;
    }
  }
  std::string contents{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (in.bad()) throw Error(path + ": read failed");
  return contents;
}

struct OutputSet::State {
  struct Entry {
    std::string target;
    int index = 0;
    bool backed_up = false;
  };
  std::string staging_parent;
  std::mutex mu;
  std::string staging;  // created at the first stage()
  StagingSlot* slot = nullptr;
  int next_index = 0;
  std::vector<Entry> entries;
  std::set<std::string> targets;
  std::vector<std::string> created_dirs;  // in creation order
  bool committed = false;
  bool discarded = false;

  std::string staged(const char* prefix, int index) const {
    return staging + "/" + prefix + std::to_string(index);
  }
  // Under mu.
  void ensure_staging(const std::string& for_path) {
    if (!staging.empty()) return;
    std::string tmpl = (fs::path(staging_parent) / ".ctp-partial-XXXXXX").string();
    if (!::mkdtemp(tmpl.data()))
      throw Error(for_path + ": cannot create a staging directory in '" + staging_parent +
                  "': " + errno_text(errno));
    staging = tmpl;
    slot = claim_slot(staging);
  }
  int allocate_index() {
    const int index = next_index++;
    if (slot) slot->files.store(next_index);
    return index;
  }
  void back_up(Entry& e);
  void rename_all();
  void discard();
};

OutputSet::OutputSet(std::string staging_parent) : state_(std::make_unique<State>()) {
  state_->staging_parent = std::move(staging_parent);
}

OutputSet::~OutputSet() {
  if (!state_->committed) state_->discard();
  if (state_->slot) {
    state_->slot->ready.store(false);
    state_->slot->in_use.store(false);
  }
}

void OutputSet::State::discard() {
  if (discarded) return;
  discarded = true;
  if (!staging.empty()) remove_staged(staging.c_str(), next_index);
  for (auto it = created_dirs.rbegin(); it != created_dirs.rend(); ++it) ::rmdir(it->c_str());
}

void OutputSet::make_directories(const std::string& dir) {
  std::lock_guard<std::mutex> lock(state_->mu);
  std::vector<fs::path> missing;
  std::error_code ec;
  for (fs::path p = fs::path(dir).lexically_normal(); !p.empty() && !fs::exists(p, ec);
       p = p.parent_path()) {
    missing.push_back(p);
    if (p == p.parent_path()) break;
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (::mkdir(it->c_str(), 0777) != 0 && errno != EEXIST)
      throw Error("cannot create directory '" + it->string() + "': " + errno_text(errno));
    state_->created_dirs.push_back(it->string());
  }
  if (!fs::is_directory(dir, ec))
    throw Error("cannot create directory '" + dir + "': a file of that name is in the way");
}

void OutputSet::stage(const std::string& path, std::string_view contents) {
  stage_with(path, [&](int fd) { write_all(fd, contents, path); });
}

void OutputSet::stage_streamed(const std::string& path,
                               const std::function<void(ByteSink&)>& write) {
  stage_with(path, [&](int fd) {
    FileSink sink(fd, path);
    write(sink);
    sink.flush();
  });
}

void OutputSet::stage_copy(const std::string& path, const std::string& staged_path) {
  std::string source;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    for (const State::Entry& e : state_->entries)
      if (e.target == staged_path) source = state_->staged("", e.index);
  }
  if (source.empty())
    throw Error(path + ": cannot copy '" + staged_path + "': it is not staged in this output set");
  int from = ::open(source.c_str(), O_RDONLY | O_CLOEXEC);
  if (from < 0) throw Error(path + ": cannot open the staged '" + staged_path + "': " +
                            errno_text(errno));
  try {
    stage_with(path, [&](int fd) { copy_file_contents(from, fd, path); });
  } catch (...) {
    ::close(from);
    throw;
  }
  ::close(from);
}

void OutputSet::stage_with(const std::string& path, const std::function<void(int fd)>& fill) {
  const std::optional<struct stat> old = existing_output(path);
  int index = 0;
  std::string file;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (!state_->targets.insert(path).second) throw Error(path + ": staged twice in one output set");
    state_->ensure_staging(path);
    index = state_->allocate_index();
    file = state_->staged("", index);
  }
  int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) throw Error(path + ": cannot create its staging file: " + errno_text(errno));
  try {
    fill(fd);
    if (old) {  // the replacement keeps the file's owner (where allowed) and mode
      (void)!::fchown(fd, old->st_uid, old->st_gid);
      if (::fchmod(fd, old->st_mode & 07777) != 0)
        throw Error(path + ": cannot keep its mode: " + errno_text(errno));
    }
    if (::fsync(fd) != 0) throw Error(path + ": write failed: " + errno_text(errno));
  } catch (...) {
    ::close(fd);
    ::unlink(file.c_str());
    throw;
  }
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(file.c_str());
    throw Error(path + ": write failed: " + errno_text(err));
  }
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->entries.push_back(State::Entry{path, index, false});
}

// Keeps the output's current contents (a hard link, else a copy) so a
// failed commit can put them back.
void OutputSet::State::back_up(Entry& e) {
  if (!existing_output(e.target)) return;
  const std::string backup = staged("b", e.index);
  if (::link(e.target.c_str(), backup.c_str()) != 0) {
    const std::string old = read_file(e.target);
    int fd = ::open(backup.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) throw Error(e.target + ": cannot keep a copy of it: " + errno_text(errno));
    try {
      write_all(fd, old, e.target);
    } catch (...) {
      ::close(fd);
      throw;
    }
    ::close(fd);
  }
  e.backed_up = true;
}

void OutputSet::State::rename_all() {
  for (std::size_t k = 0; k < entries.size(); ++k) {
    const Entry& e = entries[k];
    if (::rename(staged("", e.index).c_str(), e.target.c_str()) == 0) continue;
    const int err = errno;
    for (std::size_t j = 0; j < k; ++j) {  // undo the ones already in place
      const Entry& done = entries[j];
      if (done.backed_up)
        ::rename(staged("b", done.index).c_str(), done.target.c_str());
      else
        ::unlink(done.target.c_str());
    }
    throw Error(e.target + ": cannot rename the output into place: " + errno_text(err) +
                " (no output was changed)");
  }
}

void OutputSet::commit() {
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.committed) return;
  SignalHold hold;
  if (s.slot) s.slot->committing.store(true);
  struct Done {
    StagingSlot* slot;
    ~Done() {
      if (slot) slot->committing.store(false);
    }
  } done{s.slot};
  try {
    for (State::Entry& e : s.entries) s.back_up(e);
    s.rename_all();
  } catch (...) {
    s.discard();  // the outputs are as they were: the staged files go now
    throw;
  }
  std::set<std::string> dirs;
  for (const State::Entry& e : s.entries) {
    if (e.backed_up) ::unlink(s.staged("b", e.index).c_str());
    dirs.insert(parent_of(e.target));
  }
  for (const std::string& dir : dirs) sync_directory(dir);
  if (!s.staging.empty()) ::rmdir(s.staging.c_str());
  s.committed = true;
}

std::string existing_ancestor(const std::string& path) {
  std::filesystem::path dir = std::filesystem::path(path).lexically_normal();
  while (!dir.empty() && !std::filesystem::exists(dir)) dir = dir.parent_path();
  return dir.empty() ? "." : dir.string();
}

void write_file_atomically(const std::string& path, std::string_view contents) {
  OutputSet output(parent_of(path));
  output.stage(path, contents);
  output.commit();
}

void remove_staged_outputs_on_signals() {
  for (int sig : kCleanupSignals) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) != 0) continue;
    if ((old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL) continue;
    struct sigaction sa {};
    sa.sa_handler = on_terminating_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    ::sigaction(sig, &sa, nullptr);
  }
}

}  // namespace ctp
