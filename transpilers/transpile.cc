#include "transpilers/transpile.h"

#include <string>

#include "program_ir/error.h"
#include "transpilers/local_sgd.h"

namespace ctp {

std::unique_ptr<Transpiler> make_transpiler(TranspileMode mode, const TranspileOptions& o) {
  // The one option of this struct another mode could be given by mistake and
  // silently lose (the registry refuses it as a setting the mode does not take).
  if (mode != TranspileMode::kGradAllReduce && o.grad_allreduce.bucket_bytes != 0)
    throw Error("transpile " + std::string(to_string(mode)) + ": gradient buckets (bucket_bytes " +
                std::to_string(o.grad_allreduce.bucket_bytes) +
                ") are a grad_allreduce schedule; this mode has its own fusion");
  switch (mode) {
    case TranspileMode::kGradAllReduce:
      return std::make_unique<GradAllReduceTranspiler>(o.collective, o.grad_allreduce);
    case TranspileMode::kLocalSgd:
      return std::make_unique<LocalSgdTranspiler>(o.collective);
    case TranspileMode::kSingleProcessMultiThread:
      return std::make_unique<SingleProcessMultiThreadTranspiler>(
          o.collective, o.single_process_multi_thread);
    case TranspileMode::kMultiThread:
      return std::make_unique<MultiThreadTranspiler>(o.collective, o.multi_thread);
  }
  return nullptr;
}

TranspileReport transpile(TranspileMode mode, const TranspileOptions& options, Program& startup,
                          Program& main) {
  return make_transpiler(mode, options)->run(startup, main);
}

TranspileReport transpile(std::string_view name, const CollectiveOptions& collective,
                          const TranspilerSettings& settings, Program& startup, Program& main) {
  return builtin_transpilers().create(name, collective, settings)->run(startup, main);
}

}  // namespace ctp
