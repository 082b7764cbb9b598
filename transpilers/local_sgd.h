// LocalSGD (collective.py): each rank updates its own parameters; after every
// update the change since the last snapshot is allreduced and averaged.
#pragma once
#include <string>

#include "transpilers/grad_allreduce.h"
#include "transpilers/transpiler.h"
#include "transpilers/transpiler_registry.h"

namespace ctp {

// LocalSGD takes no options beyond CollectiveOptions.
class LocalSgdTranspiler final : public Transpiler {
 public:
  static constexpr RingRules kRings{.default_nrings = 2};
  explicit LocalSgdTranspiler(CollectiveOptions collective)
      : Transpiler(std::move(collective), kRings) {}
  std::string_view name() const override { return "local_sgd"; }
  bool uses_parameters() const override { return true; }

 private:
  // The collective startup, then a "<param>@SNAPSHOT" copy of every
  // non-distributed parameter.
  void rewrite_startup(Program& startup, const RewriteContext& context) const override;
  // After each update op: snapshot - param, sync, allreduce; at the end of the
  // block: one c_sync_comm_stream per ring, then scale / sub / assign per param.
  void rewrite_main(Program& main, const RewriteContext& context) const override;
};

TranspilerRegistration local_sgd_registration();

inline std::string snapshot_name(const std::string& param) { return param + "@SNAPSHOT"; }

}  // namespace ctp
