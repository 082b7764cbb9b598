#include "executor/rendezvous/rendezvous_socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

#include "program_ir/endpoint.h"

namespace ctp::net {
namespace {

int millis_until(Deadline deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (left.count() <= 0) return 0;
  return left.count() > 1000000 ? 1000000 : static_cast<int>(left.count());
}

// Waits for `events` on fd; false on timeout.
bool wait_for(int fd, short events, Deadline deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    int rc = ::poll(&p, 1, millis_until(deadline));
    if (rc > 0) return true;
    if (rc == 0) return false;
    if (errno != EINTR) throw NetError("poll failed: " + errno_text(errno));
  }
}

void set_nonblocking(int fd, bool on) {
  int flags = ::fcntl(fd, F_GETFL, 0);
  ::fcntl(fd, F_SETFL, on ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK));
}

std::string peer_name(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return "peer";
  char host[NI_MAXHOST], port[NI_MAXSERV];
  if (::getnameinfo(reinterpret_cast<sockaddr*>(&addr), len, host, sizeof(host), port,
                    sizeof(port), NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return "peer";
  return std::string(host) + ":" + port;
}

}  // namespace

std::string errno_text(int err) { return std::strerror(err); }

std::string duration_text(std::chrono::milliseconds ms) {
  if (ms.count() < 1000) return std::to_string(ms.count()) + " ms";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g s", static_cast<double>(ms.count()) / 1000.0);
  return buf;
}

std::string Endpoint::to_string() const {
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

Endpoint parse_endpoint(std::string_view text, std::string_view what) {
  // One rule for every place a rank is named (program_ir/endpoint.h), so that
  // `ctp transpile` refuses what would be refused here.
  HostPort parsed = parse_host_port(text, what);
  return Endpoint{std::move(parsed.host), parsed.port};
}

std::vector<Endpoint> parse_endpoint_list(std::string_view text, std::string_view what) {
  std::vector<Endpoint> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    std::string_view item = text.substr(start, comma - start);
    if (item.empty())
      throw Error(std::string(what) + " '" + std::string(text) + "' has an empty entry");
    out.push_back(parse_endpoint(item, what));
    start = comma + 1;
  }
  return out;
}

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = other.release();
  }
  return *this;
}

void Socket::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void Socket::shutdown_both() {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
}

std::optional<Socket> try_connect(const Endpoint& peer, Deadline deadline, std::string* why) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  std::string port = std::to_string(peer.port);
  int rc = ::getaddrinfo(peer.host.c_str(), port.c_str(), &hints, &found);
  if (rc != 0) {
    if (why) *why = "cannot resolve '" + peer.host + "': " + ::gai_strerror(rc);
    return std::nullopt;
  }
  std::string last_error = "no address";
  for (addrinfo* ai = found; ai; ai = ai->ai_next) {
    Socket s(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol));
    if (!s.valid()) {
      last_error = errno_text(errno);
      continue;
    }
    set_nonblocking(s.fd(), true);
    int err = 0;
    if (::connect(s.fd(), ai->ai_addr, ai->ai_addrlen) != 0) {
      err = errno;
      if (err == EINPROGRESS) {
        if (!wait_for(s.fd(), POLLOUT, deadline)) {
          last_error = "connect timed out";
          continue;
        }
        socklen_t len = sizeof(err);
        ::getsockopt(s.fd(), SOL_SOCKET, SO_ERROR, &err, &len);
      }
    }
    if (err != 0) {
      last_error = errno_text(err);
      continue;
    }
    set_nonblocking(s.fd(), false);
    int one = 1;
    ::setsockopt(s.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    ::freeaddrinfo(found);
    return s;
  }
  ::freeaddrinfo(found);
  if (why) *why = last_error;
  return std::nullopt;
}

namespace {

// Binds and listens on one resolved address; false (with errno) on failure.
bool bind_and_listen(const Socket& s, const sockaddr* addr, socklen_t len) {
  int one = 1;
  ::setsockopt(s.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  return ::bind(s.fd(), addr, len) == 0 && ::listen(s.fd(), 128) == 0;
}

Socket listen_on_any(int port, std::string_view what_for) {
  // IPv6 any-address with v4-mapped addresses reaches both families; fall
  // back to IPv4 where IPv6 is disabled.
  Socket s(::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0));
  bool v6 = s.valid();
  if (!v6) s = Socket(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!s.valid())
    throw NetError("cannot create a socket for " + std::string(what_for) + ": " +
                   errno_text(errno));
  bool ok;
  if (v6) {
    int zero = 0;
    ::setsockopt(s.fd(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    sockaddr_in6 addr{};
    addr.sin6_family = AF_INET6;
    addr.sin6_addr = in6addr_any;
    addr.sin6_port = htons(static_cast<uint16_t>(port));
    ok = bind_and_listen(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  } else {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    ok = bind_and_listen(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  }
  if (!ok)
    throw NetError("cannot listen on port " + std::to_string(port) + " for " +
                   std::string(what_for) + ": " + errno_text(errno));
  return s;
}

}  // namespace

Socket listen_on(const std::string& host, int port, std::string_view what_for) {
  if (host.empty()) return listen_on_any(port, what_for);
  const std::string where = Endpoint{host, port}.to_string();
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port_text = std::to_string(port);
  if (int rc = ::getaddrinfo(host.c_str(), port_text.c_str(), &hints, &found); rc != 0)
    throw NetError("cannot listen on " + where + " for " + std::string(what_for) +
                   ": cannot resolve '" + host + "': " + ::gai_strerror(rc));
  int err = 0;
  for (addrinfo* ai = found; ai; ai = ai->ai_next) {
    Socket s(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol));
    if (s.valid() && bind_and_listen(s, ai->ai_addr, ai->ai_addrlen)) {
      ::freeaddrinfo(found);
      return s;
    }
    err = errno;
  }
  ::freeaddrinfo(found);
  std::string why = errno_text(err);
  if (err == EADDRNOTAVAIL) why += " (" + host + " is not an address of this machine)";
  throw NetError("cannot listen on " + where + " for " + std::string(what_for) + ": " + why);
}

int local_port(const Socket& socket) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (::getsockname(socket.fd(), reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    throw NetError("getsockname failed: " + errno_text(errno));
  if (addr.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
  return ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
}

std::string bound_address(const Socket& socket) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (::getsockname(socket.fd(), reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    throw NetError("getsockname failed: " + errno_text(errno));
  char host[NI_MAXHOST];
  if (::getnameinfo(reinterpret_cast<sockaddr*>(&addr), len, host, sizeof(host), nullptr, 0,
                    NI_NUMERICHOST) != 0)
    throw NetError("getnameinfo failed");
  return host;
}

std::string local_host(const Socket& socket) {
  std::string out = bound_address(socket);
  if (out.rfind("::ffff:", 0) == 0) out = out.substr(7);  // a v4-mapped address
  return out;
}

std::optional<Socket> accept_until(Socket& listener, Deadline deadline) {
  for (;;) {
    if (!wait_for(listener.fd(), POLLIN, deadline)) return std::nullopt;
    int fd = ::accept4(listener.fd(), nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) {
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      return Socket(fd);
    }
    if (errno != EINTR && errno != ECONNABORTED && errno != EAGAIN)
      throw NetError("accept failed: " + errno_text(errno));
  }
}

void send_all(Socket& socket, const void* data, std::size_t size, Deadline deadline) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    if (!wait_for(socket.fd(), POLLOUT, deadline))
      throw NetError("timed out sending to " + peer_name(socket.fd()));
    ssize_t n = ::send(socket.fd(), p, size, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      throw NetError("cannot send to " + peer_name(socket.fd()) + ": " + errno_text(errno));
    }
    p += n;
    size -= static_cast<std::size_t>(n);
  }
}

bool recv_all(Socket& socket, void* data, std::size_t size, Deadline deadline) {
  char* p = static_cast<char*>(data);
  std::size_t got = 0;
  while (got < size) {
    if (!wait_for(socket.fd(), POLLIN, deadline))
      throw NetError("timed out receiving from " + peer_name(socket.fd()));
    ssize_t n = ::recv(socket.fd(), p + got, size - got, MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      throw NetError("cannot receive from " + peer_name(socket.fd()) + ": " + errno_text(errno));
    }
    if (n == 0) {
      if (got == 0) return false;
      throw NetError("connection closed in the middle of a message");
    }
    got += static_cast<std::size_t>(n);
  }
  return true;
}

namespace {

// The lowest port the kernel hands out on its own (to port-0 binds and to
// the source side of outgoing connections).
int lowest_ephemeral_port() {
  int low = 32768, high = 60999;  // Linux's default range
  if (std::FILE* f = std::fopen("/proc/sys/net/ipv4/ip_local_port_range", "r")) {
    if (std::fscanf(f, "%d %d", &low, &high) != 2) low = 32768;
    std::fclose(f);
  }
  return low;
}

}  // namespace

// A port from the kernel's ephemeral range can be taken by any outgoing
// connection of any process between this probe and the moment the worker
// binds it ("Address already in use" under parallel tests). Ports below
// that range are only ever taken by an explicit bind, so the probe tries
// random ones there first, and falls back to the kernel's choice.
Socket listen_on_free_port(std::string_view what_for) {
  const int below = lowest_ephemeral_port();
  if (below > 2048) {
    std::random_device seed;
    std::uniform_int_distribution<int> port_of(below / 2, below - 1);
    for (int attempt = 0; attempt < 64; ++attempt) {
      try {
        return listen_on("", port_of(seed), what_for);
      } catch (const NetError&) {
        // taken: try another
      }
    }
  }
  return listen_on("", 0, what_for);
}

int pick_free_port() {
  Socket s = listen_on_free_port("a free-port probe");
  return local_port(s);
}

void send_frame(Socket& socket, std::string_view bytes, Deadline deadline) {
  uint32_t len = htonl(static_cast<uint32_t>(bytes.size()));
  std::string buf(reinterpret_cast<const char*>(&len), sizeof(len));
  buf.append(bytes);
  send_all(socket, buf.data(), buf.size(), deadline);
}

std::optional<std::string> recv_frame(Socket& socket, std::size_t max_size, Deadline deadline) {
  uint32_t len = 0;
  if (!recv_all(socket, &len, sizeof(len), deadline)) return std::nullopt;
  len = ntohl(len);
  if (len > max_size)
    throw NetError("message of " + std::to_string(len) + " bytes exceeds the limit of " +
                   std::to_string(max_size));
  std::string out(len, '\0');
  if (len && !recv_all(socket, out.data(), len, deadline))
    throw NetError("connection closed in the middle of a message");
  return out;
}

}  // namespace ctp::net
