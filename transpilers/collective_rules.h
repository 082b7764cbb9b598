// Values both passes of a mode derive from the options, computed by these
// functions rather than carried from the startup pass to the main pass (the
// reference stores them on the transpiler object between the two rewrites).
#pragma once
#include <string>
#include <vector>

#include "transpilers/options.h"

namespace ctp {

// Throws ctp::Error, as the reference's Collective.transpile raises: fewer than
// two endpoints (except SingleProcessMultiThread and MultiThread), a negative
// rank, a current endpoint that is not listed; and, where the reference would
// divide by zero, nrings or a GPU count below one.
void check_transpile_options(TranspileMode mode, const TranspileOptions& options);

// The ring count the mode uses: options.nrings or the reference's default.
int resolved_nrings(TranspileMode mode, const CollectiveOptions& options);

// The reference's self.nranks as the main program rewrite sees it: the number
// of endpoints, except for SingleProcessMultiThread, whose startup rewrite
// resets it to the number of distinct hosts when there are several, else 1.
int effective_nranks(TranspileMode mode, const CollectiveOptions& options);

// Distinct hosts (the part of "host:port" before the first ':').
int distinct_host_count(const std::vector<std::string>& endpoints);

// `endpoints` without the first occurrence of `current` (Python's list.remove).
std::vector<std::string> other_endpoints(const std::vector<std::string>& endpoints,
                                         const std::string& current);

}  // namespace ctp
