// SingleProcessMultiThread (collective.py): one process drives several GPUs;
// across nodes (several distinct hosts) gradients are fused and allreduced.
#pragma once
#include "transpilers/name_generator.h"
#include "transpilers/options.h"
#include "transpilers/pass.h"

namespace ctp {

// Several hosts: c_gen_nccl_id + c_comm_init_multitrainer (one ring); one
// host: c_comm_init_all. No parameter broadcast.
class SingleProcessMultiThreadStartupPass : public ProgramPass {
 public:
  SingleProcessMultiThreadStartupPass(TranspileOptions options, NameGenerator& names)
      : options_(std::move(options)), names_(names) {}
  std::string_view name() const override { return "single_process_multi_thread startup"; }
  void run(Program& startup) override;

 private:
  TranspileOptions options_;
  NameGenerator& names_;
};

// Loss-gradient scale by 1/hosts/gpus, then (per fuse_allreduce) one coalesced
// allreduce, one c_allreduce_xsum, or GradAllReduce's allreduce per gradient.
class SingleProcessMultiThreadMainPass : public ProgramPass {
 public:
  explicit SingleProcessMultiThreadMainPass(TranspileOptions options)
      : options_(std::move(options)) {}
  std::string_view name() const override { return "single_process_multi_thread main"; }
  void run(Program& main) override;

 private:
  TranspileOptions options_;
};

}  // namespace ctp
