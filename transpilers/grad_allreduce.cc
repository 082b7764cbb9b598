#include "transpilers/grad_allreduce.h"

#include "transpilers/collective_rules.h"
#include "transpilers/collective_steps.h"

namespace ctp {

void run_collective_startup(TranspileMode mode, const TranspileOptions& options,
                            Program& startup, NameGenerator& names, std::string_view pass) {
  check_transpile_options(mode, options);
  const int nrings = resolved_nrings(mode, options.collective);
  Block& block = startup.global_block();
  for (int ring_id = 0; ring_id < nrings; ++ring_id)
    append_communicator_init(block, options.collective, ring_id, /*multitrainer=*/false,
                             names, pass);
  append_param_broadcast(block, nrings, pass);
}

void GradAllReduceStartupPass::run(Program& startup) {
  run_collective_startup(TranspileMode::kGradAllReduce, options_, startup, names_, name());
}

void GradAllReduceMainPass::run(Program& main) {
  constexpr TranspileMode mode = TranspileMode::kGradAllReduce;
  check_transpile_options(mode, options_);
  Block& block = main.global_block();
  const double nranks = effective_nranks(mode, options_.collective);
  insert_loss_grad_scale(block, static_cast<float>(1.0 / nranks), name());
  const int nrings = resolved_nrings(mode, options_.collective);
  if (options_.grad_allreduce.bucket_bytes > 0)
    insert_bucketed_grad_allreduce(block, nrings, options_.grad_allreduce.bucket_bytes, names_,
                                   name());
  else
    insert_grad_allreduce(block, nrings, name());
}

}  // namespace ctp
