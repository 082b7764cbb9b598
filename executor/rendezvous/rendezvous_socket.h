// TCP plumbing shared by the rendezvous steps (unique-id exchange, the
// key-value store) and the launcher: endpoints, sockets with deadlines.
// Every blocking call takes a deadline, so nothing here can hang a worker.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "program_ir/error.h"

namespace ctp::net {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

inline Deadline deadline_after(std::chrono::milliseconds timeout) { return Clock::now() + timeout; }

// "host:port" or "[v6addr]:port".
struct Endpoint {
  std::string host;
  int port = 0;
  std::string to_string() const;
  bool operator==(const Endpoint&) const = default;
};

// Throws ctp::Error naming `what` (e.g. "attribute 'endpoint'") when `text`
// is not host:port with a port in 1..65535.
Endpoint parse_endpoint(std::string_view text, std::string_view what = "endpoint");
// Comma-separated endpoints ("a:1,b:2"); empty items are errors.
std::vector<Endpoint> parse_endpoint_list(std::string_view text, std::string_view what);

// A socket or I/O failure; the message names the peer and the OS error.
class NetError : public Error {
 public:
  using Error::Error;
};

// An owned file descriptor of a stream socket (move-only).
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  Socket(Socket&& other) noexcept : fd_(other.release()) {}
  Socket& operator=(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  ~Socket() { close(); }

  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void close();
  // Wakes any thread blocked reading or writing this socket (it sees EOF).
  void shutdown_both();

 private:
  int fd_ = -1;
};

// Connects once. Returns nullopt (with the reason in *why) when the peer is
// not accepting yet (refused, unreachable, timed out), so callers can retry.
std::optional<Socket> try_connect(const Endpoint& peer, Deadline deadline, std::string* why);

// Listens on `host`'s address at `port` (`port` 0 picks a free one): a
// worker's endpoint 127.0.0.1:6170 is reachable over loopback only. An empty
// host listens on every local address (only for probing free ports). Throws
// NetError naming the endpoint on failure (the port is in use, the host is
// not an address of this machine).
Socket listen_on(const std::string& host, int port, std::string_view what_for);
int local_port(const Socket& socket);
// The local address this connected socket uses (the host others reach us at).
std::string local_host(const Socket& socket);

// Waits for a connection until the deadline; nullopt on timeout.
std::optional<Socket> accept_until(Socket& listener, Deadline deadline);

// Sends all bytes before the deadline (never raises SIGPIPE); throws NetError.
void send_all(Socket& socket, const void* data, std::size_t size, Deadline deadline);
// Reads exactly `size` bytes. Returns false on a clean EOF before the first
// byte; throws NetError on errors, timeouts and EOF in the middle.
bool recv_all(Socket& socket, void* data, std::size_t size, Deadline deadline);

// The numeric address a listening or connected socket is bound to.
std::string bound_address(const Socket& socket);

// A socket listening on every local address, on a port chosen below the
// kernel's ephemeral range where possible (see the definition for why).
Socket listen_on_free_port(std::string_view what_for);
// A port that was free on every local address a moment ago (another process
// may still take it: callers that can should keep listen_on_free_port's socket).
int pick_free_port();

// Length-prefixed messages: u32 big-endian length, then the bytes.
void send_frame(Socket& socket, std::string_view bytes, Deadline deadline);
// nullopt on a clean EOF; throws NetError when the frame exceeds max_size.
std::optional<std::string> recv_frame(Socket& socket, std::size_t max_size, Deadline deadline);

std::string errno_text(int err);
// "2.5 s", "300 ms".
std::string duration_text(std::chrono::milliseconds ms);

}  // namespace ctp::net
