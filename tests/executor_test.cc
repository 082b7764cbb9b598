// The executor: preparation errors before any op runs, feed/fetch and direct
// binding, state across steps, and errors that name the failing op.
#include <atomic>
#include <chrono>

#include "executor/thread_group_driver.h"
#include "tests/kernels_test_util.h"

namespace ctp {
namespace {

using test::make_op;
using test::tensor;
using test::values;

// A kernel with a side effect outside the scope, to prove whether it ran.
std::atomic<int> side_effects{0};
CTP_REGISTER_KERNEL(test_executor_side_effect, CPU,
                    [](KernelContext&) { side_effects.fetch_add(1); });
// A kernel that exists only for GPUs.
CTP_REGISTER_KERNEL(test_executor_cuda_only, CUDA, [](KernelContext&) {});

TEST(Executor, MissingKernelsAreAllReportedBeforeAnyOpRuns) {
  Program p = Program::with_global_block();
  Block& b = p.global_block();
  b.append_op(make_op("test_executor_side_effect", {}, {}));
  b.append_op(make_op("fill_constant", {}, {{"Out", {"x"}}},
                      {{"shape", Attribute(std::vector<int32_t>{1})}}));
  b.append_op(make_op("no_such_op", {}, {}));
  b.append_op(make_op("test_executor_cuda_only", {}, {}));
  b.append_op(make_op("relu", {{"X", {"x"}}}, {{"Out", {"y"}}}));
  b.append_op(make_op("also_unknown", {}, {}));
  side_effects = 0;
  try {
    Executor executor(p, RunServices{});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("3 op(s) without a kernel"), std::string::npos) << msg;
    EXPECT_NE(msg.find("op 2 'no_such_op': unknown op"), std::string::npos) << msg;
    EXPECT_NE(msg.find("op 3 'test_executor_cuda_only': no CPU kernel"), std::string::npos)
        << msg;
    EXPECT_NE(msg.find("op 5 'also_unknown'"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("'relu'"), std::string::npos) << msg;
  }
  EXPECT_EQ(side_effects.load(), 0);

  p.global_block().ops().pop_back();
  b.ops().erase(std::next(b.ops().begin(), 2), std::next(b.ops().begin(), 4));
  Scope scope;
  Executor executor(p, RunServices{});
  executor.run(scope);
  EXPECT_EQ(side_effects.load(), 1);
  EXPECT_TRUE(scope.has("y"));
}

Program feed_fetch_program() {
  Program p = Program::with_global_block();
  Block& b = p.global_block();
  b.add_var(Var{.name = "feed", .type = VarKind::FEED_MINIBATCH, .persistable = true});
  b.add_var(Var{.name = "fetch", .type = VarKind::FETCH_LIST, .persistable = true});
  b.append_op(make_op("feed", {{"X", {"feed"}}}, {{"Out", {"x"}}}, {{"col", Attribute(int32_t{0})}}));
  b.append_op(make_op("feed", {{"X", {"feed"}}}, {{"Out", {"y"}}}, {{"col", Attribute(int32_t{1})}}));
  b.append_op(make_op("elementwise_mul", {{"X", {"x"}}, {"Y", {"y"}}}, {{"Out", {"z"}}}));
  b.append_op(make_op("fetch", {{"X", {"z"}}}, {{"Out", {"fetch"}}}, {{"col", Attribute(int32_t{1})}}));
  b.append_op(make_op("fetch", {{"X", {"x"}}}, {{"Out", {"fetch"}}}, {{"col", Attribute(int32_t{0})}}));
  return p;
}

TEST(Executor, FeedAndFetchByColumn) {
  const Program p = feed_fetch_program();
  Scope scope;
  Executor executor(p, RunServices{});
  std::vector<Tensor> out =
      executor.run(scope, {tensor<float>({2}, {1, 2}), tensor<float>({2}, {3, 4})});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{1, 2}));
  EXPECT_EQ(values<float>(out[1]), (std::vector<float>{3, 8}));
  out = executor.run(scope, {tensor<float>({3}, {1, 1, 1}), tensor<float>({3}, {5, 6, 7})});
  EXPECT_EQ(values<float>(out[1]), (std::vector<float>{5, 6, 7}));
  // Fetched tensors are copies: the next step does not change them.
  std::vector<Tensor> later =
      executor.run(scope, {tensor<float>({3}, {0, 0, 0}), tensor<float>({3}, {5, 6, 7})});
  EXPECT_EQ(values<float>(out[1]), (std::vector<float>{5, 6, 7}));
  EXPECT_EQ(values<float>(later[1]), (std::vector<float>{0, 0, 0}));
}

TEST(Executor, MissingFeedNamesTheColumn) {
  const Program p = feed_fetch_program();
  Scope scope;
  Executor executor(p, RunServices{});
  try {
    executor.run(scope, {tensor<float>({2}, {1, 2})});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("op 1 'feed'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("col 1"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'y'"), std::string::npos) << msg;
  }
  EXPECT_THROW(executor.run(scope), Error);  // no feed lists at all
}

TEST(Executor, DirectBindingAndStateAcrossSteps) {
  Program startup = Program::with_global_block();
  startup.global_block().append_op(
      make_op("fill_constant", {}, {{"Out", {"w"}}},
              {{"shape", Attribute(std::vector<int32_t>{2})}, {"value", Attribute(10.0f)}}));
  Program main = Program::with_global_block();
  main.global_block().add_var(Var{.name = "w", .shape = {2}, .persistable = true});
  // w = w - x each step; y = w * 2 is a temporary.
  main.global_block().append_op(
      make_op("elementwise_sub", {{"X", {"w"}}, {"Y", {"x"}}}, {{"Out", {"w"}}}));
  main.global_block().append_op(
      make_op("scale", {{"X", {"w"}}}, {{"Out", {"y"}}}, {{"scale", Attribute(2.0f)}}));
  Scope scope;
  Executor(startup, RunServices{}).run(scope);
  Executor executor(main, RunServices{});
  const void* w_memory = scope.get("w").raw_data();
  for (int step = 1; step <= 3; ++step) {
    scope.var("x") = tensor<float>({2}, {1, static_cast<float>(step)});
    executor.run(scope);
  }
  EXPECT_EQ(values<float>(scope.get("w")), (std::vector<float>{7, 4}));
  EXPECT_EQ(values<float>(scope.get("y")), (std::vector<float>{14, 8}));
  EXPECT_EQ(scope.get("w").raw_data(), w_memory);  // updated in place
  EXPECT_EQ(executor.services().step, 3u);
}

TEST(Executor, RuntimeErrorsNameBlockOpIndexAndType) {
  Program p = Program::with_global_block();
  p.global_block().append_op(make_op("fill_constant", {}, {{"Out", {"a"}}},
                                     {{"shape", Attribute(std::vector<int32_t>{2})}}));
  p.global_block().append_op(make_op("relu", {{"X", {"missing"}}}, {{"Out", {"b"}}}));
  Scope scope;
  Executor executor(p, RunServices{});
  try {
    executor.run(scope);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("block 0, op 1 'relu': ", 0), 0u) << e.what();
    EXPECT_NE(std::string(e.what()).find("'missing'"), std::string::npos) << e.what();
  }
  // Errors raised below the kernels (here a tensor read as the wrong type)
  // get the op's place added.
  Program q = Program::with_global_block();
  q.global_block().append_op(make_op("mul", {{"X", {"f"}}, {"Y", {"d"}}}, {{"Out", {"o"}}}));
  scope.var("f") = tensor<float>({1, 1}, {1});
  scope.var("d") = tensor<double>({1, 1}, {1});
  try {
    Executor(q, RunServices{}).run(scope);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("block 0, op 0 'mul': ", 0), 0u) << e.what();
    EXPECT_NE(std::string(e.what()).find("FP64"), std::string::npos) << e.what();
  }
}

TEST(Executor, UnboundInputsAreReadBeforeWrittenAndNotPersistable) {
  Program p = Program::with_global_block();
  Block& b = p.global_block();
  b.add_var(Var{.name = "w", .persistable = true});
  b.add_var(Var{.name = "feed", .type = VarKind::FEED_MINIBATCH, .persistable = true});
  b.append_op(make_op("feed", {{"X", {"feed"}}}, {{"Out", {"fed"}}}));
  b.append_op(make_op("mul", {{"X", {"x"}}, {"Y", {"w"}}}, {{"Out", {"h"}}}));
  b.append_op(make_op("elementwise_add", {{"X", {"h"}}, {"Y", {"fed"}}}, {{"Out", {"o"}}}));
  b.append_op(make_op("elementwise_add", {{"X", {"o"}}, {"Y", {"label"}}}, {{"Out", {"x"}}}));
  EXPECT_EQ(unbound_inputs(b), (std::vector<std::string>{"x", "label"}));
}

Program allreduce_program(int64_t numel) {
  Program p = Program::with_global_block();
  p.global_block().add_var(Var{.name = "g", .shape = {numel}});
  p.global_block().append_op(make_op("c_allreduce_sum", {{"X", {"g"}}}, {{"Out", {"g"}}},
                                     {{"ring_id", Attribute(int32_t{0})}}));
  return p;
}

// Two device threads whose programs agree, or do not, on their collectives.
std::vector<std::string> run_on_two_threads(int64_t numel_of_thread1, bool verify) {
  using namespace std::chrono_literals;
  const Program agreeing = allreduce_program(4), other = allreduce_program(numel_of_thread1);
  RunServices base;
  base.verify_collective_schedule = verify;
  DeviceThreads threads(2, CommOptions{5s, 20ms}, base);
  std::vector<std::string> errors(2);
  std::vector<Scope> scopes(2);
  try {
    threads.run([&](int r, RunServices& services) {
      services.comms->install(0, threads.group()->make_communicator(r, 0));
      scopes[r].var("g") = tensor<float>({4}, {1, 2, 3, static_cast<float>(r)});
      try {
        Executor(r == 1 ? other : agreeing, services).run(scopes[r]);
      } catch (const Error& e) {
        errors[r] = e.what();
        throw;
      }
    });
  } catch (const Error&) {
  }
  if (errors[0].empty() && errors[1].empty()) {
    EXPECT_EQ(values<float>(scopes[0].get("g")), (std::vector<float>{2, 4, 6, 1}));
  }
  return errors;
}

TEST(Executor, FirstStepVerifiesTheCollectiveScheduleWithPeers) {
  EXPECT_EQ(run_on_two_threads(4, true), (std::vector<std::string>{"", ""}));
  // Thread 1 declares another size: both threads stop before any op runs,
  // naming the difference, instead of reducing mismatched buffers.
  const std::vector<std::string> errors = run_on_two_threads(5, true);
  for (const std::string& e : errors)
    EXPECT_NE(e.find("at collective #0: rank 0 runs c_allreduce_sum ring 0 FP32[4] X='g', rank 1 "
                     "runs c_allreduce_sum ring 0 FP32[5]"),
              std::string::npos)
        << e;
  // Opted out, the declared sizes are not compared (the tensors themselves agree).
  EXPECT_EQ(run_on_two_threads(5, false), (std::vector<std::string>{"", ""}));
}

}  // namespace
}  // namespace ctp
