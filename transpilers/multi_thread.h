// MultiThread (collective.py; the reference's mode "box"): several GPUs per
// node; gradients are fused and allreduced (fuse_all_reduce), gathered and
// applied once per rank by split adam ops (all_gather), or allreduced one by
// one as GradAllReduce does (all_reduce).
#pragma once
#include <cstddef>
#include <string_view>

#include "transpilers/transpiler.h"
#include "transpilers/transpiler_registry.h"

namespace ctp {

// MultiThread's trans_mode argument.
enum class MultiThreadTransMode { kFuseAllReduce, kAllGather, kAllReduce };
std::string_view to_string(MultiThreadTransMode mode);
// Throws ctp::Error on an unknown name.
MultiThreadTransMode parse_multi_thread_trans_mode(std::string_view name);

struct MultiThreadOptions {
  MultiThreadTransMode trans_mode = MultiThreadTransMode::kFuseAllReduce;
  int gpu_num = 9;  // number of FLAGS_selected_gpus (reference default "0,...,8": nine)
};

class MultiThreadTranspiler final : public Transpiler {
 public:
  static constexpr RingRules kRings{.default_nrings = 1, .single_endpoint_allowed = true};
  MultiThreadTranspiler(CollectiveOptions collective, MultiThreadOptions options = {})
      : Transpiler(std::move(collective), kRings), options_(options) {}
  std::string_view name() const override { return "multi_thread"; }
  const MultiThreadOptions& options() const { return options_; }

 private:
  void check_own_options() const override;
  // Several endpoints: c_gen_nccl_id + c_comm_init_multitrainer per ring; one
  // endpoint: c_comm_init_all. No parameter broadcast.
  void rewrite_startup(Program& startup, const RewriteContext& context) const override;
  // Loss-gradient scale by 1/nranks, then the trans mode's gradient exchange.
  void rewrite_main(Program& main, const RewriteContext& context) const override;

  MultiThreadOptions options_;
};

TranspilerRegistration multi_thread_registration();

// The reference's fuse_grad_size_in_num: at most this many grads per coalesce_tensor.
inline constexpr std::size_t kFuseGradSegmentLimit = 128;

}  // namespace ctp
