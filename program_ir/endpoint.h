// "host:port" as ranks are named in programs and options (c_gen_nccl_id's
// endpoint attributes, a transpile's endpoints, PADDLE_TRAINER_ENDPOINTS):
// a non-empty host, or an IPv6 address in [brackets], then a port 1..65535.
// One parser, so that a transpile refuses what the executor would refuse later.
#pragma once
#include <string>
#include <string_view>

namespace ctp {

struct HostPort {
  std::string host;  // without the brackets of an IPv6 address
  int port = 0;
};

// Throws ctp::Error "<what> '<text>' is not host:port (<why>)".
HostPort parse_host_port(std::string_view text, std::string_view what = "endpoint");

}  // namespace ctp
