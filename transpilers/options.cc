#include "transpilers/options.h"

#include <string>

#include "program_ir/error.h"
#include "transpilers/transpiler_registry.h"

namespace ctp {

std::string_view to_string(TranspileMode mode) {
  switch (mode) {
    case TranspileMode::kGradAllReduce: return "grad_allreduce";
    case TranspileMode::kLocalSgd: return "local_sgd";
    case TranspileMode::kSingleProcessMultiThread: return "single_process_multi_thread";
    case TranspileMode::kMultiThread: return "multi_thread";
  }
  return "unknown";
}

TranspileMode parse_transpile_mode(std::string_view name) {
  for (TranspileMode m : {TranspileMode::kGradAllReduce, TranspileMode::kLocalSgd,
                          TranspileMode::kSingleProcessMultiThread, TranspileMode::kMultiThread})
    if (to_string(m) == name) return m;
  const TranspilerRegistry& registry = builtin_transpilers();
  if (registry.find(name))
    throw Error("transpiler '" + std::string(name) + "' has no TranspileMode; use the registry");
  throw Error("unknown transpile mode '" + std::string(name) + "' (expected " +
              registry.names_text() + ")");
}

}  // namespace ctp
