// A collective transpiler: the rewrite of one of the reference's classes
// (GradAllReduce, LocalSGD, ...) as one class with its options and checks, in
// the style of MLIR/XLA passes. It holds the job's CollectiveOptions and its
// own options struct, checks both before anything changes, and rewrites the
// startup and the main program, each as a pass (pass.h). transpiler_registry.h finds transpilers by
// name; transpile.h keeps the enum-based convenience for the built-in four.
//
//   GradAllReduceTranspiler t(collective, GradAllReduceOptions{});
//   t.run(startup, main);  // both programs in place
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "program_ir/program.h"
#include "transpilers/collective_options.h"
#include "transpilers/name_generator.h"
#include "transpilers/parameters.h"
#include "transpilers/pass.h"

namespace ctp {

// How a transpiler uses rings and endpoints: facts of the reference's class,
// which the shared checks (collective_rules.h) and the CLI's help read.
struct RingRules {
  int default_nrings = 2;                // when CollectiveOptions::nrings is unset
  bool one_ring_only = false;            // nrings, when given, must be 1
  bool single_endpoint_allowed = false;  // the reference refuses one endpoint elsewhere
};

// What a rewrite gets besides its program: the name generator the two passes
// share, and the pass's name for error messages ("<pass>: block 0, op 3 (...)").
struct RewriteContext {
  NameGenerator& names;
  std::string_view pass;
  // The startup rewrite of a transpiler that uses_parameters(): which vars are
  // parameters (CollectiveOptions::params). Null otherwise.
  const ParameterSet* parameters = nullptr;
};

// What a run found out that its caller may want to say.
struct TranspileReport {
  // Set when the transpiler uses_parameters(): which vars it took, and how.
  std::optional<ParameterSet> parameters;
};

class Transpiler {
 public:
  virtual ~Transpiler() = default;

  // The name the registry, the CLI's --mode and the golden files use.
  virtual std::string_view name() const = 0;

  const CollectiveOptions& collective() const { return collective_; }
  const RingRules& ring_rules() const { return rules_; }
  // The rings to alternate over: collective().nrings or the default.
  int nrings() const { return collective_.nrings.value_or(rules_.default_nrings); }

  // Every check, before anything changes: the shared ones on the job
  // (check_collective_job: endpoints, rank), then check_options(). Throws
  // ctp::Error "transpile <name>: ...".
  void check() const;
  // What the caller chose rather than where the ranks are: the ring count
  // against ring_rules(), then the transpiler's own options
  // (check_own_options). The CLI reports a failure here as a usage error.
  void check_options() const;

  // Whether the startup rewrite reads the parameters (to broadcast or copy
  // them): then they are found per CollectiveOptions::params.
  virtual bool uses_parameters() const { return false; }

  // The two rewrites as passes named "<name> startup" and "<name> main"; each
  // runs check() first. They refer to this transpiler: keep it alive while
  // they run. The startup pass finds the parameters in the program it
  // rewrites and in `main` (ParamSource::kOptimizer needs it).
  std::unique_ptr<ProgramPass> startup_pass(NameGenerator& names,
                                            const Program* main = nullptr) const;
  std::unique_ptr<ProgramPass> main_pass(NameGenerator& names) const;

  // check(), then the startup pass on `startup` and the main pass on `main`,
  // sharing one NameGenerator (Paddle's unique_name counters) as the
  // reference's single transpile() does. An option error leaves both programs
  // untouched; an error found while rewriting (e.g. an undeclared var) may
  // leave them partly rewritten.
  TranspileReport run(Program& startup, Program& main) const;
  // The same, calling startup_done(startup) between the two rewrites: the
  // main rewrite does not touch startup, so a caller may write it meanwhile.
  TranspileReport run(Program& startup, Program& main,
                      const std::function<void(const Program&)>& startup_done) const;

  // "transpile <name>: ", the start of every option error.
  std::string error_prefix() const;

 protected:
  // The rewrites themselves, called after check() passed. `context.pass` names
  // the pass in error messages.
  virtual void rewrite_startup(Program& startup, const RewriteContext& context) const = 0;
  virtual void rewrite_main(Program& main, const RewriteContext& context) const = 0;

  // The transpiler's own options (e.g. a GPU count below one); throws ctp::Error.
  virtual void check_own_options() const {}

  Transpiler(CollectiveOptions collective, RingRules rules)
      : collective_(std::move(collective)), rules_(rules) {}

 private:
  CollectiveOptions collective_;
  RingRules rules_;
};

}  // namespace ctp
