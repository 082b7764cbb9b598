#include "transpilers/options.h"

#include <algorithm>

#include "program_ir/error.h"

namespace ctp {

int64_t bucket_bytes_for_mib(double mib) {
  return std::max<int64_t>(1, static_cast<int64_t>(mib * 1024.0 * 1024.0));
}

std::string_view to_string(TranspileMode mode) {
  switch (mode) {
    case TranspileMode::kGradAllReduce: return "grad_allreduce";
    case TranspileMode::kLocalSgd: return "local_sgd";
    case TranspileMode::kSingleProcessMultiThread: return "single_process_multi_thread";
    case TranspileMode::kMultiThread: return "multi_thread";
  }
  return "unknown";
}

std::string_view to_string(MultiThreadTransMode mode) {
  switch (mode) {
    case MultiThreadTransMode::kFuseAllReduce: return "fuse_all_reduce";
    case MultiThreadTransMode::kAllGather: return "all_gather";
    case MultiThreadTransMode::kAllReduce: return "all_reduce";
  }
  return "unknown";
}

TranspileMode parse_transpile_mode(std::string_view name) {
  for (TranspileMode m : {TranspileMode::kGradAllReduce, TranspileMode::kLocalSgd,
                          TranspileMode::kSingleProcessMultiThread, TranspileMode::kMultiThread})
    if (to_string(m) == name) return m;
  throw Error("unknown transpile mode '" + std::string(name) +
              "' (expected grad_allreduce, local_sgd, single_process_multi_thread or "
              "multi_thread)");
}

MultiThreadTransMode parse_multi_thread_trans_mode(std::string_view name) {
  for (MultiThreadTransMode m : {MultiThreadTransMode::kFuseAllReduce,
                                 MultiThreadTransMode::kAllGather,
                                 MultiThreadTransMode::kAllReduce})
    if (to_string(m) == name) return m;
  throw Error("unknown multi_thread trans mode '" + std::string(name) +
              "' (expected fuse_all_reduce, all_gather or all_reduce)");
}

}  // namespace ctp
