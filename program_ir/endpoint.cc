#include "program_ir/endpoint.h"

#include <charconv>

#include "program_ir/error.h"

namespace ctp {

HostPort parse_host_port(std::string_view text, std::string_view what) {
  auto fail = [&](const std::string& why) -> Error {
    return Error(std::string(what) + " '" + std::string(text) + "' is not host:port (" + why + ")");
  };
  std::string_view host, port;
  if (!text.empty() && text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':')
      throw fail("unterminated [address]");
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    auto colon = text.rfind(':');
    if (colon == std::string_view::npos) throw fail("no ':port'");
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) throw fail("IPv6 addresses need [brackets]");
  }
  if (host.empty()) throw fail("empty host");
  int value = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc() || end != port.data() + port.size() || value < 1 || value > 65535)
    throw fail("port must be 1..65535");
  return HostPort{std::string(host), value};
}

}  // namespace ctp
