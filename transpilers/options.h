// The built-in transpilers' options in one struct, for the enum-based
// convenience in transpile.h: transpile(TranspileMode::kGradAllReduce, options,
// startup, main). Each transpiler's own options struct lives beside its class;
// a transpiler added later is reached by name (transpiler_registry.h) or by
// its class, without touching this file.
#pragma once
#include <string_view>

#include "transpilers/collective_options.h"
#include "transpilers/grad_allreduce.h"
#include "transpilers/multi_thread.h"
#include "transpilers/single_process_multi_thread.h"

namespace ctp {

// The reference's transpiler classes.
enum class TranspileMode {
  kGradAllReduce,             // GradAllReduce
  kLocalSgd,                  // LocalSGD
  kSingleProcessMultiThread,  // SingleProcessMultiThread
  kMultiThread,               // MultiThread (the reference calls this mode "box")
};

struct TranspileOptions {
  CollectiveOptions collective;
  GradAllReduceOptions grad_allreduce;
  SingleProcessMultiThreadOptions single_process_multi_thread;
  MultiThreadOptions multi_thread;
};

// The registry's names ("grad_allreduce", ...); parse throws ctp::Error.
std::string_view to_string(TranspileMode mode);
TranspileMode parse_transpile_mode(std::string_view name);

}  // namespace ctp
