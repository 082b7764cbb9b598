#include "executor/gloo/gloo_communicator.h"

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/device.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "executor/runtime/communicator_reduce.h"
#include "executor/gloo/gloo_store.h"
#include "executor/rendezvous/peer_liveness.h"

namespace ctp {
namespace {

// Gloo writes to its sockets with writev(2), which raises SIGPIPE when the
// peer is gone: that would kill the worker silently instead of letting the
// error name the dead peer. SIGPIPE is blocked in the calling thread while
// Gloo works (and in Gloo's event-loop thread, which inherits the mask when
// the device creates it); a SIGPIPE raised meanwhile is discarded before the
// mask is restored. The process's signal dispositions are left alone.
class SigpipeBlock {
 public:
  SigpipeBlock() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &set, &old_);
  }
  ~SigpipeBlock() {
    if (sigismember(&old_, SIGPIPE)) return;
    sigset_t pending;
    sigpending(&pending);
    if (sigismember(&pending, SIGPIPE)) {
      sigset_t set;
      sigemptyset(&set);
      sigaddset(&set, SIGPIPE);
      timespec zero{0, 0};
      sigtimedwait(&set, nullptr, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }

 private:
  sigset_t old_;
};

bool is_loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

// Heartbeats every tenth of the timeout (10 ms to 1 s); a peer silent for
// half the timeout (at least three beats, at most 10 s) has stalled.
std::chrono::milliseconds heartbeat_interval(const CommOptions& o) {
  return std::clamp<std::chrono::milliseconds>(o.timeout / 10, std::chrono::milliseconds(10),
                                               std::chrono::seconds(1));
}
std::chrono::milliseconds stall_threshold(const CommOptions& o) {
  return std::max<std::chrono::milliseconds>(
      3 * heartbeat_interval(o),
      std::min<std::chrono::milliseconds>(o.timeout / 2, std::chrono::seconds(10)));
}

std::string default_label() {
  char host[256] = {0};
  ::gethostname(host, sizeof(host) - 1);
  return std::string(host) + " pid " + std::to_string(::getpid());
}

class GlooCommunicator final : public Communicator {
 public:
  GlooCommunicator(const GlooRingSetup& setup, std::unique_ptr<PeerLiveness> liveness,
                   std::shared_ptr<gloo::transport::Device> device,
                   std::shared_ptr<gloo::rendezvous::Context> context)
      : setup_(setup), liveness_(std::move(liveness)), device_(std::move(device)),
        context_(std::move(context)) {}

  ~GlooCommunicator() override {
    // Goodbye first (saying whether this rank stops after a failure), so
    // that the peers do not report it as dead when its connections close.
    if (liveness_ && !broken_.empty()) liveness_->mark_failed();
    liveness_.reset();
    SigpipeBlock guard;
    context_.reset();
    device_.reset();
  }

  int rank() const override { return setup_.rank; }
  int size() const override { return setup_.size; }
  int ring_id() const override { return setup_.ring_id; }
  std::string backend() const override { return "gloo"; }

  void all_reduce(Tensor& tensor, ReduceOp op) override {
    const SourceLocation at = place("all_reduce(" + std::string(to_string(op)) + ")", &tensor);
    DataType dtype = tensor.dtype();
    if (!is_reducible(dtype))
      throw Error(at, "all-reduce of " + std::string(ctp::to_string(dtype)) +
                  " is not supported");
    if (tensor.numel() == 0 || size() == 1) return;
    run(at, [&] {
      auto& opts = start_op<gloo::AllreduceOptions>();
      set_typed_output(opts, tensor.raw_data(), tensor.numel(), element_size(dtype));
      opts.setReduceFunction([dtype, op](void* out, const void* a, const void* b, size_t n) {
        reduce_elements(dtype, op, out, a, b, n);
      });
      opts.setTimeout(setup_.options.timeout);
      gloo::allreduce(opts);
    });
  }

  void broadcast(Tensor& tensor, int root) override {
    const SourceLocation at = place("broadcast(root " + std::to_string(root) + ")", &tensor);
    if (root < 0 || root >= size())
      throw Error(at, "root " + std::to_string(root) + " is not a rank of this ring");
    if (tensor.bytes() == 0 || size() == 1) return;
    run(at, [&] {
      auto& opts = start_op<gloo::BroadcastOptions>();
      opts.setOutput(static_cast<uint8_t*>(tensor.raw_data()), tensor.bytes());
      opts.setRoot(root);
      opts.setTimeout(setup_.options.timeout);
      gloo::broadcast(opts);
    });
  }

  void all_gather(const Tensor& in, Tensor& out) override {
    check_all_gather_output(in, out);
    const SourceLocation at = place("all_gather", &in);
    if (in.bytes() == 0) return;
    if (size() == 1) {
      std::memcpy(out.raw_data(), in.raw_data(), in.bytes());
      return;
    }
    run(at, [&] {
      auto& opts = start_op<gloo::AllgatherOptions>();
      opts.setInput(static_cast<uint8_t*>(const_cast<void*>(in.raw_data())), in.bytes());
      opts.setOutput(static_cast<uint8_t*>(out.raw_data()), out.bytes());
      opts.setTimeout(setup_.options.timeout);
      gloo::allgather(opts);
    });
  }

  void barrier() override {
    if (size() == 1) return;
    run(place("barrier"), [&] {
      auto& opts = start_op<gloo::BarrierOptions>();
      opts.setTimeout(setup_.options.timeout);
      gloo::barrier(opts);
    });
  }

  void abort(const std::string& reason) override {
    // Gloo cannot interrupt an op in flight: that one ends at its timeout.
    // Every later op fails at once.
    std::lock_guard<std::mutex> lock(mu_);
    if (broken_.empty()) broken_ = "aborted: " + reason;
  }

 private:
  static void set_typed_output(gloo::AllreduceOptions& opts, void* data, int64_t n,
                               std::size_t esize) {
    auto count = static_cast<size_t>(n);
    switch (esize) {
      case 1: return opts.setOutput(static_cast<uint8_t*>(data), count);
      case 2: return opts.setOutput(static_cast<uint16_t*>(data), count);
      case 4: return opts.setOutput(static_cast<uint32_t*>(data), count);
      case 8: return opts.setOutput(static_cast<uint64_t*>(data), count);
      default: throw Error("unsupported element size " + std::to_string(esize));
    }
  }

  // The options of an op own Gloo's buffers; they are held here while the
  // op runs so that, when it fails, they outlive the connections (see run).
  template <typename Options>
  Options& start_op() {
    auto options = std::make_shared<Options>(context_);
    in_flight_ = options;
    return *options;
  }

  // After a failure Gloo's event-loop thread may still be completing or
  // failing the op's other buffers. Gloo makes ~UnboundBuffer wait for that
  // (gloo/common/memory.h: it spins on a weak_ptr), but with atomics inside
  // libgloo, which TSan cannot see. The event loop touches a buffer only
  // while it holds its pair's mutex, and a closed pair gets no more events:
  // closing every pair first orders all of that before the buffers die,
  // through locks TSan does see (CI's TSan stage found both orders:
  // ~UnboundBuffer against signalException and against handleSendCompletion).
  // The communicator runs no op after a failure, so its pairs are not needed.
  void release_failed_op() noexcept {
    try {
      context_->closeConnections();
    } catch (const std::exception&) {
      // A pair that cannot close is already closed or failed.
    }
    in_flight_.reset();
  }

  template <typename Fn>
  void run(const SourceLocation& at, Fn&& fn) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!broken_.empty())
        throw CommAbortedError(at, "the communicator is unusable after an earlier failure: " +
                               broken_);
    }
    auto started = net::Clock::now();
    try {
      SigpipeBlock guard;
      fn();
      in_flight_.reset();
    } catch (const std::exception& e) {
      bool timed_out = net::Clock::now() - started >= setup_.options.timeout;
      // Explained before this rank closes its connections, which the peers
      // would see as a failure of this rank.
      std::string message = explain_failure(timed_out) + " [gloo: " + e.what() + "]";
      release_failed_op();
      std::lock_guard<std::mutex> lock(mu_);
      if (broken_.empty()) broken_ = at.to_string() + ": " + message;
      throw Error(at, message);
    }
  }

  // Names the peers that died, stalled or left, from this rank's own view
  // of them (PeerLiveness: no store, so nothing depends on rank 0). A dead
  // peer's connections close at once, but its liveness connection may be
  // seen a moment after Gloo's, so an I/O failure waits briefly for it; a
  // timeout does not (a stalled peer has been silent for the timeout).
  std::string explain_failure(bool timed_out) {
    if (!liveness_) return timed_out ? "timed out after " + net::duration_text(setup_.options.timeout)
                                     : std::string("the connection to a peer failed");
    const auto grace =
        std::min<std::chrono::milliseconds>(std::chrono::seconds(2), setup_.options.timeout);
    if (!timed_out) liveness_->wait_for_departure(grace);
    std::vector<PeerLiveness::Peer> died, stalled, failed, left;
    // A peer that stopped after a failure of its own is often an echo: it
    // saw a third rank die first, and its goodbye can arrive before this
    // rank sees that death. So while only such peers are known, wait (up to
    // the grace) for the one that died.
    const auto until = net::Clock::now() + grace;
    for (;;) {
      died.clear(), stalled.clear(), failed.clear(), left.clear();
      for (PeerLiveness::Peer& p : liveness_->peers()) {
        switch (p.state) {
          case PeerLiveness::State::kDied: died.push_back(std::move(p)); break;
          case PeerLiveness::State::kStalled: stalled.push_back(std::move(p)); break;
          case PeerLiveness::State::kLeftAfterFailure: failed.push_back(std::move(p)); break;
          case PeerLiveness::State::kLeft: left.push_back(std::move(p)); break;
          case PeerLiveness::State::kAlive: break;
        }
      }
      if (timed_out || !died.empty() || !stalled.empty() || failed.empty() ||
          net::Clock::now() >= until)
        break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    auto list = [](const std::vector<PeerLiveness::Peer>& peers) {
      std::string out = peers.size() == 1 ? "peer " : "peers ";
      for (std::size_t i = 0; i < peers.size(); ++i)
        out += (i ? ", " : "") + std::string("rank ") + std::to_string(peers[i].rank) + " (" +
               peers[i].label + ")";
      return out;
    };
    std::vector<std::string> parts;
    if (!died.empty()) parts.push_back(list(died) + " died");
    if (!stalled.empty()) {
      std::string silent;
      for (const auto& p : stalled)
        silent += (silent.empty() ? "" : ", ") + net::duration_text(p.silent);
      parts.push_back(list(stalled) + " stalled (no sign of life for " + silent +
                      ": the process is stopped or hung)");
    }
    if (!failed.empty())
      parts.push_back(list(failed) + " stopped after a failure of " +
                      (failed.size() == 1 ? "its" : "their") + " own");
    if (!left.empty())
      parts.push_back(list(left) + " closed the communicator while this rank still ran "
                                   "collectives (the ranks ran different numbers of collectives)");
    std::string out;
    for (const std::string& part : parts) out += (out.empty() ? "" : "; ") + part;
    if (!out.empty()) return out;
    if (timed_out)
      return "timed out after " + net::duration_text(setup_.options.timeout) +
             " (no peer died or stalled: a peer is slow or runs a different collective schedule)";
    return "the connection to a peer failed";
  }

  GlooRingSetup setup_;
  std::unique_ptr<PeerLiveness> liveness_;  // null for a ring of one
  std::shared_ptr<gloo::transport::Device> device_;
  std::shared_ptr<gloo::rendezvous::Context> context_;
  std::mutex mu_;
  std::string broken_;  // the first failure; non-empty makes every later op fail
  std::shared_ptr<void> in_flight_;  // the options of the op now running (see start_op)
};

}  // namespace

std::unique_ptr<Communicator> connect_gloo_ring(const GlooRingSetup& setup) {
  const SourceLocation at{.rank = setup.rank, .nranks = setup.size, .ring = setup.ring_id,
                          .backend = "gloo", .collective = "connecting"};
  if (setup.size < 1 || setup.rank < 0 || setup.rank >= setup.size)
    throw Error(at, "rank must be in [0, nranks)");
  std::string label = setup.label.empty() ? default_label() : setup.label;
  std::shared_ptr<StoreClient> client;
  std::string bind_host = setup.bind_host;
  std::unique_ptr<PeerLiveness> liveness;
  try {
    client = std::make_shared<StoreClient>(setup.store, setup.rank, label, setup.options.timeout);
    if (bind_host.empty())
      bind_host = is_loopback(setup.store.endpoint.host) ? "127.0.0.1" : client->local_host();
    if (setup.size > 1) {
      liveness = std::make_unique<PeerLiveness>(setup.rank, setup.size, label, bind_host,
                                                setup.store.token, heartbeat_interval(setup.options),
                                                stall_threshold(setup.options));
      client->set("live/" + std::to_string(setup.rank), liveness->address());
    }
  } catch (const std::exception& e) {
    throw Error(at, e.what());
  }

  SigpipeBlock guard;  // Gloo's event-loop thread starts here and inherits the mask
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = bind_host;
    auto device = gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<gloo::rendezvous::Context>(setup.rank, setup.size);
    context->setTimeout(setup.options.timeout);
    GlooStore store(client, "gloo/");
    context->connectFullMesh(store, device);
    if (liveness) {
      std::vector<std::string> addresses;
      for (int r = 0; r < setup.size; ++r)
        addresses.push_back(client->get("live/" + std::to_string(r)));
      liveness->connect(addresses, net::deadline_after(setup.options.timeout));
    }
    // From here the ranks watch each other: the store (and rank 0, its
    // host) is no longer asked anything, so no rank's liveness depends on it.
    client->close();
    return std::make_unique<GlooCommunicator>(setup, std::move(liveness), device, context);
  } catch (const std::exception& e) {
    throw Error(at, "through the store at " + setup.store.endpoint.to_string() + ": " +
                e.what());
  }
}

}  // namespace ctp
