// Transpiler::run_concurrently (the two rewrites at once, as `ctp transpile`
// runs them) against Transpiler::run (one after the other): the same
// programs, the same parameters, and the same error when both rewrites fail.
// Also built into the ThreadSanitizer tests (tests/CMakeLists.txt).
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "program_ir/error.h"
#include "tests/transpiler_test_programs.h"
#include "transpilers/transpiler_registry.h"

namespace ctp {
namespace {

using testing::build_main;
using testing::build_startup;
using testing::error_of;
using testing::ModelSpec;
using testing::options_for;

struct Case {
  std::string mode;
  TranspilerSettings settings;
  testing::Optimizer optimizer = testing::Optimizer::kSgd;
};

std::vector<Case> every_mode() {
  return {
      {"grad_allreduce", {}},
      {"grad_allreduce", {{"bucket-mb", "0.001"}}},
      {"local_sgd", {}},
      {"single_process_multi_thread", {}},
      {"single_process_multi_thread", {{"fuse-allreduce", "2"}}},
      {"multi_thread", {}},
      {"multi_thread", {{"trans-mode", "all_reduce"}}},
      {"multi_thread", {{"trans-mode", "all_gather"}}, testing::Optimizer::kAdam},
  };
}

TEST(TranspilerConcurrent, GivesWhatRunGivesInEveryMode) {
  for (const Case& c : every_mode()) {
    SCOPED_TRACE(c.mode);
    const ModelSpec spec{.layers = 3, .optimizer = c.optimizer, .distributed = {"fc_1.b_0"}};
    CollectiveOptions collective = options_for(2, 1).collective;
    collective.nrings.reset();  // each mode's default
    const auto transpiler = builtin_transpilers().create(c.mode, collective, c.settings);
    Program startup = build_startup(spec), main = build_main(spec);
    const TranspileReport in_turn = transpiler->run(startup, main);

    Program startup2 = build_startup(spec), main2 = build_main(spec);
    std::atomic<int> startup_done_calls{0};
    const TranspileReport at_once =
        transpiler->run_concurrently(startup2, main2, [&](const Program& done) {
          // Called with startup's rewrite finished.
          EXPECT_EQ(done, startup);
          ++startup_done_calls;
        });
    EXPECT_EQ(startup_done_calls.load(), 1);
    EXPECT_EQ(startup2, startup);
    EXPECT_EQ(main2, main);
    ASSERT_EQ(at_once.parameters.has_value(), in_turn.parameters.has_value());
    if (in_turn.parameters) {
      EXPECT_EQ(at_once.parameters->names, in_turn.parameters->names);
      EXPECT_EQ(at_once.parameters->source, in_turn.parameters->source);
    }
  }
}

// A transpiler whose rewrites are scripted by the test.
class ScriptedTranspiler final : public Transpiler {
 public:
  struct Script {
    std::string startup_key, main_key;  // names generated from these, when set
    std::string startup_error, main_error;  // thrown, when set
  };
  explicit ScriptedTranspiler(Script script)
      : Transpiler(options_for(2, 0).collective, RingRules{}), script_(std::move(script)) {}
  std::string_view name() const override { return "scripted"; }

 protected:
  void rewrite_startup(Program& startup, const RewriteContext& context) const override {
    rewrite(startup, context, script_.startup_key, script_.startup_error);
  }
  void rewrite_main(Program& main, const RewriteContext& context) const override {
    rewrite(main, context, script_.main_key, script_.main_error);
  }

 private:
  static void rewrite(Program& program, const RewriteContext& context, const std::string& key,
                      const std::string& error) {
    if (!key.empty())
      program.global_block().append_op(Op("marker", {}, {{"Out", {context.names.generate(key)}}}));
    if (!error.empty()) throw Error(error);
  }
  Script script_;
};

TEST(TranspilerConcurrent, KeysOfEachRewriteOwnGiveRunsNames) {
  const ScriptedTranspiler t({.startup_key = "nccl_id", .main_key = "grad_bucket"});
  Program startup = Program::with_global_block(), main = Program::with_global_block();
  Program startup2 = startup, main2 = main;
  t.run(startup, main);
  t.run_concurrently(startup2, main2, nullptr);
  EXPECT_EQ(startup2, startup);
  EXPECT_EQ(main2, main);
  EXPECT_EQ(main2.global_block().ops().front().output("Out")->front(), "grad_bucket_0");
}

// With its own counters each, a key both rewrites use would name main's var
// "k_0" where run() names it "k_1": refused rather than written.
TEST(TranspilerConcurrent, AKeyBothRewritesUseIsAnInternalError) {
  const ScriptedTranspiler t({.startup_key = "k", .main_key = "k"});
  Program startup = Program::with_global_block(), main = Program::with_global_block();
  const std::string error = error_of([&] { t.run_concurrently(startup, main, nullptr); });
  EXPECT_NE(error.find("internal error: transpile scripted: the startup and main rewrites both "
                       "generate names from 'k'"),
            std::string::npos)
      << error;
}

TEST(TranspilerConcurrent, StartupsErrorComesFirstAsInRun) {
  const ScriptedTranspiler t({.startup_error = "startup broke", .main_error = "main broke"});
  Program startup = Program::with_global_block(), main = Program::with_global_block();
  bool called = false;
  const auto note_call = [&](const Program&) { called = true; };
  EXPECT_EQ(error_of([&] { t.run_concurrently(startup, main, note_call); }), "startup broke");
  EXPECT_FALSE(called);  // startup_done follows a rewrite that finished only

  const ScriptedTranspiler main_only({.main_error = "main broke"});
  EXPECT_EQ(error_of([&] { main_only.run_concurrently(startup, main, nullptr); }), "main broke");
}

}  // namespace
}  // namespace ctp
