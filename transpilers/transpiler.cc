#include "transpilers/transpiler.h"

#include <string>

#include "transpilers/collective_rules.h"

namespace ctp {
namespace {

// One of a transpiler's two rewrites as a pass.
class RewritePass final : public ProgramPass {
 public:
  using Rewrite = void (Transpiler::*)(Program&, const RewriteContext&) const;
  RewritePass(const Transpiler& transpiler, Rewrite rewrite, NameGenerator& names,
              std::string name)
      : transpiler_(transpiler), rewrite_(rewrite), names_(names), name_(std::move(name)) {}
  std::string_view name() const override { return name_; }
  void run(Program& program) override {
    transpiler_.check();
    (transpiler_.*rewrite_)(program, RewriteContext{names_, name_});
  }

 private:
  const Transpiler& transpiler_;
  Rewrite rewrite_;
  NameGenerator& names_;
  std::string name_;
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

std::unique_ptr<ProgramPass> Transpiler::startup_pass(NameGenerator& names) const {
  return std::make_unique<RewritePass>(*this, &Transpiler::rewrite_startup, names,
                                       std::string(name()) + " startup");
}

std::unique_ptr<ProgramPass> Transpiler::main_pass(NameGenerator& names) const {
  return std::make_unique<RewritePass>(*this, &Transpiler::rewrite_main, names,
                                       std::string(name()) + " main");
}

void Transpiler::run(Program& startup, Program& main) const {
  check();
  NameGenerator names;
  startup_pass(names)->run(startup);
  main_pass(names)->run(main);
}

}  // namespace ctp
