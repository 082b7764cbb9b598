#include "transpilers/collective_rules.h"

#include <algorithm>
#include <unordered_set>

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

void check_transpile_options(TranspileMode mode, const TranspileOptions& options) {
  const CollectiveOptions& c = options.collective;
  const std::string prefix = "transpile " + std::string(to_string(mode)) + ": ";
  const bool single_endpoint_allowed = mode == TranspileMode::kSingleProcessMultiThread ||
                                       mode == TranspileMode::kMultiThread;
  if (c.endpoints.size() == 1 && !single_endpoint_allowed)
    throw Error(prefix + "the number of endpoints must be > 1, got 1 (" +
                c.endpoints[0] + "); only single_process_multi_thread and multi_thread "
                "run on a single endpoint");
  if (c.rank < 0)
    throw Error(prefix + "rank must be >= 0, got " + std::to_string(c.rank));
  if (std::find(c.endpoints.begin(), c.endpoints.end(), c.current_endpoint) ==
      c.endpoints.end())
    throw Error(prefix + "current endpoint '" + c.current_endpoint + "' is not in " +
                join_endpoints(c.endpoints));
  if (c.nrings && *c.nrings < 1)
    throw Error(prefix + "nrings must be >= 1, got " + std::to_string(*c.nrings));
  if (mode == TranspileMode::kSingleProcessMultiThread && c.nrings && *c.nrings != 1)
    throw Error(prefix + "single_process_multi_thread always uses one ring; nrings=" +
                std::to_string(*c.nrings) + " is not supported");
  if (mode == TranspileMode::kSingleProcessMultiThread &&
      options.single_process_multi_thread.gpu_nums < 1)
    throw Error(prefix + "gpu_nums must be >= 1, got " +
                std::to_string(options.single_process_multi_thread.gpu_nums));
  if (options.grad_allreduce.bucket_bytes < 0)
    throw Error(prefix + "bucket_bytes must be >= 0, got " +
                std::to_string(options.grad_allreduce.bucket_bytes));
  if (options.grad_allreduce.bucket_bytes > 0 && mode != TranspileMode::kGradAllReduce)
    throw Error(prefix + "gradient buckets (bucket_bytes " +
                std::to_string(options.grad_allreduce.bucket_bytes) +
                ") are a grad_allreduce schedule; this mode has its own fusion");
  if (mode == TranspileMode::kMultiThread && options.multi_thread.gpu_num < 1)
    throw Error(prefix + "gpu_num must be >= 1, got " +
                std::to_string(options.multi_thread.gpu_num));
}

int resolved_nrings(TranspileMode mode, const CollectiveOptions& options) {
  switch (mode) {
    case TranspileMode::kGradAllReduce:
    case TranspileMode::kLocalSgd: return options.nrings.value_or(2);
    case TranspileMode::kSingleProcessMultiThread: return 1;
    case TranspileMode::kMultiThread: return options.nrings.value_or(1);
  }
  return 1;
}

int distinct_host_count(const std::vector<std::string>& endpoints) {
  std::unordered_set<std::string> hosts;
  for (const std::string& e : endpoints) hosts.insert(e.substr(0, e.find(':')));
  return static_cast<int>(hosts.size());
}

int effective_nranks(TranspileMode mode, const CollectiveOptions& options) {
  const int endpoint_count = static_cast<int>(options.endpoints.size());
  if (mode != TranspileMode::kSingleProcessMultiThread) return endpoint_count;
  const int hosts = endpoint_count > 1 ? distinct_host_count(options.endpoints) : 0;
  return hosts > 1 ? hosts : 1;
}

std::vector<std::string> other_endpoints(const std::vector<std::string>& endpoints,
                                         const std::string& current) {
  std::vector<std::string> others = endpoints;
  auto it = std::find(others.begin(), others.end(), current);
  if (it != others.end()) others.erase(it);
  return others;
}

}  // namespace ctp
