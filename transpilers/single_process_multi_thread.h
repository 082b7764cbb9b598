// SingleProcessMultiThread (collective.py): one process drives several GPUs;
// across nodes (several distinct hosts) gradients are fused and allreduced.
#pragma once
#include "transpilers/transpiler.h"
#include "transpilers/transpiler_registry.h"

namespace ctp {

// Paddle read these from the environment (`ctp transpile` still does).
struct SingleProcessMultiThreadOptions {
  int fuse_allreduce = 1;  // PADDLE_FUSE_ALLREDUCE: 0 allreduce per grad, 1 coalesce, 2 xsum
  int loss_scale = 1;      // PADDLE_LOSS_SCALE: 0 leaves the loss gradient unscaled
  int gpu_nums = 8;        // number of FLAGS_selected_gpus (default "0,...,7")
};

class SingleProcessMultiThreadTranspiler final : public Transpiler {
 public:
  static constexpr RingRules kRings{
      .default_nrings = 1, .one_ring_only = true, .single_endpoint_allowed = true};
  SingleProcessMultiThreadTranspiler(CollectiveOptions collective,
                                     SingleProcessMultiThreadOptions options = {})
      : Transpiler(std::move(collective), kRings), options_(options) {}
  std::string_view name() const override { return "single_process_multi_thread"; }
  const SingleProcessMultiThreadOptions& options() const { return options_; }

  // The reference's self.nranks as the main rewrite sees it: the startup
  // rewrite resets it to the number of distinct hosts when there are several,
  // else to 1.
  int node_count() const;

 private:
  void check_own_options() const override;
  // Several hosts: c_gen_nccl_id + c_comm_init_multitrainer (one ring); one
  // host: c_comm_init_all. No parameter broadcast.
  void rewrite_startup(Program& startup, const RewriteContext& context) const override;
  // Loss-gradient scale by 1/hosts/gpus, then (per fuse_allreduce) one
  // coalesced allreduce, one c_allreduce_xsum, or GradAllReduce's allreduce
  // per gradient.
  void rewrite_main(Program& main, const RewriteContext& context) const override;

  SingleProcessMultiThreadOptions options_;
};

TranspilerRegistration single_process_multi_thread_registration();

}  // namespace ctp
