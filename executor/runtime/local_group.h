// The device threads of one process that run one program together (the
// single-process multi-device modes), as the runtime and the kernels see
// them: how the threads share bytes that one of them fetched (a ring's
// unique id) and how one failure stops them all. The in-process backend
// (executor/threads/thread_group.h) implements it and also makes the rings
// among the threads; nothing above the runtime needs to know which.
#pragma once
#include <string>
#include <string_view>

namespace ctp {

class LocalGroup {
 public:
  virtual ~LocalGroup() = default;
  virtual int size() const = 0;
  // Every thread calls this once; all return local rank 0's `bytes`. Throws
  // ctp::Error prefixed with `what` after the group's timeout or an abort.
  virtual std::string share_from_leader(int local_rank, const std::string& bytes,
                                        std::string_view what) = 0;
  // Ends every pending and future wait of the group with an error.
  virtual void abort(const std::string& reason) = 0;
};

}  // namespace ctp
