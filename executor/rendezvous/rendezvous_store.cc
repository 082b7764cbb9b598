#include "executor/rendezvous/rendezvous_store.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <random>

namespace ctp {
namespace {

constexpr std::string_view kAddressMagic = "ctp-store/1";
constexpr std::size_t kMaxRequestBytes = 64u << 20;  // gloo addresses are tiny; bound hostile input
constexpr auto kIdleWait = std::chrono::hours(24);

enum Command : char { kHello = 'H', kSet = 'S', kGet = 'G', kLost = 'D', kDeparted = 'L', kWatch = 'W', kBye = 'B' };
enum Reply : char { kOk = 'O', kFound = 'F', kNotFound = 'N', kRefused = 'E' };

void put_u32(std::string& out, uint32_t v) {
  for (int i = 3; i >= 0; --i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void put_u64(std::string& out, uint64_t v) {
  put_u32(out, static_cast<uint32_t>(v >> 32));
  put_u32(out, static_cast<uint32_t>(v));
}
void put_str(std::string& out, std::string_view s) {
  put_u32(out, static_cast<uint32_t>(s.size()));
  out.append(s);
}

// Reads fields of a message; every read is checked against the bytes present.
class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}
  uint32_t u32() {
    need(4);
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(bytes_[pos_++]);
    return v;
  }
  uint64_t u64() {
    uint64_t hi = u32();
    return (hi << 32) | u32();
  }
  std::string str() {
    uint32_t n = u32();
    need(n);
    std::string s(bytes_.substr(pos_, n));
    pos_ += n;
    return s;
  }
  char byte() {
    need(1);
    return bytes_[pos_++];
  }

 private:
  void need(std::size_t n) {
    if (bytes_.size() - pos_ < n) throw net::NetError("truncated store message");
  }
  std::string_view bytes_;
  std::size_t pos_ = 0;
};

std::string encode_peers(const std::vector<LostPeer>& peers) {
  std::string out(1, kOk);
  put_u32(out, static_cast<uint32_t>(peers.size()));
  for (const LostPeer& p : peers) {
    put_u32(out, static_cast<uint32_t>(p.rank));
    put_str(out, p.label);
  }
  return out;
}

std::vector<LostPeer> decode_peers(const std::string& reply) {
  Reader r(std::string_view(reply).substr(1));
  uint32_t n = r.u32();
  std::vector<LostPeer> out;
  for (uint32_t i = 0; i < n; ++i) {
    LostPeer p;
    p.rank = static_cast<int32_t>(r.u32());
    p.label = r.str();
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace

std::string StoreAddress::to_bytes() const {
  std::string out(kAddressMagic);
  out.push_back('\n');
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(token));
  out += hex;
  out.push_back('\n');
  out += endpoint.to_string();
  return out;
}

StoreAddress StoreAddress::from_bytes(const std::string& bytes) {
  auto fail = [] {
    return Error("the unique id does not hold a ctp rendezvous address (was it made by "
                 "c_gen_nccl_id of a ctp CPU run?)");
  };
  std::size_t a = bytes.find('\n');
  if (a == std::string::npos || std::string_view(bytes).substr(0, a) != kAddressMagic) throw fail();
  std::size_t b = bytes.find('\n', a + 1);
  if (b == std::string::npos || b - a - 1 != 16) throw fail();
  StoreAddress out;
  auto [end, ec] = std::from_chars(bytes.data() + a + 1, bytes.data() + b, out.token, 16);
  if (ec != std::errc() || end != bytes.data() + b) throw fail();
  out.endpoint = net::parse_endpoint(std::string_view(bytes).substr(b + 1), "store address");
  return out;
}

uint64_t random_token() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

// --- server ---

StoreServer::StoreServer(const std::string& host, int port, uint64_t token) : token_(token) {
  listener_ = net::listen_on(host, port, "the rendezvous store");
  port_ = net::local_port(listener_);
  if (::pipe2(wake_pipe_, O_CLOEXEC) != 0)
    throw net::NetError("pipe failed: " + net::errno_text(errno));
  accept_thread_ = std::thread([this] { accept_loop(); });
}

StoreServer::~StoreServer() {
  stopping_ = true;
  char x = 1;
  (void)!::write(wake_pipe_[1], &x, 1);
  accept_thread_.join();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (Connection& c : connections_) c.socket.shutdown_both();
  }
  for (Connection& c : connections_) c.thread.join();
  ::close(wake_pipe_[0]);
  ::close(wake_pipe_[1]);
}

std::vector<LostPeer> StoreServer::lost_peers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lost_;
}

std::vector<LostPeer> StoreServer::departed_peers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return departed_;
}

void StoreServer::accept_loop() {
  while (!stopping_) {
    pollfd fds[2] = {{listener_.fd(), POLLIN, 0}, {wake_pipe_[0], POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) continue;
    if (fds[1].revents) return;
    auto conn = net::accept_until(listener_, net::Clock::now());
    if (!conn) continue;
    std::lock_guard<std::mutex> lock(mu_);
    // Reap connections whose clients are gone, so a long job does not
    // accumulate threads.
    for (auto it = connections_.begin(); it != connections_.end();) {
      if (it->finished) {
        it->thread.join();
        it = connections_.erase(it);
      } else {
        ++it;
      }
    }
    connections_.emplace_back();
    Connection* c = &connections_.back();
    c->socket = std::move(*conn);
    c->thread = std::thread([this, c] { serve(c); });
  }
}

void StoreServer::serve(Connection* conn) {
  int rank = -2;  // not yet admitted
  std::string label;
  bool said_bye = false;
  bool watching = false;
  try {
    for (;;) {
      auto request = net::recv_frame(conn->socket, kMaxRequestBytes, net::deadline_after(kIdleWait));
      if (!request) break;
      if (watching) continue;  // a watch connection only listens
      if (rank != -2 && !request->empty() && (*request)[0] == kWatch) {
        start_watching(conn);
        watching = true;
        continue;
      }
      std::string reply = handle(*request, &rank, &label, &said_bye);
      net::send_frame(conn->socket, reply, net::deadline_after(std::chrono::seconds(30)));
      if (rank == -2 || said_bye) break;
    }
  } catch (const std::exception&) {
    // A broken connection ends like a closed one.
  }
  std::lock_guard<std::mutex> lock(mu_);
  watchers_.erase(std::remove(watchers_.begin(), watchers_.end(), conn), watchers_.end());
  if (rank >= 0 && !said_bye && !stopping_) {
    lost_.push_back(LostPeer{rank, label});
    // Pushed while the loss is recorded, so that it is on its way to every
    // watcher before any client can learn of it by asking.
    std::string push = encode_peers({lost_.back()});
    for (Connection* w : watchers_) {
      try {
        net::send_frame(w->socket, push, net::deadline_after(std::chrono::milliseconds(200)));
      } catch (const std::exception&) {
        // That watcher is gone or stuck; the others still hear of it.
      }
    }
  }
  if (rank >= 0 && said_bye) departed_.push_back(LostPeer{rank, label});
  conn->finished = true;
}

void StoreServer::start_watching(Connection* conn) {
  std::lock_guard<std::mutex> lock(mu_);
  net::send_frame(conn->socket, encode_peers(lost_), net::deadline_after(std::chrono::seconds(5)));
  watchers_.push_back(conn);
}

std::string StoreServer::handle(const std::string& request, int* rank, std::string* label,
                                bool* said_bye) {
  Reader in(request);
  char cmd = in.byte();
  std::string reply;
  if (*rank == -2) {
    // The first message must be a hello with this store's token.
    if (cmd != kHello || in.u64() != token_) {
      reply.push_back(kRefused);
      put_str(reply, "wrong token: this store belongs to another communicator or job");
      return reply;
    }
    *rank = static_cast<int32_t>(in.u32());
    *label = in.str();
    reply.push_back(kOk);
    return reply;
  }
  std::lock_guard<std::mutex> lock(mu_);
  switch (cmd) {
    case kSet: {
      std::string key = in.str();
      data_[key] = in.str();
      reply.push_back(kOk);
      break;
    }
    case kGet: {
      auto it = data_.find(in.str());
      if (it == data_.end()) {
        reply.push_back(kNotFound);
      } else {
        reply.push_back(kFound);
        put_str(reply, it->second);
      }
      break;
    }
    case kLost:
      return encode_peers(lost_);
    case kDeparted:
      return encode_peers(departed_);
    case kBye:
      *said_bye = true;
      reply.push_back(kOk);
      break;
    default:
      throw net::NetError("unknown store command");
  }
  return reply;
}

// --- client ---

StoreClient::StoreClient(const StoreAddress& address, int rank, std::string label,
                         std::chrono::milliseconds timeout)
    : address_(address), timeout_(timeout) {
  net::Deadline deadline = net::deadline_after(timeout);
  std::string why;
  for (;;) {
    auto s = net::try_connect(address.endpoint, deadline, &why);
    if (s) {
      socket_ = std::move(*s);
      break;
    }
    if (net::Clock::now() >= deadline)
      throw Error("cannot reach the rendezvous store at " + address.endpoint.to_string() +
                  " (hosted by rank 0) within " + net::duration_text(timeout) + ": " + why);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::string hello(1, kHello);
  put_u64(hello, address.token);
  put_u32(hello, static_cast<uint32_t>(rank));
  put_str(hello, label);
  std::string reply = call(hello);
  if (reply[0] != kOk) {
    Reader r(std::string_view(reply).substr(1));
    throw Error("the rendezvous store at " + address.endpoint.to_string() +
                " refused this worker: " + r.str());
  }
}

StoreClient::~StoreClient() {
  try {
    close();
  } catch (...) {
    // The server may be gone already; nothing to tell it then.
  }
  if (watch_thread_.joinable()) {
    watch_socket_.shutdown_both();
    watch_thread_.join();
  }
}

std::string StoreClient::call(const std::string& request) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!socket_.valid()) throw net::NetError("the store connection is closed");
  net::Deadline deadline = net::deadline_after(timeout_);
  net::send_frame(socket_, request, deadline);
  auto reply = net::recv_frame(socket_, kMaxRequestBytes, deadline);
  if (!reply || reply->empty())
    throw net::NetError("the rendezvous store at " + address_.endpoint.to_string() +
                        " closed the connection (its host, rank 0, is gone)");
  return *reply;
}

void StoreClient::set(const std::string& key, const std::string& value) {
  std::string req(1, kSet);
  put_str(req, key);
  put_str(req, value);
  call(req);
}

std::optional<std::string> StoreClient::try_get(const std::string& key) {
  std::string req(1, kGet);
  put_str(req, key);
  std::string reply = call(req);
  if (reply.empty() || reply[0] != kFound) return std::nullopt;
  Reader r(std::string_view(reply).substr(1));
  return r.str();
}

std::string StoreClient::get(const std::string& key) { return get(key, timeout_); }

std::string StoreClient::get(const std::string& key, std::chrono::milliseconds timeout) {
  wait({key}, timeout);
  auto value = try_get(key);
  if (!value) throw Error("rendezvous store: key '" + key + "' vanished");
  return *value;
}

void StoreClient::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  net::Deadline deadline = net::deadline_after(timeout);
  auto pause = std::chrono::milliseconds(1);
  std::size_t next = 0;
  while (next < keys.size()) {
    if (try_get(keys[next])) {
      ++next;
      continue;
    }
    if (net::Clock::now() >= deadline) {
      std::string missing;
      for (std::size_t i = next; i < keys.size(); ++i) {
        if (i > next + 8) {
          missing += ", ...";
          break;
        }
        missing += (i > next ? ", '" : "'") + keys[i] + "'";
      }
      throw Error("rendezvous store at " + address_.endpoint.to_string() + ": timed out after " +
                  net::duration_text(timeout) + " waiting for " + missing +
                  " (a peer has not arrived)");
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(20));
  }
}

std::vector<LostPeer> StoreClient::lost_peers() { return peers(kLost); }
std::vector<LostPeer> StoreClient::departed_peers() { return peers(kDeparted); }

std::vector<LostPeer> StoreClient::peers(char command) {
  return decode_peers(call(std::string(1, command)));
}

void StoreClient::watch_losses() {
  if (watch_thread_.joinable()) return;
  net::Deadline deadline = net::deadline_after(timeout_);
  std::string why;
  auto s = net::try_connect(address_.endpoint, deadline, &why);
  if (!s) throw net::NetError("cannot open a watch connection to the store at " +
                              address_.endpoint.to_string() + ": " + why);
  watch_socket_ = std::move(*s);
  std::string hello(1, kHello);
  put_u64(hello, address_.token);
  put_u32(hello, static_cast<uint32_t>(-1));
  put_str(hello, "watch");
  net::send_frame(watch_socket_, hello, deadline);
  auto admitted = net::recv_frame(watch_socket_, kMaxRequestBytes, deadline);
  if (!admitted || admitted->empty() || (*admitted)[0] != kOk)
    throw net::NetError("the store at " + address_.endpoint.to_string() + " refused a watch connection");
  net::send_frame(watch_socket_, std::string(1, kWatch), deadline);
  auto initial = net::recv_frame(watch_socket_, kMaxRequestBytes, deadline);
  if (!initial || initial->empty()) throw net::NetError("the store closed the watch connection");
  seen_ = decode_peers(*initial);
  watch_thread_ = std::thread([this] {
    for (;;) {
      try {
        auto push = net::recv_frame(watch_socket_, kMaxRequestBytes, net::deadline_after(kIdleWait));
        if (!push) break;
        auto peers = decode_peers(*push);
        std::lock_guard<std::mutex> lock(watch_mu_);
        seen_.insert(seen_.end(), peers.begin(), peers.end());
      } catch (const std::exception&) {
        break;
      }
    }
    std::lock_guard<std::mutex> lock(watch_mu_);
    watch_ended_ = true;
    watch_cv_.notify_all();
  });
}

std::vector<LostPeer> StoreClient::seen_losses(std::chrono::milliseconds settle) {
  std::unique_lock<std::mutex> lock(watch_mu_);
  if (watch_thread_.joinable()) watch_cv_.wait_for(lock, settle, [&] { return watch_ended_; });
  return seen_;
}

std::string StoreClient::local_host() {
  std::lock_guard<std::mutex> lock(mu_);
  return net::local_host(socket_);
}

void StoreClient::close() {
  if (!socket_.valid()) return;
  try {
    call(std::string(1, kBye));
  } catch (...) {
    std::lock_guard<std::mutex> lock(mu_);
    socket_.close();
    throw;
  }
  std::lock_guard<std::mutex> lock(mu_);
  socket_.close();
}

}  // namespace ctp
