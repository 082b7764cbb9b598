// Which vars are parameters (CollectiveOptions::params, ctp transpile
// --params): marked as the reference, the update ops' Param inputs, or auto;
// and the saved training programs of ../shared/realworld/programs, which mark
// none, transpiled in every mode and both op dialects.
#include <gtest/gtest.h>

#include <filesystem>

#include "program_ir/error.h"
#include "program_ir/program_io.h"
#include "program_ir/verify.h"
#include "tests/transpiler_test_programs.h"
#include "transpilers/transpile.h"

namespace ctp {
namespace {

namespace fs = std::filesystem;
using testing::build_main;
using testing::error_of;
using testing::build_startup;
using testing::ModelSpec;
using testing::op_types;
using testing::options_for;

const fs::path kPrograms = fs::path(CTP_SOURCE_DIR) / ".." / "shared" / "realworld" / "programs";

// A saved training program: the PaddleFL pairs, and PaddleX's main program
// with an empty startup program (none was saved beside it).
struct SavedProgram {
  std::string name;
  std::string startup;  // empty: an empty program
  std::string main;
  std::size_t params;   // persistable Param inputs of its update ops
};

const std::vector<SavedProgram>& saved_programs() {
  static const std::vector<SavedProgram> programs = {
      {"amarnathkurup_flsmoking", "amarnathkurup_flsmoking_trainer0_startup.program",
       "amarnathkurup_flsmoking_trainer0_main.program", 2},
      {"beiyuouo_paddleflgui", "beiyuouo_paddleflgui_trainer0_startup.program",
       "beiyuouo_paddleflgui_trainer0_main.program", 6},
      {"errorkeen_trash (PaddleX)", "", "errorkeen_trash_best_model_train.pdmodel", 129}};
  return programs;
}

Program empty_program() {
  Program p;
  p.blocks.emplace_back();
  return p;
}

std::pair<Program, Program> load(const SavedProgram& s) {
  return {s.startup.empty() ? empty_program() : load_program_file((kPrograms / s.startup).string()),
          load_program_file((kPrograms / s.main).string())};
}

bool have_saved_programs() {
  for (const SavedProgram& s : saved_programs())
    if (!fs::exists(kPrograms / s.main)) return false;
  return true;
}

TEST(TranspilerParams, SavedProgramsTranspileInEveryModeAndDialect) {
  if (!have_saved_programs()) GTEST_SKIP() << "no saved programs under " << kPrograms;
  for (const SavedProgram& s : saved_programs()) {
    for (const TranspilerRegistration& r : builtin_transpilers().all()) {
      for (OpDialect dialect : {OpDialect::kLegacy, OpDialect::kPaddle3}) {
        SCOPED_TRACE(s.name + ", " + r.name + ", " + std::string(to_string(dialect)));
        auto [startup, main] = load(s);
        CollectiveOptions c = options_for(2, 1).collective;
        c.nrings.reset();
        c.dialect = dialect;
        const auto transpiler = builtin_transpilers().create(r.name, c);
        TranspileReport report;
        ASSERT_NO_THROW(report = transpiler->run(startup, main));
        if (transpiler->uses_parameters()) {
          ASSERT_TRUE(report.parameters);
          EXPECT_EQ(report.parameters->source, ParamSource::kOptimizer);
          EXPECT_EQ(report.parameters->names.size(), s.params);
          const auto types = op_types(startup.global_block());
          const char* broadcast = dialect == OpDialect::kLegacy ? "c_broadcast" : "broadcast";
          EXPECT_EQ(std::count(types.begin(), types.end(), broadcast),
                    static_cast<std::ptrdiff_t>(s.params));
        }
        for (const Program* p : {&startup, &main})
          EXPECT_FALSE(has_errors(verify_program(*p)));
      }
    }
  }
}

// The same program with its parameters marked, as a Paddle 2 file would be:
// `optimizer` finds what `marked` is given, op for op.
TEST(TranspilerParams, OptimizerSourceEqualsTheMarkedParameters) {
  if (!have_saved_programs()) GTEST_SKIP() << "no saved programs under " << kPrograms;
  for (const SavedProgram& s : saved_programs()) {
    if (s.startup.empty()) continue;
    for (TranspileMode mode : {TranspileMode::kGradAllReduce, TranspileMode::kLocalSgd}) {
      SCOPED_TRACE(s.name + ", " + std::string(to_string(mode)));
      auto [startup, main] = load(s);
      auto [marked_startup, marked_main] = load(s);
      TranspileOptions o = options_for(4, 2);
      // Unmarked, the reference's rule finds nothing.
      o.collective.params = ParamSource::kMarked;
      EXPECT_NE(error_of([&, &st = startup, &mn = main] {
                  Program a = st, b = mn;
                  transpile(mode, o, a, b);
                }).find("declares no parameter"),
                std::string::npos);
      const ParameterSet found = find_parameters(startup, &main, ParamSource::kOptimizer);
      for (const std::string& name : found.names)
        marked_startup.global_block().find_var(name)->is_parameter = true;
      transpile(mode, o, marked_startup, marked_main);
      o.collective.params = ParamSource::kOptimizer;
      transpile(mode, o, startup, main);
      for (const std::string& name : found.names)  // the only difference left
        startup.global_block().find_var(name)->is_parameter = true;
      EXPECT_EQ(startup, marked_startup);
      EXPECT_EQ(main, marked_main);
    }
  }
}

TEST(TranspilerParams, AutoTakesTheMarkedOnesWhenAnyIsMarked) {
  const Program startup = build_startup(ModelSpec{});
  const Program main = build_main(ModelSpec{});
  const ParameterSet marked = find_parameters(startup, &main, ParamSource::kAuto);
  EXPECT_EQ(marked.source, ParamSource::kMarked);
  EXPECT_EQ(marked.names,
            (std::vector<std::string>{"fc_0.w_0", "fc_0.b_0", "fc_1.w_0", "fc_1.b_0"}));
  EXPECT_EQ(describe(marked, ParamSource::kAuto), "4 parameters: the vars marked is_parameter");
  // Marking only one changes what auto takes: the reference's rule wins.
  Program one = startup;
  for (Var& v : one.global_block().mutable_vars()) v.is_parameter = v.name == "fc_1.b_0";
  EXPECT_EQ(find_parameters(one, &main, ParamSource::kAuto).names,
            std::vector<std::string>{"fc_1.b_0"});
  // None marked: the update ops' persistable Param inputs, in the startup's order.
  Program none = startup;
  for (Var& v : none.global_block().mutable_vars()) v.is_parameter = false;
  const ParameterSet found = find_parameters(none, &main, ParamSource::kAuto);
  EXPECT_EQ(found.source, ParamSource::kOptimizer);
  EXPECT_EQ(found.names, marked.names);
  EXPECT_NE(describe(found, ParamSource::kAuto).find("no var is marked is_parameter, so"),
            std::string::npos);
  EXPECT_NE(error_of([&] { find_parameters(none, nullptr, ParamSource::kAuto); })
                .find("need the main program"),
            std::string::npos);
}

TEST(TranspilerParams, OptimizerSkipsNonPersistableAndDeclaresMissingOnes) {
  Program startup = build_startup(ModelSpec{});
  Program main = build_main(ModelSpec{});
  for (Var& v : startup.global_block().mutable_vars()) v.is_parameter = false;
  main.global_block().find_var("fc_0.b_0")->persistable = false;  // not a parameter then
  startup.global_block().remove_var("fc_1.w_0");                  // only main declares it
  const ParameterSet found = find_parameters(startup, &main, ParamSource::kOptimizer);
  EXPECT_EQ(found.names, (std::vector<std::string>{"fc_0.w_0", "fc_1.b_0", "fc_1.w_0"}));
  ASSERT_EQ(found.undeclared.size(), 1u);
  EXPECT_EQ(found.undeclared[0].name, "fc_1.w_0");
  TranspileOptions o = options_for(2, 0, 1);
  o.collective.dialect = OpDialect::kPaddle3;
  transpile(TranspileMode::kGradAllReduce, o, startup, main);
  const Var* declared = startup.global_block().find_var("fc_1.w_0");
  ASSERT_NE(declared, nullptr);
  EXPECT_EQ(declared->shape, main.global_block().find_var("fc_1.w_0")->shape);
  const auto types = op_types(startup.global_block());
  EXPECT_EQ(std::count(types.begin(), types.end(), "broadcast"), 3);
}

}  // namespace
}  // namespace ctp
