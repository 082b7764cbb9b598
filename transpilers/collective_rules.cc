#include "transpilers/collective_rules.h"

#include <algorithm>
#include <unordered_set>

#include "program_ir/endpoint.h"
#include "program_ir/error.h"

namespace ctp {
namespace {

std::string join_endpoints(const std::vector<std::string>& endpoints) {
  std::string s = "[";
  for (std::size_t i = 0; i < endpoints.size(); ++i) {
    if (i) s += ", ";
    s += "'" + endpoints[i] + "'";
  }
  return s + "]";
}

}  // namespace

void check_collective_job(const std::string& prefix, const CollectiveOptions& c,
                          const RingRules& rules) {
  if (c.endpoints.size() == 1 && !rules.single_endpoint_allowed)
    throw Error(prefix + "the number of endpoints must be > 1, got 1 (" + c.endpoints[0] +
                "); only single_process_multi_thread and multi_thread run on a single "
                "endpoint");
  if (c.rank < 0) throw Error(prefix + "rank must be >= 0, got " + std::to_string(c.rank));
  if (std::find(c.endpoints.begin(), c.endpoints.end(), c.current_endpoint) ==
      c.endpoints.end())
    throw Error(prefix + "current endpoint '" + c.current_endpoint + "' is not in " +
                join_endpoints(c.endpoints));
  for (std::size_t i = 0; i < c.endpoints.size(); ++i) {
    try {
      parse_host_port(c.endpoints[i], "endpoint");
    } catch (const Error& e) {
      throw Error(prefix + "endpoints[" + std::to_string(i) + "]: " + e.what());
    }
  }
}

void check_ring_options(const std::string& prefix, const CollectiveOptions& c,
                        const RingRules& rules) {
  if (c.nrings && *c.nrings < 1)
    throw Error(prefix + "nrings must be >= 1, got " + std::to_string(*c.nrings));
  if (rules.one_ring_only && c.nrings && *c.nrings != 1)
    throw Error(prefix + "this transpiler always uses one ring; nrings=" +
                std::to_string(*c.nrings) + " is not supported");
}

int distinct_host_count(const std::vector<std::string>& endpoints) {
  std::unordered_set<std::string> hosts;
  for (const std::string& e : endpoints) hosts.insert(e.substr(0, e.find(':')));
  return static_cast<int>(hosts.size());
}

std::vector<std::string> other_endpoints(const std::vector<std::string>& endpoints,
                                         const std::string& current) {
  std::vector<std::string> others = endpoints;
  auto it = std::find(others.begin(), others.end(), current);
  if (it != others.end()) others.erase(it);
  return others;
}

}  // namespace ctp
