// The checks every transpiler shares on the job it is given, and values
// derived from the endpoints. Transpiler::check() runs the checks before any
// rewrite, so an option error leaves the programs untouched.
#pragma once
#include <string>
#include <vector>

#include "transpilers/collective_options.h"
#include "transpilers/transpiler.h"

namespace ctp {

// Throws ctp::Error starting with `prefix`, as the reference's
// Collective.transpile raises: fewer than two endpoints (unless
// rules.single_endpoint_allowed), a negative rank, a current endpoint that is
// not listed; and, past the reference, an endpoint that is not host:port with
// a port 1..65535 (the executor refuses those when it starts).
void check_collective_job(const std::string& prefix, const CollectiveOptions& options,
                          const RingRules& rules);

// Throws ctp::Error starting with `prefix` where the reference would divide by
// zero or cannot be asked: nrings below one, or other than one where
// rules.one_ring_only.
void check_ring_options(const std::string& prefix, const CollectiveOptions& options,
                        const RingRules& rules);

// Distinct hosts (the part of "host:port" before the first ':', as the
// reference splits them).
int distinct_host_count(const std::vector<std::string>& endpoints);

// `endpoints` without the first occurrence of `current` (Python's list.remove).
std::vector<std::string> other_endpoints(const std::vector<std::string>& endpoints,
                                         const std::string& current);

}  // namespace ctp
