// Runs of independent ops that a device takes in one call (op_batching.h):
// which ops may form a run, and that the executor hands exactly those runs
// to the type's batch kernel, names them in errors and profiles them.
#include <sstream>

#include "executor/op_profile.h"
#include "samples/mlp_model.h"
#include "tests/kernels_test_util.h"
#include "transpilers/transpile.h"

namespace ctp {
namespace {

using test::make_op;

// Out = X + 1 on FP32; its batch kernel records the op indices it was given
// and runs the single kernel on each.
void add_one(KernelContext& ctx) {
  const Tensor& x = ctx.input("X");
  Tensor& out = ctx.output("Out");
  Tensor result(DataType::FP32, x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) result.data<float>()[i] = x.data<float>()[i] + 1.0f;
  out = result;
}
std::vector<std::vector<int64_t>> batch_calls;
bool batch_fails = false;
CTP_REGISTER_KERNEL(test_batching_add_one, CPU, add_one);
CTP_REGISTER_BATCH_KERNEL(test_batching_add_one, CPU, [](std::vector<KernelContext>& ops) {
  if (batch_fails) throw Error("the device refused the launch");
  std::vector<int64_t> indices;
  for (KernelContext& ctx : ops) {
    indices.push_back(ctx.op_index());
    add_one(ctx);
  }
  batch_calls.push_back(indices);
});
CTP_REGISTER_KERNEL(test_batching_alone, CPU, add_one);

Op add_one_op(const std::string& x, const std::string& out, const char* type = "test_batching_add_one") {
  return make_op(type, {{"X", {x}}}, {{"Out", {out}}});
}

Op update_op(const std::string& param, const std::string& grad) {
  return make_op("sgd", {{"Param", {param}}, {"Grad", {grad}}, {"LearningRate", {"lr"}}},
                 {{"ParamOut", {param}}});
}

std::vector<std::pair<std::size_t, std::size_t>> runs_of(const Block& block) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  for (const OpRun& run : independent_op_runs(block, [](const Op& op) {
         return op.type == "sgd" || op.type == "cast" || op.type == "test_batching_add_one";
       }))
    out.emplace_back(run.first, run.count);
  return out;
}

using Runs = std::vector<std::pair<std::size_t, std::size_t>>;

TEST(OpBatching, InPlaceUpdatesOfDifferentParametersFormOneRun) {
  Program p = Program::with_global_block();
  Block& b = p.global_block();
  for (const char* param : {"w0", "b0", "w1", "b1"})
    b.append_op(update_op(param, std::string(param) + "@GRAD"));
  EXPECT_EQ(runs_of(b), (Runs{{0, 4}}));
}

TEST(OpBatching, AnOpThatDependsOnTheRunStartsANewOne) {
  Program p = Program::with_global_block();
  Block& b = p.global_block();
  // Each dependency ends a run of two; the next op opens one.
  b.append_op(add_one_op("a", "b"));
  b.append_op(add_one_op("x", "y"));
  b.append_op(add_one_op("b", "c"));  // reads what op 0 wrote
  b.append_op(add_one_op("z", "w"));
  b.append_op(add_one_op("q", "z"));  // writes what op 3 read
  b.append_op(add_one_op("r", "s"));
  b.append_op(add_one_op("t", "s"));  // writes what op 5 wrote
  b.append_op(add_one_op("u", "v"));
  EXPECT_EQ(runs_of(b), (Runs{{0, 2}, {2, 2}, {4, 2}, {6, 2}}));
}

TEST(OpBatching, RunsHoldOneTypeAndStopAtOtherOps) {
  Program p = Program::with_global_block();
  Block& b = p.global_block();
  b.append_op(add_one_op("a", "a1"));
  b.append_op(update_op("w", "g"));  // another batchable type
  b.append_op(update_op("v", "h"));
  b.append_op(add_one_op("c", "c1"));
  b.append_op(add_one_op("d", "d1", "test_batching_alone"));  // not batchable
  b.append_op(add_one_op("e", "e1"));
  b.append_op(add_one_op("f", "f1"));
  b.append_op(add_one_op("g2", "g3"));
  EXPECT_EQ(runs_of(b), (Runs{{1, 2}, {5, 3}}));
  Program alone = Program::with_global_block();
  alone.global_block().append_op(add_one_op("a", "b"));
  EXPECT_TRUE(runs_of(alone.global_block()).empty());
}

Program add_one_program() {
  Program p = Program::with_global_block();
  Block& b = p.global_block();
  b.append_op(add_one_op("a", "a1"));
  b.append_op(add_one_op("b", "b1"));
  b.append_op(add_one_op("c", "c1"));
  b.append_op(add_one_op("a1", "a2", "test_batching_alone"));
  b.append_op(add_one_op("a2", "a3"));
  b.append_op(add_one_op("a3", "a4"));  // reads op 4's output: alone
  return p;
}

void bind_inputs(Scope& scope) {
  for (const char* name : {"a", "b", "c"}) scope.var(name) = test::tensor<float>({2}, {1, 2});
}

TEST(OpBatching, TheExecutorGivesEachRunToTheBatchKernelOnce) {
  const Program p = add_one_program();
  Scope scope;
  bind_inputs(scope);
  batch_calls.clear();
  batch_fails = false;
  Executor executor(p, RunServices{});
  ASSERT_EQ(executor.batched_runs().size(), 1u);
  EXPECT_EQ(executor.batched_runs()[0].first, 0u);
  EXPECT_EQ(executor.batched_runs()[0].count, 3u);
  executor.run(scope);
  executor.run(scope);
  EXPECT_EQ(batch_calls, (std::vector<std::vector<int64_t>>{{0, 1, 2}, {0, 1, 2}}));
  EXPECT_EQ(test::values<float>(scope.var("a4")), (std::vector<float>{5, 6}));
  EXPECT_EQ(test::values<float>(scope.var("c1")), (std::vector<float>{2, 3}));

  RunServices off;
  off.batch_ops = false;
  Executor alone(p, off);
  EXPECT_TRUE(alone.batched_runs().empty());
  Scope other;
  bind_inputs(other);
  batch_calls.clear();
  alone.run(other);
  EXPECT_TRUE(batch_calls.empty());
  for (const char* name : {"a1", "b1", "c1", "a4"})
    EXPECT_EQ(test::values<float>(other.var(name)), test::values<float>(scope.var(name))) << name;
}

TEST(OpBatching, ABatchsErrorNamesItsOps) {
  const Program p = add_one_program();
  Scope scope;
  bind_inputs(scope);
  batch_fails = true;
  Executor executor(p, RunServices{});
  try {
    executor.run(scope);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "block 0, ops 0 to 2 (3 'test_batching_add_one' run as one batch): the device "
              "refused the launch");
    EXPECT_EQ(e.place(), (SourceLocation{.block = 0, .op = 0, .op_count = 3,
                                         .op_type = "test_batching_add_one"}));
  }
  batch_fails = false;
  // An op of the batch that fails its own checks is named as when it runs alone.
  Scope missing;
  missing.var("a") = test::tensor<float>({1}, {1});
  try {
    executor.run(missing);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("block 0, op 1 'test_batching_add_one': "),
              std::string::npos)
        << e.what();
  }
}

TEST(OpBatching, TheProfileSharesABatchsTimeAmongItsOps) {
  const Program p = add_one_program();
  OpProfile profile;
  RunServices services;
  services.profile = &profile;
  Executor executor(p, services);
  Scope scope;
  bind_inputs(scope);
  for (int step = 0; step < 3; ++step) executor.run(scope);
  const std::vector<OpProfile::Row> rows = profile.rows();
  ASSERT_EQ(rows.size(), 6u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(rows[i].batch, 3u) << i;
    EXPECT_DOUBLE_EQ(rows[i].host_ms, rows[0].host_ms) << i;
  }
  for (std::size_t i = 3; i < 6; ++i) EXPECT_EQ(rows[i].batch, 1u) << i;
  std::ostringstream printed;
  profile.print(printed);
  EXPECT_NE(printed.str().find("3 ops ran in 1 batch "), std::string::npos) << printed.str();
}

// The runs a GPU batches in the sample's mixed-precision program: every
// parameter's cast, every cast back, every unscaling, every update. Each
// transpiler must keep them whole (it inserts its ops around them), except
// that local_sgd, as the reference, follows each update with that
// parameter's own reduction, so its updates run one by one.
TEST(OpBatching, EveryTranspilerKeepsTheMixedPrecisionRunsWhole) {
  const auto batchable = [](const Op& op) {
    return op.type == "cast" || op.type == "scale" || op.type == "sgd";
  };
  struct Mode {
    const char* mode;
    int fuse_allreduce;
    const char* trans_mode;
    int64_t bucket_bytes;
  };
  for (const Mode& m : {Mode{"none", 0, "", 0}, Mode{"grad_allreduce", 0, "", 0},
                        Mode{"grad_allreduce", 0, "", 1 << 12}, Mode{"local_sgd", 0, "", 0},
                        Mode{"single_process_multi_thread", 0, "", 0},
                        Mode{"single_process_multi_thread", 2, "", 0},
                        Mode{"multi_thread", 0, "fuse_all_reduce", 0},
                        Mode{"multi_thread", 0, "all_reduce", 0}}) {
    samples::MlpConfig config;
    config.hidden = {16, 16, 16};
    config.amp = DataType::FP16;
    config.loss_scale = 64;
    samples::MlpPrograms p = samples::build_mlp(config);
    const std::size_t params = p.parameters.size();
    const std::string what = std::string(m.mode) + " " + m.trans_mode + " fuse " +
                             std::to_string(m.fuse_allreduce) + " buckets " +
                             std::to_string(m.bucket_bytes);
    if (std::string(m.mode) != "none") {
      TranspileOptions t;
      t.collective.endpoints = {"127.0.0.1:6170", "127.0.0.1:6171"};
      t.collective.current_endpoint = t.collective.endpoints[0];
      t.single_process_multi_thread.fuse_allreduce = m.fuse_allreduce;
      t.single_process_multi_thread.gpu_nums = 2;
      t.multi_thread.gpu_num = 2;
      if (*m.trans_mode) t.multi_thread.trans_mode = parse_multi_thread_trans_mode(m.trans_mode);
      t.grad_allreduce.bucket_bytes = m.bucket_bytes;
      transpile(parse_transpile_mode(m.mode), t, p.startup, p.main);
    }
    std::vector<std::pair<std::string, std::size_t>> runs;
    std::vector<const Op*> ops;
    for (const Op& op : p.main.global_block().ops()) ops.push_back(&op);
    for (const OpRun& run : independent_op_runs(p.main.global_block(), batchable))
      runs.emplace_back(ops[run.first]->type, run.count);
    std::vector<std::pair<std::string, std::size_t>> want{
        {"cast", params + 1}, {"cast", params}, {"scale", params}, {"sgd", params}};
    if (std::string(m.mode) == "local_sgd") want.pop_back();
    EXPECT_EQ(runs, want) << what;
  }
}

Op cast_of(const std::string& x, const std::string& out) {
  return make_op("cast", {{"X", {x}}}, {{"Out", {out}}});
}

Op product(const std::string& x, const std::string& y, const std::string& out) {
  return make_op("matmul_v2", {{"X", {x}}, {"Y", {y}}}, {{"Out", {out}}});
}

std::vector<std::size_t> gathered(const Block& block) {
  return gathering_order(
      block, [](const Op& op) { return op.type == "cast"; },
      [](const Op& op) { return op.type == "c_allreduce_sum"; });
}

// A mixed-precision step's shape: each parameter cast before its product,
// each gradient cast after its grad op. The forward's casts of parameters
// move to the front, the backward's wait for the updates that read them.
TEST(OpBatching, GatheringMovesParameterCastsToTheFrontAndGradientCastsToTheUpdates) {
  Program p = Program::with_global_block();
  Block& b = p.global_block();
  b.append_op(cast_of("w0", "w0.bf16"));                 // 0
  b.append_op(product("x", "w0.bf16", "y"));             // 1
  b.append_op(cast_of("w1", "w1.bf16"));                 // 2
  b.append_op(product("y", "w1.bf16", "z"));             // 3
  b.append_op(product("z@GRAD", "w1.bf16", "w1.bf16@GRAD"));  // 4
  b.append_op(cast_of("w1.bf16@GRAD", "w1@GRAD"));       // 5
  b.append_op(product("z@GRAD", "w0.bf16", "w0.bf16@GRAD"));  // 6
  b.append_op(cast_of("w0.bf16@GRAD", "w0@GRAD"));       // 7
  b.append_op(update_op("w1", "w1@GRAD"));               // 8
  b.append_op(update_op("w0", "w0@GRAD"));               // 9
  EXPECT_EQ(gathered(b), (std::vector<std::size_t>{0, 2, 1, 3, 4, 6, 5, 7, 8, 9}));
  // Both pairs of casts are independent: one run each in that order.
  const std::vector<std::size_t> order = gathered(b);
  Runs runs;
  for (const OpRun& run : independent_op_runs(b, order, [](const Op& op) { return op.type == "cast"; }))
    runs.emplace_back(run.first, run.count);
  EXPECT_EQ(runs, (Runs{{0, 2}, {6, 2}}));
}

// What may not move: a cast reading a var an earlier op reads (its frees
// would move), a cast whose input an earlier op writes, and no op across a
// barrier; a waiting cast runs before the first op sharing any var with it.
TEST(OpBatching, GatheringKeepsTheOrderOfEveryVarsAccessesAndStopsAtBarriers) {
  Program p = Program::with_global_block();
  Block& b = p.global_block();
  b.append_op(product("x", "w", "y"));            // 0
  b.append_op(cast_of("w", "w.bf16"));            // 1: w read by op 0
  b.append_op(cast_of("y", "y.bf16"));            // 2: waits ...
  b.append_op(product("a", "b", "c"));            // 3
  b.append_op(product("y", "b", "d"));            // 4: ... until y is read
  b.append_op(make_op("c_allreduce_sum", {{"X", {"d"}}}, {{"Out", {"d"}}}));  // 5
  b.append_op(cast_of("v", "v.bf16"));            // 6: after the barrier
  b.append_op(product("v.bf16", "b", "e"));       // 7
  EXPECT_EQ(gathered(b), (std::vector<std::size_t>{0, 3, 1, 2, 4, 5, 6, 7}));
  // Nothing to gather: the block's order.
  Program q = Program::with_global_block();
  q.global_block().append_op(product("x", "w", "y"));
  q.global_block().append_op(product("y", "w", "z"));
  EXPECT_EQ(gathered(q.global_block()), (std::vector<std::size_t>{0, 1}));
}

}  // namespace
}  // namespace ctp
