// GradAllReduce (collective.py): every rank runs the whole program; gradients
// are summed with c_allreduce_sum and the loss gradient is scaled by 1/nranks.
#pragma once
#include <cstdint>

#include "transpilers/transpiler.h"
#include "transpilers/transpiler_registry.h"

namespace ctp {

// ctp's own schedule, past the reference: with bucket_bytes > 0 the
// gradients, in the order the backward pass makes them, are coalesced into
// buckets of one dtype of about bucket_bytes each (coalesce_tensor: views into
// one buffer, so nothing is copied after the first step), and each bucket's one
// c_allreduce_sum goes right after the op that makes its last gradient. The
// all-reduces then overlap the rest of the backward pass as the reference's
// per-gradient ones do, in fewer and larger calls (DDP's buckets, without its
// copies). 0: the reference's schedule.
struct GradAllReduceOptions {
  int64_t bucket_bytes = 0;
};

// bucket_bytes for a bucket of `mib` MiB (> 0), as the CLI flags --bucket-mb
// give it: at least one byte, at most INT64_MAX.
int64_t bucket_bytes_for_mib(double mib);

class GradAllReduceTranspiler final : public Transpiler {
 public:
  static constexpr RingRules kRings{.default_nrings = 2};
  GradAllReduceTranspiler(CollectiveOptions collective, GradAllReduceOptions options = {})
      : Transpiler(std::move(collective), kRings), options_(options) {}
  std::string_view name() const override { return "grad_allreduce"; }
  const GradAllReduceOptions& options() const { return options_; }
  bool uses_parameters() const override { return true; }

 private:
  void check_own_options() const override;
  // One communicator per ring, then the parameter broadcast from rank 0.
  void rewrite_startup(Program& startup, const RewriteContext& context) const override;
  // Loss-gradient scale, then allreduce of every non-distributed gradient (one
  // call per gradient, or per bucket). Bucket vars are named by context.names.
  void rewrite_main(Program& main, const RewriteContext& context) const override;

  GradAllReduceOptions options_;
};

TranspilerRegistration grad_allreduce_registration();

// Collective._transpile_startup_program (GradAllReduce, LocalSGD): one
// communicator per ring, then the parameter broadcast from rank 0 (of
// context.parameters, which must be set).
void rewrite_collective_startup(const Transpiler& transpiler, Program& startup,
                                const RewriteContext& context);

}  // namespace ctp
