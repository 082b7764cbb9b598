#include "transpilers/transpile.h"

#include "transpilers/collective_rules.h"
#include "transpilers/grad_allreduce.h"
#include "transpilers/local_sgd.h"
#include "transpilers/multi_thread.h"
#include "transpilers/single_process_multi_thread.h"

namespace ctp {

std::unique_ptr<ProgramPass> make_startup_pass(TranspileMode mode,
                                               const TranspileOptions& options,
                                               NameGenerator& names) {
  switch (mode) {
    case TranspileMode::kGradAllReduce:
      return std::make_unique<GradAllReduceStartupPass>(options, names);
    case TranspileMode::kLocalSgd:
      return std::make_unique<LocalSgdStartupPass>(options, names);
    case TranspileMode::kSingleProcessMultiThread:
      return std::make_unique<SingleProcessMultiThreadStartupPass>(options, names);
    case TranspileMode::kMultiThread:
      return std::make_unique<MultiThreadStartupPass>(options, names);
  }
  return nullptr;
}

std::unique_ptr<ProgramPass> make_main_pass(TranspileMode mode, const TranspileOptions& options,
                                            NameGenerator& names) {
  switch (mode) {
    case TranspileMode::kGradAllReduce:
      return std::make_unique<GradAllReduceMainPass>(options, names);
    case TranspileMode::kLocalSgd:
      return std::make_unique<LocalSgdMainPass>(options);
    case TranspileMode::kSingleProcessMultiThread:
      return std::make_unique<SingleProcessMultiThreadMainPass>(options);
    case TranspileMode::kMultiThread:
      return std::make_unique<MultiThreadMainPass>(options, names);
  }
  return nullptr;
}

void transpile(TranspileMode mode, const TranspileOptions& options, Program& startup,
               Program& main) {
  check_transpile_options(mode, options);
  NameGenerator names;
  make_startup_pass(mode, options, names)->run(startup);
  make_main_pass(mode, options, names)->run(main);
}

}  // namespace ctp
