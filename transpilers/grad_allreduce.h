// GradAllReduce (collective.py): every rank runs the whole program; gradients
// are summed with c_allreduce_sum and the loss gradient is scaled by 1/nranks.
#pragma once
#include "transpilers/name_generator.h"
#include "transpilers/options.h"
#include "transpilers/pass.h"

namespace ctp {

// One communicator per ring, then the parameter broadcast from rank 0.
class GradAllReduceStartupPass : public ProgramPass {
 public:
  GradAllReduceStartupPass(TranspileOptions options, NameGenerator& names)
      : options_(std::move(options)), names_(names) {}
  std::string_view name() const override { return "grad_allreduce startup"; }
  void run(Program& startup) override;

 private:
  TranspileOptions options_;
  NameGenerator& names_;
};

// Loss-gradient scale, then allreduce of every non-distributed gradient
// (one call per gradient, or per bucket: GradAllReduceOptions).
class GradAllReduceMainPass : public ProgramPass {
 public:
  // Bucket vars are named by `names` (shared with the startup pass), or by a
  // generator of the pass's own.
  explicit GradAllReduceMainPass(TranspileOptions options)
      : options_(std::move(options)), names_(own_names_) {}
  GradAllReduceMainPass(TranspileOptions options, NameGenerator& names)
      : options_(std::move(options)), names_(names) {}
  std::string_view name() const override { return "grad_allreduce main"; }
  void run(Program& main) override;

 private:
  TranspileOptions options_;
  NameGenerator own_names_;
  NameGenerator& names_;
};

// Collective._transpile_startup_program, shared with LocalSGD.
void run_collective_startup(TranspileMode mode, const TranspileOptions& options,
                            Program& startup, NameGenerator& names, std::string_view pass);

}  // namespace ctp
