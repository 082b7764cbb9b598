// Transpile-once-then-specialise (ctp transpile --all-ranks) must give exactly
// what a transpile per rank gives, in every mode.
#include <gtest/gtest.h>

#include "program_ir/error.h"
#include "tests/transpiler_test_programs.h"
#include "transpilers/name_generator.h"
#include "transpilers/rank_specialization.h"
#include "transpilers/transpile.h"

namespace ctp {
namespace {

using testing::build_main;
using testing::build_startup;
using testing::ModelSpec;

struct ModeCase {
  TranspileMode mode;
  MultiThreadTransMode trans_mode;
  std::vector<std::string> endpoints;
};

TEST(TranspilerRank, SpecialisedStartupEqualsPerRankTranspile) {
  const std::vector<std::string> four = {"10.0.0.1:1", "10.0.0.1:2", "10.0.0.2:1", "10.0.0.2:2"};
  const std::vector<ModeCase> cases = {
      {TranspileMode::kGradAllReduce, {}, four},
      {TranspileMode::kLocalSgd, {}, four},
      {TranspileMode::kSingleProcessMultiThread, {}, four},
      {TranspileMode::kSingleProcessMultiThread, {}, {"127.0.0.1:1", "127.0.0.1:2"}},
      {TranspileMode::kMultiThread, MultiThreadTransMode::kAllGather, four},
      {TranspileMode::kMultiThread, MultiThreadTransMode::kFuseAllReduce, {"127.0.0.1:1"}},
      // A repeated endpoint: other_endpoints drops only its first occurrence.
      {TranspileMode::kGradAllReduce, {}, {"a:1", "b:1", "a:1"}},
  };
  ModelSpec spec;
  spec.optimizer = testing::Optimizer::kAdam;
  for (const ModeCase& c : cases) {
    TranspileOptions o;
    o.collective.endpoints = c.endpoints;
    o.collective.current_endpoint = c.endpoints[0];
    if (c.mode != TranspileMode::kSingleProcessMultiThread) o.collective.nrings = 2;
    o.multi_thread.trans_mode = c.trans_mode;
    Program startup0 = build_startup(spec);
    Program main0 = build_main(spec);
    const std::size_t original = startup0.global_block().op_count();
    transpile(c.mode, o, startup0, main0);
    StartupRankSpecializer specializer(startup0, original, c.endpoints);
    for (int rank = 0; rank < static_cast<int>(c.endpoints.size()); ++rank) {
      TranspileOptions r = o;
      r.collective.rank = rank;
      r.collective.current_endpoint = c.endpoints[rank];
      Program startup = build_startup(spec);
      Program main = build_main(spec);
      transpile(c.mode, r, startup, main);
      EXPECT_EQ(specializer.for_rank(rank), startup)
          << to_string(c.mode) << " rank " << rank;
      EXPECT_EQ(main, main0) << to_string(c.mode) << ": main must not depend on the rank";
    }
    EXPECT_THROW(specializer.for_rank(static_cast<int>(c.endpoints.size())), Error);
  }
}

TEST(TranspilerRank, PreExistingCommOpsAreLeftAlone) {
  TranspileOptions o = testing::options_for(2, 0);
  Program startup = build_startup(ModelSpec{});
  Program main = build_main(ModelSpec{});
  transpile(TranspileMode::kGradAllReduce, o, startup, main);  // already transpiled once
  Program again_main = build_main(ModelSpec{});
  const std::size_t original = startup.global_block().op_count();
  Program twice = startup;
  transpile(TranspileMode::kGradAllReduce, o, twice, again_main);
  StartupRankSpecializer specializer(twice, original, o.collective.endpoints);
  const Program rank1 = specializer.for_rank(1);
  auto first = rank1.global_block().ops().begin();
  while (first->type != "c_gen_nccl_id") ++first;
  EXPECT_EQ(first->attr("rank")->get<int32_t>(), 0);  // from the first transpile
  EXPECT_EQ(specializer.rank_dependent_op_count(), 4u);
}

TEST(TranspilerNames, GeneratorCountsPerKey) {
  NameGenerator names;
  EXPECT_EQ(names.generate("nccl_id"), "nccl_id_0");
  EXPECT_EQ(names.generate("FusedOutput_w@GRAD"), "FusedOutput_w@GRAD_0");
  EXPECT_EQ(names.generate("nccl_id"), "nccl_id_1");
}

TEST(TranspilerOptions, ModeNamesRoundTrip) {
  for (TranspileMode m : {TranspileMode::kGradAllReduce, TranspileMode::kLocalSgd,
                          TranspileMode::kSingleProcessMultiThread, TranspileMode::kMultiThread})
    EXPECT_EQ(parse_transpile_mode(to_string(m)), m);
  EXPECT_THROW(parse_transpile_mode("box"), Error);
  EXPECT_EQ(parse_multi_thread_trans_mode("all_gather"), MultiThreadTransMode::kAllGather);
  EXPECT_THROW(parse_multi_thread_trans_mode("all_reduce_xpu"), Error);
}

}  // namespace
}  // namespace ctp
