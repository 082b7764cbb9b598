// The executor frees each intermediate var after its last use in the step
// (executor/var_release.h): which vars, when, that results do not change,
// and that a step then holds less memory at its peak.
#include <cstring>

#include "executor/program_runner.h"
#include "executor/runtime/memory_stats.h"
#include "samples/real_models.h"
#include "tests/kernels_test_util.h"
#include "transpilers/append_backward.h"
#include "transpilers/append_optimizer.h"

namespace ctp {
namespace {

using test::make_op;

// x (read first) and w (persistable) -> a -> b -> c -> d, e = d + a, loss = mean(e).
Program chain_program() {
  Program p = Program::with_global_block();
  Block& b = p.global_block();
  b.add_var(Var{.name = "w", .dtype = DataType::FP32, .shape = {4, 4}, .persistable = true});
  b.append_op(make_op("mul", {{"X", {"x"}}, {"Y", {"w"}}}, {{"Out", {"a"}}}));
  b.append_op(make_op("relu", {{"X", {"a"}}}, {{"Out", {"b"}}}));
  b.append_op(make_op("scale", {{"X", {"b"}}}, {{"Out", {"c"}}}, {{"scale", Attribute(2.0f)}}));
  b.append_op(make_op("scale", {{"X", {"c"}}}, {{"Out", {"d"}}}, {{"scale", Attribute(-0.5f)}}));
  b.append_op(make_op("elementwise_add", {{"X", {"d"}}, {"Y", {"a"}}}, {{"Out", {"e"}}}));
  b.append_op(make_op("mean", {{"X", {"e"}}}, {{"Out", {"loss"}}}));
  return p;
}

using Names = std::vector<std::string>;

TEST(VarRelease, EachIntermediateIsFreedAfterItsLastUse) {
  const Program p = chain_program();
  const VarReleasePlan plan = plan_var_release(p, 0, {});
  ASSERT_EQ(plan.after_op.size(), 6u);
  EXPECT_EQ(plan.after_op[0], Names{});
  EXPECT_EQ(plan.after_op[1], Names{});  // a is read again by op 4
  EXPECT_EQ(plan.after_op[2], Names{"b"});
  EXPECT_EQ(plan.after_op[3], Names{"c"});
  EXPECT_EQ(plan.after_op[4], (Names{"a", "d"}));
  EXPECT_EQ(plan.after_op[5], (Names{"e", "loss"}));
  // A var the caller reads after the step stays.
  EXPECT_EQ(plan_var_release(p, 0, {"loss", "c"}).after_op[5], Names{"e"});
  EXPECT_EQ(plan_var_release(p, 0, {"loss", "c"}).after_op[3], Names{});
  EXPECT_EQ(plan.released_count(), 6u);  // never x (read first) nor w (persistable)
}

TEST(VarRelease, VarsOfSubBlocksCollectivesAndCoalesceStay) {
  Program p = chain_program();
  Block& b = p.global_block();
  b.append_op(make_op("scale", {{"X", {"loss"}}}, {{"Out", {"g"}}}));
  b.append_op(make_op("c_allreduce_sum", {{"X", {"g"}}}, {{"Out", {"g"}}},
                      {{"ring_id", Attribute(int32_t{0})}}));
  b.append_op(make_op("relu", {{"X", {"e"}}}, {{"Out", {"h"}}}));
  b.append_op(make_op("coalesce_tensor", {{"Input", {"h"}}},
                      {{"Output", {"h"}}, {"FusedOutput", {"f"}}}));
  b.append_op(make_op("relu", {{"X", {"f"}}}, {{"Out", {"r"}}}));
  Block& sub = p.add_block(0);
  sub.append_op(make_op("relu", {{"X", {"c"}}}, {{"Out", {"s"}}}));
  const VarReleasePlan plan = plan_var_release(p, 0, {});
  Names released;
  for (const Names& names : plan.after_op) released.insert(released.end(), names.begin(), names.end());
    // c (read by the sub-block), g (all-reduced), h and f (coalesced) stay.
  EXPECT_EQ(released, (Names{"b", "a", "d", "loss", "e", "r"}));
}

void bind_chain_inputs(Scope& scope) {
  scope.var("x") = test::random_tensor({3, 4}, 1);
  scope.var("w") = test::random_tensor({4, 4}, 2);
}

TEST(VarRelease, TheExecutorFreesThemAndComputesTheSame) {
  const Program p = chain_program();
  Scope kept_scope, freed_scope;
  Executor kept(p, RunServices{});  // keeps every var: the default
  Executor freed(p, RunServices{});
  freed.set_release_dead_vars(true);
  bind_chain_inputs(kept_scope);
  bind_chain_inputs(freed_scope);
  for (int step = 0; step < 2; ++step) {  // x, bound once, is there for step 2
    kept.run(kept_scope);
    freed.run(freed_scope);
    for (const char* name : {"a", "b", "c", "d", "e", "loss"}) {
      ASSERT_TRUE(kept_scope.get(name).initialized()) << name;
      const Tensor* t = freed_scope.find(name);
      EXPECT_TRUE(!t || !t->initialized()) << name << " was not freed";
    }
    EXPECT_TRUE(freed_scope.get("x").initialized());
    EXPECT_TRUE(freed_scope.get("w").initialized());
  }
  freed.keep_vars({"loss"});
  freed.run(freed_scope);
  kept.run(kept_scope);
  EXPECT_EQ(test::values<double>(freed_scope.get("loss")),
            test::values<double>(kept_scope.get("loss")));
  EXPECT_FALSE(freed_scope.get("loss").shape().empty());
}

// A chain of 12 scale ops over a 1 MiB tensor: kept, the step holds 12 of
// them; freed, two at a time (an op's input and output).
TEST(VarRelease, AStepHoldsLessAtItsPeak) {
  Program p = Program::with_global_block();
  Block& b = p.global_block();
  std::string previous = "x";
  for (int i = 0; i < 12; ++i) {
    const std::string out = "t" + std::to_string(i);
    b.append_op(make_op("scale", {{"X", {previous}}}, {{"Out", {out}}}, {{"scale", Attribute(1.5f)}}));
    previous = out;
  }
  b.append_op(make_op("mean", {{"X", {previous}}}, {{"Out", {"loss"}}}));
  const auto peak_of_a_step = [&](bool keep_all) {
    Scope scope;
    scope.var("x") = Tensor(DataType::FP32, {256, 1024});
    Executor executor(p, RunServices{});
    executor.set_release_dead_vars(!keep_all);
    reset_peak_memory(DeviceKind::CPU);
    const int64_t before = memory_stats(DeviceKind::CPU).current_bytes;
    executor.run(scope);
    return memory_stats(DeviceKind::CPU).peak_bytes - before;
  };
  const int64_t mib = 1 << 20;
  const int64_t kept = peak_of_a_step(true);
  const int64_t freed = peak_of_a_step(false);
  EXPECT_GE(kept, 12 * mib);
  EXPECT_LE(freed, 2 * mib + mib / 2);
  EXPECT_GE(freed, 1 * mib);
}

TEST(MemoryStats, BuffersCountThemselvesInAndOut) {
  const MemoryStats start = memory_stats(DeviceKind::CPU);
  {
    Tensor t(DataType::FP32, {1000});
    const MemoryStats held = memory_stats(DeviceKind::CPU);
    EXPECT_EQ(held.current_bytes - start.current_bytes, 4000);
    EXPECT_GE(held.peak_bytes, held.current_bytes);
    EXPECT_EQ(held.buffers_made - start.buffers_made, 1);
  }
  EXPECT_EQ(memory_stats(DeviceKind::CPU).current_bytes, start.current_bytes);
}

// The same losses, bit for bit, over steps of a tiny ResNet trained with
// SGD, whether the main program frees its intermediates or keeps them.
TEST(VarRelease, ATinyResNetTrainsTheSameEitherWay) {
  samples::ResNetConfig config;
  config.depth = 18;
  config.width = 4;
  config.image_size = 32;
  config.classes = 5;
  config.init_seed = 5;
  const samples::ModelPrograms model = samples::build_resnet(config);
  Program startup = model.startup, main = model.main;
  append_backward(main, BackwardOptions{.loss = model.loss});
  append_optimizer(startup, main, OptimizerOptions{.learning_rate = 0.01f});
  const auto losses = [&](bool keep_all) {
    ProgramRunOptions options;
    options.batch = 4;
    options.seed = 3;
    options.keep_all_vars = keep_all;
    ProgramRunner runner(startup, main, options);
    runner.run_startup();
    std::vector<float> out;
    for (int i = 0; i < 3; ++i) out.push_back(test::values<float>(runner.run_step().at(0).second)[0]);
    const Tensor* grad = runner.scope().find(model.parameters.front() + "@GRAD");
    EXPECT_EQ(grad && grad->initialized(), keep_all);
    return out;
  };
  const std::vector<float> kept = losses(true);
  EXPECT_EQ(losses(false), kept);
  EXPECT_NE(kept.front(), kept.back());
}

}  // namespace
}  // namespace ctp
