// Transpilers by name (transpilers/transpiler_registry.h): the built-in four
// and their settings, a transpiler added by one registration, the checks every
// transpiler shares (endpoints included), and the grouping helper the fusing
// rewrites share.
#include <gtest/gtest.h>

#include <algorithm>

#include "program_ir/error.h"
#include "tests/transpiler_test_programs.h"
#include "transpilers/collective_steps.h"
#include "transpilers/grouping.h"
#include "transpilers/transpile.h"
#include "transpilers/transpiler_registry.h"

namespace ctp {
namespace {

using testing::build_main;
using testing::error_of;
using testing::build_startup;
using testing::ModelSpec;
using testing::options_for;
using testing::op_types;

TEST(TranspilerRegistry, BuiltinFourWithTheirSettings) {
  const TranspilerRegistry& r = builtin_transpilers();
  std::vector<std::string> names;
  for (const auto& reg : r.all()) names.push_back(reg.name);
  EXPECT_EQ(names, (std::vector<std::string>{"grad_allreduce", "local_sgd",
                                             "single_process_multi_thread", "multi_thread"}));
  EXPECT_EQ(r.names_text(), "grad_allreduce, local_sgd, single_process_multi_thread or multi_thread");
  EXPECT_EQ(r.at("multi_thread").reference_class, "MultiThread");
  EXPECT_NE(error_of([&] { r.at("box"); }).find("unknown transpiler 'box' (expected grad_allreduce"),
            std::string::npos);
  // selected-gpus is declared by two transpilers and listed once.
  const auto shared = r.settings();
  auto gpus = std::find_if(shared.begin(), shared.end(),
                           [](const auto& s) { return s.setting.name == "selected-gpus"; });
  ASSERT_NE(gpus, shared.end());
  EXPECT_EQ(gpus->transpilers,
            (std::vector<std::string>{"single_process_multi_thread", "multi_thread"}));
  EXPECT_EQ(gpus->setting.env, "FLAGS_selected_gpus");
}

// The registry builds the same transpiler the typed API does.
TEST(TranspilerRegistry, CreateBySettingsEqualsTypedOptions) {
  TranspileOptions o = options_for(4, 1);
  o.multi_thread = {.trans_mode = MultiThreadTransMode::kAllGather, .gpu_num = 3};
  ModelSpec spec;
  spec.optimizer = testing::Optimizer::kAdam;
  Program typed_startup = build_startup(spec), typed_main = build_main(spec);
  transpile(TranspileMode::kMultiThread, o, typed_startup, typed_main);
  Program startup = build_startup(spec), main = build_main(spec);
  transpile("multi_thread", o.collective,
            {{"trans-mode", "all_gather"}, {"selected-gpus", "0,1,2"}}, startup, main);
  EXPECT_EQ(startup, typed_startup);
  EXPECT_EQ(main, typed_main);

  const TranspilerRegistry& r = builtin_transpilers();
  EXPECT_NE(error_of([&] { r.create("local_sgd", o.collective, {{"trans-mode", "all_gather"}}); })
                .find("transpiler 'local_sgd' takes no setting 'trans-mode'"),
            std::string::npos);
  EXPECT_NE(error_of([&] { r.create("grad_allreduce", o.collective, {{"bucket-mb", "0"}}); })
                .find("--bucket-mb '0' is not a positive number"),
            std::string::npos);
  EXPECT_NE(error_of([&] { r.create("multi_thread", o.collective, {{"trans-mode", "box"}}); })
                .find("unknown multi_thread trans mode 'box'"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              r.create("single_process_multi_thread", o.collective, {{"fuse-allreduce", "x"}});
            }).find("--fuse-allreduce 'x' is not an integer"),
            std::string::npos);
}

// A transpiler of its own: one class, one registration, and the registry
// (hence the CLI and the golden reader) knows its name, setting and rings.
class TagTranspiler final : public Transpiler {
 public:
  TagTranspiler(CollectiveOptions c, std::string tag)
      : Transpiler(std::move(c), RingRules{.default_nrings = 3}), tag_(std::move(tag)) {}
  std::string_view name() const override { return "tag"; }

 private:
  void check_own_options() const override {
    if (tag_.empty()) throw Error(error_prefix() + "the tag is empty");
  }
  void rewrite_startup(Program& p, const RewriteContext&) const override {
    p.global_block().append_op(Op(tag_ + "_startup", {}, {}, {}));
  }
  void rewrite_main(Program& p, const RewriteContext& context) const override {
    p.global_block().append_op(Op(tag_ + "_main", {}, {}, {}));
    EXPECT_EQ(context.pass, "tag main");
  }
  std::string tag_;
};

TranspilerRegistration tag_registration() {
  return {.name = "tag",
          .reference_class = "(none)",
          .summary = "appends one op to each program",
          .rings = RingRules{.default_nrings = 3},
          .settings = {{.name = "tag", .help = "the op type"}},
          .create = [](const CollectiveOptions& c, const TranspilerSettings& s)
              -> std::unique_ptr<Transpiler> {
            auto it = s.find("tag");
            return std::make_unique<TagTranspiler>(c, it == s.end() ? "tagged" : it->second);
          }};
}

TEST(TranspilerRegistry, ATranspilerIsOneClassAndOneRegistration) {
  TranspilerRegistry r;
  r.add(grad_allreduce_registration());
  r.add(tag_registration());
  EXPECT_EQ(r.names_text(), "grad_allreduce or tag");
  const CollectiveOptions c = options_for(2, 0).collective;
  Program startup, main;
  startup.blocks.emplace_back();
  main.blocks.emplace_back();
  auto t = r.create("tag", c, {{"tag", "hello"}});
  EXPECT_EQ(t->nrings(), 2);  // options_for gives nrings 2; unset, the default 3
  t->run(startup, main);
  EXPECT_EQ(op_types(startup.global_block()), std::vector<std::string>{"hello_startup"});
  EXPECT_EQ(op_types(main.global_block()), std::vector<std::string>{"hello_main"});
  // Its own check runs before anything changes.
  EXPECT_NE(error_of([&] { r.create("tag", c, {{"tag", ""}})->run(startup, main); })
                .find("transpile tag: the tag is empty"),
            std::string::npos);
  EXPECT_EQ(startup.global_block().op_count(), 1u);
  // The shared checks apply to it too.
  CollectiveOptions one = c;
  one.endpoints.resize(1);
  EXPECT_NE(error_of([&] { r.create("tag", one)->check(); }).find("must be > 1"),
            std::string::npos);
  // Names and settings are unique in meaning.
  EXPECT_NE(error_of([&] { r.add(tag_registration()); }).find("registered twice"),
            std::string::npos);
  TranspilerRegistration clash = tag_registration();
  clash.name = "tag2";
  clash.settings[0].env = "SOME_VARIABLE";
  EXPECT_NE(error_of([&] { r.add(clash); }).find("declares setting 'tag' unlike tag does"),
            std::string::npos);
}

// Endpoints are checked where a transpile first sees them, as the executor
// checks them when it starts (issue 20, item 7).
TEST(TranspilerRegistry, EndpointsMustBeHostAndPort) {
  for (const std::string bad : {"host:notaport", "10.0.0.2:0", "10.0.0.2:70000", "10.0.0.2",
                                ":6170", "::1:6170"}) {
    for (const auto& reg : builtin_transpilers().all()) {
      TranspileOptions o = options_for(2, 0);
      o.collective.endpoints[1] = bad;
      Program startup = build_startup(ModelSpec{}), main = build_main(ModelSpec{});
      const Program before = startup;
      const std::string e = error_of(
          [&] { transpile(reg.name, o.collective, {}, startup, main); });
      EXPECT_NE(e.find("transpile " + reg.name + ": endpoints[1]: endpoint '" + bad +
                       "' is not host:port"),
                std::string::npos)
          << reg.name << " " << bad << ": " << e;
      EXPECT_EQ(startup, before) << "nothing changes before the checks pass";
    }
  }
  TranspileOptions ok = options_for(2, 0);
  ok.collective.endpoints = {"[::1]:6170", "localhost:65535"};
  ok.collective.current_endpoint = ok.collective.endpoints[0];
  Program startup = build_startup(ModelSpec{}), main = build_main(ModelSpec{});
  EXPECT_NO_THROW(transpile(TranspileMode::kGradAllReduce, ok, startup, main));
}

std::vector<std::pair<std::size_t, std::size_t>> ranges(const std::vector<Group>& groups) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  for (const Group& g : groups) out.emplace_back(g.begin, g.end);
  return out;
}

TEST(Grouping, ByCountCutsAtTheBoundAndAtEachNewKey) {
  std::vector<GroupItem> items;
  for (int key : {5, 5, 5, 5, 5, 4, 4, 5}) items.push_back(GroupItem{.key = key});
  EXPECT_EQ(ranges(group_by_key(items, 2)),
            (std::vector<std::pair<std::size_t, std::size_t>>{
                {0, 2}, {2, 4}, {4, 5}, {5, 7}, {7, 8}}));
  EXPECT_TRUE(group_by_key({}, 2).empty());
}

TEST(Grouping, ByWeightEndsOnlyWhereAGroupMayEnd) {
  // Weights 3, 3 | 1, 1 (one op's pair: may end only after the second) | 8.
  std::vector<GroupItem> items = {{.weight = 3},
                                  {.weight = 3},
                                  {.weight = 1, .may_end_group = false},
                                  {.weight = 1},
                                  {.weight = 8},
                                  {.key = 1, .weight = 1}};
  EXPECT_EQ(ranges(group_by_key(items, 4)),
            (std::vector<std::pair<std::size_t, std::size_t>>{{0, 2}, {2, 5}, {5, 6}}));
}

}  // namespace
}  // namespace ctp
