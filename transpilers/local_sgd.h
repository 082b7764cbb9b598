// LocalSGD (collective.py): each rank updates its own parameters; after every
// update the change since the last snapshot is allreduced and averaged.
#pragma once
#include <string>

#include "transpilers/name_generator.h"
#include "transpilers/options.h"
#include "transpilers/pass.h"

namespace ctp {

// The collective startup, then a "<param>@SNAPSHOT" copy of every
// non-distributed parameter.
class LocalSgdStartupPass : public ProgramPass {
 public:
  LocalSgdStartupPass(TranspileOptions options, NameGenerator& names)
      : options_(std::move(options)), names_(names) {}
  std::string_view name() const override { return "local_sgd startup"; }
  void run(Program& startup) override;

 private:
  TranspileOptions options_;
  NameGenerator& names_;
};

// After each update op: snapshot - param, sync, allreduce; at the end of the
// block: one c_sync_comm_stream per ring, then scale / sub / assign per param.
class LocalSgdMainPass : public ProgramPass {
 public:
  explicit LocalSgdMainPass(TranspileOptions options) : options_(std::move(options)) {}
  std::string_view name() const override { return "local_sgd main"; }
  void run(Program& main) override;

 private:
  TranspileOptions options_;
};

inline std::string snapshot_name(const std::string& param) { return param + "@SNAPSHOT"; }

}  // namespace ctp
