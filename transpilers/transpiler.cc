#include "transpilers/transpiler.h"

#include <string>

#include "transpilers/collective_rules.h"

namespace ctp {
namespace {

// One of a transpiler's two rewrites as a pass. The startup rewrite of a
// transpiler that uses parameters finds them first (from `main` too, when
// given) and reports them through `found`.
class RewritePass final : public ProgramPass {
 public:
  using Rewrite = void (Transpiler::*)(Program&, const RewriteContext&) const;
  RewritePass(const Transpiler& transpiler, Rewrite rewrite, bool startup, NameGenerator& names,
              std::string name, const Program* main = nullptr,
              std::optional<ParameterSet>* found = nullptr)
      : transpiler_(transpiler),
        rewrite_(rewrite),
        startup_(startup),
        names_(names),
        name_(std::move(name)),
        main_(main),
        found_(found) {}
  std::string_view name() const override { return name_; }
  void run(Program& program) override {
    transpiler_.check();
    RewriteContext context{names_, name_};
    std::optional<ParameterSet> parameters;
    if (startup_ && transpiler_.uses_parameters()) {
      parameters = find_parameters(program, main_, transpiler_.collective().params);
      context.parameters = &*parameters;
    }
    (transpiler_.*rewrite_)(program, context);
    if (found_) *found_ = std::move(parameters);
  }

 private:
  const Transpiler& transpiler_;
  Rewrite rewrite_;
  bool startup_;
  NameGenerator& names_;
  std::string name_;
  const Program* main_;
  std::optional<ParameterSet>* found_;
};

}  // namespace

std::string Transpiler::error_prefix() const { return "transpile " + std::string(name()) + ": "; }

void Transpiler::check() const {
  check_collective_job(error_prefix(), collective_, rules_);
  check_options();
}

void Transpiler::check_options() const {
  check_ring_options(error_prefix(), collective_, rules_);
  check_own_options();
}

std::unique_ptr<ProgramPass> Transpiler::startup_pass(NameGenerator& names,
                                                      const Program* main) const {
  return std::make_unique<RewritePass>(*this, &Transpiler::rewrite_startup, true, names,
                                       std::string(name()) + " startup", main);
}

std::unique_ptr<ProgramPass> Transpiler::main_pass(NameGenerator& names) const {
  return std::make_unique<RewritePass>(*this, &Transpiler::rewrite_main, false, names,
                                       std::string(name()) + " main");
}

TranspileReport Transpiler::run(Program& startup, Program& main) const {
  return run(startup, main, nullptr);
}

TranspileReport Transpiler::run(Program& startup, Program& main,
                                const std::function<void(const Program&)>& startup_done) const {
  check();
  TranspileReport report;
  NameGenerator names;
  RewritePass(*this, &Transpiler::rewrite_startup, true, names, std::string(name()) + " startup",
              &main, &report.parameters)
      .run(startup);
  if (startup_done) startup_done(startup);
  main_pass(names)->run(main);
  return report;
}

}  // namespace ctp
