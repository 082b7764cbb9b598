#include "executor/rendezvous/peer_liveness.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <optional>

namespace ctp {
namespace {

constexpr std::string_view kHelloMagic = "ctp-liveness/1";
constexpr char kBeat = 'H', kLeft = 'B', kLeftAfterFailure = 'F';

std::string hello(uint64_t token, int rank, const std::string& label) {
  char head[64];
  std::snprintf(head, sizeof head, "%.*s %016llx %d ", static_cast<int>(kHelloMagic.size()),
                kHelloMagic.data(), static_cast<unsigned long long>(token), rank);
  return head + label;
}

// The rank and label of a hello, or rank -1 when it is not one for `token`.
std::pair<int, std::string> parse_hello(const std::string& text, uint64_t token) {
  char expected[40];
  std::snprintf(expected, sizeof expected, " %016llx ", static_cast<unsigned long long>(token));
  if (text.rfind(kHelloMagic, 0) != 0) return {-1, ""};
  std::string_view rest = std::string_view(text).substr(kHelloMagic.size());
  if (rest.substr(0, 18) != expected) return {-1, ""};
  rest.remove_prefix(18);
  int rank = -1;
  auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), rank);
  if (ec != std::errc() || end == rest.data() + rest.size() || *end != ' ') return {-1, ""};
  return {rank, std::string(end + 1, rest.data() + rest.size())};
}

}  // namespace

struct PeerLiveness::Incoming {
  net::Socket socket;
  int rank = -1;
};

PeerLiveness::PeerLiveness(int rank, int size, std::string label, const std::string& host,
                           uint64_t token, std::chrono::milliseconds interval,
                           std::chrono::milliseconds stall_after)
    : rank_(rank), size_(size), label_(std::move(label)), token_(token), interval_(interval),
      stall_after_(stall_after), peers_(static_cast<std::size_t>(size)),
      heard_(static_cast<std::size_t>(size), net::Clock::now()),
      connected_(static_cast<std::size_t>(size), false) {
  listener_ = net::listen_on(host, 0, "the liveness of ring peers");
  address_ = net::Endpoint{host, net::local_port(listener_)}.to_string();
  outgoing_.resize(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) peers_[static_cast<std::size_t>(r)].rank = r;
  if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0)
    throw net::NetError("pipe failed: " + net::errno_text(errno));
  thread_ = std::thread([this] { watch(); });
}

PeerLiveness::~PeerLiveness() {
  char goodbye;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    goodbye = failed_ ? kLeftAfterFailure : kLeft;
  }
  beat(goodbye);
  char x = 1;
  (void)!::write(wake_[1], &x, 1);
  thread_.join();
  ::close(wake_[0]);
  ::close(wake_[1]);
}

void PeerLiveness::connect(const std::vector<std::string>& addresses, net::Deadline deadline) {
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    const net::Endpoint peer = net::parse_endpoint(addresses.at(static_cast<std::size_t>(r)),
                                                   "a peer's liveness address");
    std::string why;
    std::optional<net::Socket> s;
    while (!(s = net::try_connect(peer, deadline, &why)) && net::Clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (!s)
      throw Error("cannot reach rank " + std::to_string(r) + "'s liveness listener at " +
                  peer.to_string() + ": " + why);
    net::send_frame(*s, hello(token_, rank_, label_), deadline);
    std::lock_guard<std::mutex> lock(mu_);
    outgoing_[static_cast<std::size_t>(r)] = std::move(*s);
  }
  std::unique_lock<std::mutex> lock(mu_);
  auto all_in = [&] {
    for (int r = 0; r < size_; ++r)
      if (r != rank_ && !connected_[static_cast<std::size_t>(r)]) return false;
    return true;
  };
  if (!changed_.wait_until(lock, deadline, all_in)) {
    std::string missing;
    for (int r = 0; r < size_; ++r)
      if (r != rank_ && !connected_[static_cast<std::size_t>(r)])
        missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    throw Error("rank(s) " + missing + " did not connect to this rank's liveness listener");
  }
}

void PeerLiveness::mark_failed() {
  std::lock_guard<std::mutex> lock(mu_);
  failed_ = true;
}

std::vector<PeerLiveness::Peer> PeerLiveness::peers() const {
  std::lock_guard<std::mutex> lock(mu_);
  const auto now = net::Clock::now();
  std::vector<Peer> out;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    Peer p = peers_[static_cast<std::size_t>(r)];
    p.silent = std::chrono::duration_cast<std::chrono::milliseconds>(
        now - heard_[static_cast<std::size_t>(r)]);
    if (p.state == State::kAlive && p.silent >= stall_after_) p.state = State::kStalled;
    out.push_back(std::move(p));
  }
  return out;
}

void PeerLiveness::wait_for_departure(std::chrono::milliseconds limit) const {
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait_for(lock, limit, [&] {
    return std::any_of(peers_.begin(), peers_.end(),
                       [](const Peer& p) { return p.state != State::kAlive; });
  });
}

void PeerLiveness::beat(char what) {
  std::lock_guard<std::mutex> lock(mu_);
  for (net::Socket& s : outgoing_)
    if (s.valid() && ::send(s.fd(), &what, 1, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 &&
        errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
      s.close();  // that peer is gone; its own connection to us says how
}

void PeerLiveness::accept_one() {
  auto conn = net::accept_until(listener_, net::Clock::now());
  if (!conn) return;
  try {
    // A ring peer sends its hello at once; anyone else gets a second.
    auto text = net::recv_frame(*conn, 4096, net::deadline_after(std::chrono::seconds(1)));
    if (!text) return;
    auto [rank, label] = parse_hello(*text, token_);
    if (rank < 0 || rank >= size_ || rank == rank_) return;
    auto in = std::make_unique<Incoming>();
    in->socket = std::move(*conn);
    in->rank = rank;
    std::lock_guard<std::mutex> lock(mu_);
    Peer& p = peers_[static_cast<std::size_t>(rank)];
    p.label = label;
    heard_[static_cast<std::size_t>(rank)] = net::Clock::now();
    connected_[static_cast<std::size_t>(rank)] = true;
    incoming_.push_back(std::move(in));
    changed_.notify_all();
  } catch (const net::NetError&) {
    // a stranger or a broken connection: ignored
  }
}

void PeerLiveness::read_from(Incoming& in) {
  char buf[256];
  ssize_t n = ::recv(in.socket.fd(), buf, sizeof buf, MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
  std::lock_guard<std::mutex> lock(mu_);
  Peer& p = peers_[static_cast<std::size_t>(in.rank)];
  if (n <= 0) {  // closed: without a goodbye, the process died
    if (p.state == State::kAlive || p.state == State::kStalled) p.state = State::kDied;
    in.socket.close();
    changed_.notify_all();
    return;
  }
  heard_[static_cast<std::size_t>(in.rank)] = net::Clock::now();
  for (ssize_t i = 0; i < n; ++i) {
    if (buf[i] == kLeft) p.state = State::kLeft;
    if (buf[i] == kLeftAfterFailure) p.state = State::kLeftAfterFailure;
  }
  if (p.state != State::kAlive) changed_.notify_all();
}

void PeerLiveness::watch() {
  auto next_beat = net::Clock::now();
  for (;;) {
    std::vector<pollfd> fds{{wake_[0], POLLIN, 0}, {listener_.fd(), POLLIN, 0}};
    std::vector<Incoming*> sources;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
      for (auto& in : incoming_)
        if (in->socket.valid()) {
          fds.push_back({in->socket.fd(), POLLIN, 0});
          sources.push_back(in.get());
        }
    }
    const auto now = net::Clock::now();
    if (now >= next_beat) {
      beat(kBeat);
      next_beat = now + interval_;
    }
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next_beat - now);
    ::poll(fds.data(), fds.size(), static_cast<int>(std::max<int64_t>(1, wait.count())));
    if (fds[0].revents) return;
    if (fds[1].revents) accept_one();
    for (std::size_t i = 0; i < sources.size(); ++i)
      if (fds[i + 2].revents) read_from(*sources[i]);
  }
}

}  // namespace ctp
