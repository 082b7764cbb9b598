#include "transpilers/grad_allreduce.h"

#include <algorithm>
#include <limits>

#include "program_ir/error.h"
#include "transpilers/collective_steps.h"

namespace ctp {

int64_t bucket_bytes_for_mib(double mib) {
  const double bytes = mib * 1024.0 * 1024.0;
  if (!(bytes < static_cast<double>(std::numeric_limits<int64_t>::max())))
    return std::numeric_limits<int64_t>::max();
  return std::max<int64_t>(1, static_cast<int64_t>(bytes));
}

void GradAllReduceTranspiler::check_own_options() const {
  if (options_.bucket_bytes < 0)
    throw Error(error_prefix() + "bucket_bytes must be >= 0, got " +
                std::to_string(options_.bucket_bytes));
}

void rewrite_collective_startup(const Transpiler& transpiler, Program& startup,
                                const RewriteContext& context) {
  const int nrings = transpiler.nrings();
  Block& block = startup.global_block();
  for (int ring_id = 0; ring_id < nrings; ++ring_id)
    append_communicator_init(block, transpiler.collective(), ring_id, /*multitrainer=*/false,
                             context.names, context.pass);
  append_param_broadcast(block, nrings, *context.parameters, transpiler.collective().dialect,
                         context.pass);
}

void GradAllReduceTranspiler::rewrite_startup(Program& startup,
                                              const RewriteContext& context) const {
  rewrite_collective_startup(*this, startup, context);
}

void GradAllReduceTranspiler::rewrite_main(Program& main, const RewriteContext& context) const {
  Block& block = main.global_block();
  const double nranks = static_cast<double>(collective().endpoints.size());
  insert_loss_grad_scale(block, static_cast<float>(1.0 / nranks), context.pass);
  if (options_.bucket_bytes > 0)
    insert_bucketed_grad_allreduce(block, nrings(), options_.bucket_bytes, context.names,
                                   context.pass);
  else
    insert_grad_allreduce(block, nrings(), context.pass);
}

TranspilerRegistration grad_allreduce_registration() {
  return {
      .name = "grad_allreduce",
      .reference_class = "GradAllReduce",
      .summary = "scale the loss gradient by 1/nranks, allreduce every gradient",
      .rings = GradAllReduceTranspiler::kRings,
      .settings = {{.name = "bucket-mb",
                    .help = "ctp's schedule (not the reference's): coalesce the gradients "
                            "into buckets of about this many MiB in the order the backward "
                            "makes them, one c_allreduce_sum per bucket right after its last "
                            "gradient"}},
      .create = [](const CollectiveOptions& collective, const TranspilerSettings& settings)
          -> std::unique_ptr<Transpiler> {
        GradAllReduceOptions options;
        if (settings.count("bucket-mb"))
          options.bucket_bytes =
              bucket_bytes_for_mib(setting_positive_number(settings, "bucket-mb"));
        return std::make_unique<GradAllReduceTranspiler>(collective, options);
      },
  };
}

}  // namespace ctp
