#include "executor/threads/thread_group.h"

#include <climits>
#include <cstring>
#include <functional>
#include <vector>

#include "executor/runtime/communicator_reduce.h"
#include "executor/rendezvous/rendezvous_socket.h"
#include "program_ir/error.h"

namespace ctp {

// What one thread brings to a collective: enough to check that all threads
// agree, and the addresses the others read from and write to.
struct Post {
  std::string_view op;
  DataType dtype = DataType::FP32;
  int64_t numel = 0;
  int root = -1;
  void* data = nullptr;        // in-place buffer or output
  const void* in = nullptr;    // all_gather's input
  const std::string* bytes = nullptr;  // share_from_leader
  bool operator==(const Post& o) const {
    return op == o.op && dtype == o.dtype && numel == o.numel && root == o.root;
  }
};

// A generation barrier over the group's mutex: the last thread to arrive
// opens it for all. Payloads posted before arriving are stable until the
// next arrival of every thread, so a collective is post, meet, work, meet.
class ThreadGroup::Meeting {
 public:
  Meeting(ThreadGroup& group, int channel)
      : group_(group), channel_(channel), posts_(group.size_), arrived_(group.size_, false) {}

  std::vector<Post>& posts() { return posts_; }

  void meet(int rank, net::Deadline deadline, const SourceLocation& at) {
    std::unique_lock<std::mutex> lock(group_.mu_);
    if (group_.aborted_) throw CommAbortedError(at, "aborted: " + group_.abort_reason_);
    uint64_t gen = generation_;
    arrived_[rank] = true;
    if (++count_ == group_.size_) {
      count_ = 0;
      std::fill(arrived_.begin(), arrived_.end(), false);
      ++generation_;
      cv_.notify_all();
      return;
    }
    while (generation_ == gen) {
      if (group_.aborted_) throw CommAbortedError(at, "aborted: " + group_.abort_reason_);
      if (cv_.wait_until(lock, deadline) == std::cv_status::timeout && generation_ == gen) {
        std::string missing;
        for (int r = 0; r < group_.size_; ++r)
          if (!arrived_[r]) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
        std::string message = "timed out after " +
                              net::duration_text(group_.options_.timeout) +
                              " waiting for thread rank(s) " + missing +
                              " (stalled, failed, or running a different collective schedule)";
        abort_locked("thread rank " + std::to_string(rank) + " on ring " +
                     std::to_string(channel_) + " timed out waiting for rank(s) " + missing);
        throw Error(at, message);
      }
    }
  }

  void notify_all() { cv_.notify_all(); }

 private:
  void abort_locked(const std::string& reason) {
    if (!group_.aborted_) {
      group_.aborted_ = true;
      group_.abort_reason_ = reason;
    }
    for (auto& [ch, m] : group_.meetings_) m->cv_.notify_all();
  }

  ThreadGroup& group_;
  int channel_;
  std::vector<Post> posts_;
  std::vector<bool> arrived_;
  int count_ = 0;
  uint64_t generation_ = 0;
  std::condition_variable cv_;
};

namespace {

constexpr int kControlChannel = INT_MIN;  // share_from_leader; rings use their ids

class ThreadCommunicator final : public Communicator {
 public:
  ThreadCommunicator(std::shared_ptr<ThreadGroup> group, int rank, int ring_id)
      : group_(std::move(group)), meeting_(group_->meeting(ring_id)), rank_(rank),
        ring_id_(ring_id) {}

  int rank() const override { return rank_; }
  int size() const override { return group_->size(); }
  int ring_id() const override { return ring_id_; }
  std::string backend() const override { return "threads"; }

  void all_reduce(Tensor& tensor, ReduceOp op) override {
    const SourceLocation at = place("all_reduce(" + std::string(to_string(op)) + ")", &tensor);
    if (!is_reducible(tensor.dtype()))
      throw Error(at, "all-reduce of " + std::string(ctp::to_string(tensor.dtype())) +
                  " is not supported");
    std::string_view kind = op_name(op);
    auto deadline = net::deadline_after(group_->options().timeout);
    auto& posts = meeting_.posts();
    posts[rank_] = Post{kind, tensor.dtype(), tensor.numel(), -1, tensor.raw_data(), nullptr, nullptr};
    meeting_.meet(rank_, deadline, at);
    check_agreement(at);
    // Each thread reduces its slice over all threads in rank order (so every
    // thread ends with bit-identical values), then writes it to all of them.
    std::size_t n = static_cast<std::size_t>(tensor.numel());
    std::size_t esize = element_size(tensor.dtype());
    std::size_t lo = n * rank_ / size(), hi = n * (rank_ + 1) / size();
    std::vector<char> slice((hi - lo) * esize);
    if (hi > lo) {
      std::memcpy(slice.data(), static_cast<char*>(posts[0].data) + lo * esize, slice.size());
      for (int k = 1; k < size(); ++k)
        reduce_elements(tensor.dtype(), op, slice.data(), slice.data(),
                        static_cast<char*>(posts[k].data) + lo * esize, hi - lo);
    }
    meeting_.meet(rank_, deadline, at);  // nobody reads the inputs any more
    for (int k = 0; k < size(); ++k)
      if (hi > lo) std::memcpy(static_cast<char*>(posts[k].data) + lo * esize, slice.data(), slice.size());
    meeting_.meet(rank_, deadline, at);  // every slice is written everywhere
  }

  void broadcast(Tensor& tensor, int root) override {
    const SourceLocation at = place("broadcast(root " + std::to_string(root) + ")", &tensor);
    if (root < 0 || root >= size())
      throw Error(at, "root " + std::to_string(root) + " is not a rank of this ring");
    auto deadline = net::deadline_after(group_->options().timeout);
    auto& posts = meeting_.posts();
    posts[rank_] = Post{"broadcast", tensor.dtype(), tensor.numel(), root, tensor.raw_data(), nullptr, nullptr};
    meeting_.meet(rank_, deadline, at);
    check_agreement(at);
    if (rank_ != root) std::memcpy(tensor.raw_data(), posts[root].data, tensor.bytes());
    meeting_.meet(rank_, deadline, at);
  }

  void all_gather(const Tensor& in, Tensor& out) override {
    check_all_gather_output(in, out);
    const SourceLocation at = place("all_gather", &in);
    auto deadline = net::deadline_after(group_->options().timeout);
    auto& posts = meeting_.posts();
    posts[rank_] = Post{"all_gather", in.dtype(), in.numel(), -1, out.raw_data(), in.raw_data(), nullptr};
    meeting_.meet(rank_, deadline, at);
    check_agreement(at);
    for (int k = 0; k < size(); ++k)
      std::memcpy(static_cast<char*>(out.raw_data()) + k * in.bytes(), posts[k].in, in.bytes());
    meeting_.meet(rank_, deadline, at);
  }

  void barrier() override {
    const SourceLocation at = place("barrier");
    auto deadline = net::deadline_after(group_->options().timeout);
    meeting_.posts()[rank_] = Post{"barrier", DataType::FP32, 0, -1, nullptr, nullptr, nullptr};
    meeting_.meet(rank_, deadline, at);
    check_agreement(at);
    meeting_.meet(rank_, deadline, at);
  }

  void abort(const std::string& reason) override { group_->abort(reason); }

 private:
  static std::string_view op_name(ReduceOp op) {
    switch (op) {
      case ReduceOp::Sum: return "all_reduce(sum)";
      case ReduceOp::Max: return "all_reduce(max)";
      case ReduceOp::Min: return "all_reduce(min)";
      case ReduceOp::Prod: return "all_reduce(prod)";
    }
    return "all_reduce";
  }

  static std::string describe(const Post& p) {
    std::string s(p.op);
    if (p.op != "barrier") s += " " + std::string(ctp::to_string(p.dtype)) + "[" + std::to_string(p.numel) + "]";
    if (p.root >= 0) s += " root " + std::to_string(p.root);
    return s;
  }

  // All threads see the same posts, so all of them throw together.
  void check_agreement(const SourceLocation& at) {
    const auto& posts = meeting_.posts();
    for (int k = 1; k < size(); ++k)
      if (!(posts[k] == posts[0]))
        throw Error(at, "the threads of the ring disagree: thread rank 0 called " +
                    describe(posts[0]) + " but thread rank " + std::to_string(k) + " called " +
                    describe(posts[k]));
  }

  std::shared_ptr<ThreadGroup> group_;
  ThreadGroup::Meeting& meeting_;
  int rank_;
  int ring_id_;
};

}  // namespace

ThreadGroup::ThreadGroup(int size, CommOptions options) : size_(size), options_(options) {
  if (size < 1) throw Error("a thread group needs at least one thread, not " + std::to_string(size));
}

ThreadGroup::~ThreadGroup() = default;

ThreadGroup::Meeting& ThreadGroup::meeting(int channel) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& m = meetings_[channel];
  if (!m) m = std::make_unique<Meeting>(*this, channel);
  return *m;
}

std::unique_ptr<Communicator> ThreadGroup::make_communicator(int local_rank, int ring_id) {
  if (local_rank < 0 || local_rank >= size_)
    throw Error("thread rank " + std::to_string(local_rank) + " is outside a group of " +
                std::to_string(size_));
  if (ring_id == kControlChannel) throw Error("ring id " + std::to_string(ring_id) + " is reserved");
  return std::make_unique<ThreadCommunicator>(shared_from_this(), local_rank, ring_id);
}

std::string ThreadGroup::share_from_leader(int local_rank, const std::string& bytes,
                                           std::string_view what) {
  const SourceLocation at{.rank = local_rank, .nranks = size_, .backend = "threads",
                          .collective = std::string(what)};
  if (size_ == 1) return bytes;
  Meeting& m = meeting(kControlChannel);
  auto deadline = net::deadline_after(options_.timeout);
  m.posts()[local_rank] = Post{"share", DataType::UINT8, 0, 0, nullptr, nullptr, &bytes};
  m.meet(local_rank, deadline, at);
  std::string out = *m.posts()[0].bytes;
  m.meet(local_rank, deadline, at);
  return out;
}

void ThreadGroup::abort(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!aborted_) {
    aborted_ = true;
    abort_reason_ = reason;
  }
  for (auto& [ch, m] : meetings_) m->notify_all();
}

bool ThreadGroup::aborted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return aborted_;
}

}  // namespace ctp
