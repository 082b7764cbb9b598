// MultiThread (collective.py; the reference's mode "box"): several GPUs per
// node; gradients are fused and allreduced (fuse_all_reduce), gathered and
// applied once per rank by split adam ops (all_gather), or allreduced one by
// one as GradAllReduce does (all_reduce).
#pragma once
#include "transpilers/name_generator.h"
#include "transpilers/options.h"
#include "transpilers/pass.h"

namespace ctp {

// Several endpoints: c_gen_nccl_id + c_comm_init_multitrainer per ring; one
// endpoint: c_comm_init_all. No parameter broadcast.
class MultiThreadStartupPass : public ProgramPass {
 public:
  MultiThreadStartupPass(TranspileOptions options, NameGenerator& names)
      : options_(std::move(options)), names_(names) {}
  std::string_view name() const override { return "multi_thread startup"; }
  void run(Program& startup) override;

 private:
  TranspileOptions options_;
  NameGenerator& names_;
};

class MultiThreadMainPass : public ProgramPass {
 public:
  MultiThreadMainPass(TranspileOptions options, NameGenerator& names)
      : options_(std::move(options)), names_(names) {}
  std::string_view name() const override { return "multi_thread main"; }
  void run(Program& main) override;

 private:
  TranspileOptions options_;
  NameGenerator& names_;
};

// The reference's fuse_grad_size_in_num: at most this many grads per coalesce_tensor.
inline constexpr std::size_t kFuseGradSegmentLimit = 128;

}  // namespace ctp
