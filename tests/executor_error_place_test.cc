// The executor gives an error the place of the op it ran, as a field of the
// error, unless the error names an op already: the op is named once, never
// twice, and never lost (executor/executor.cc, run_at).
#include <stdexcept>

#include "executor/runtime/communicator.h"
#include "executor/threads/thread_group.h"
#include "tests/kernels_test_util.h"

namespace ctp {
namespace {

using test::make_op;
using test::tensor;

CTP_REGISTER_KERNEL(test_place_lower_layer, CPU,
                    [](KernelContext&) { throw Error("the buffer is gone"); });
CTP_REGISTER_KERNEL(test_place_std_exception, CPU,
                    [](KernelContext&) { throw std::length_error("vector too long"); });
CTP_REGISTER_KERNEL(test_place_var_only, CPU, [](KernelContext&) {
  throw Error(SourceLocation{.var_name = "v"}, "is gone");
});
// An error about another op (as from a kernel that ran a sub-block).
CTP_REGISTER_KERNEL(test_place_other_op, CPU, [](KernelContext&) {
  throw Error(SourceLocation{.block = 1, .op = 0, .op_type = "relu"}, "inner failure");
});
CTP_REGISTER_KERNEL(test_place_aborted, CPU, [](KernelContext&) {
  throw CommAbortedError(SourceLocation{.rank = 0, .nranks = 2, .ring = 0, .backend = "threads",
                                        .collective = "barrier"},
                         "aborted: peer died");
});
// Runs relu's kernel for its own op, on its own context (as the 16-bit and
// CUDA kernels run FP32 and CPU kernels).
CTP_REGISTER_KERNEL(test_place_nested, CPU, [](KernelContext& ctx) {
  KernelContext inner(ctx.op(), ctx.block(), ctx.scope(), ctx.services(), ctx.op_index());
  (*KernelRegistry::global().find("relu", DeviceKind::CPU))(inner);
});

// Op 0 fills `a`; op 1 is `type`, reading X from `x`.
Error error_of_op(const std::string& type, const std::string& x = "a") {
  Program p = Program::with_global_block();
  p.global_block().append_op(make_op("fill_constant", {}, {{"Out", {"a"}}},
                                     {{"shape", Attribute(std::vector<int32_t>{2})}}));
  p.global_block().append_op(make_op(type, {{"X", {x}}}, {{"Out", {"b"}}}));
  Scope scope;
  try {
    Executor(p, RunServices{}).run(scope);
  } catch (const Error& e) {
    return e;
  }
  return Error("(no error)");
}

std::size_t count(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

TEST(ExecutorErrorPlace, ErrorsFromBelowTheKernelsGetTheOpsPlaceAsFields) {
  Error e = error_of_op("test_place_lower_layer");
  EXPECT_EQ(e.place(), (SourceLocation{.block = 0, .op = 1, .op_type = "test_place_lower_layer"}));
  EXPECT_EQ(e.message(), "the buffer is gone");
  EXPECT_STREQ(e.what(), "block 0, op 1 'test_place_lower_layer': the buffer is gone");

  e = error_of_op("test_place_std_exception");
  EXPECT_EQ(e.place(), (SourceLocation{.block = 0, .op = 1, .op_type = "test_place_std_exception"}));
  EXPECT_EQ(e.message(), "vector too long");

  // What the lower layer knew stays; the op is added to it.
  e = error_of_op("test_place_var_only");
  EXPECT_STREQ(e.what(), "block 0, op 1 'test_place_var_only', var 'v': is gone");
}

TEST(ExecutorErrorPlace, AnErrorThatNamesAnOpAlreadyIsNotNamedAgain) {
  Error e = error_of_op("test_place_other_op");
  EXPECT_STREQ(e.what(), "block 1, op 0 'relu': inner failure");
  EXPECT_EQ(count(e.what(), "test_place_other_op"), 0u);

  // A kernel that runs another kernel for its op: the op once.
  e = error_of_op("test_place_nested", "missing");
  EXPECT_EQ(std::string(e.what()).rfind("block 0, op 1 'test_place_nested': ", 0), 0u) << e.what();
  EXPECT_EQ(count(e.what(), "op 1"), 1u) << e.what();
  EXPECT_EQ(count(e.what(), "test_place_nested"), 1u) << e.what();

  // The same through a real kernel: mul on FP16 runs its FP32 kernel on
  // widened copies, and that kernel's error is the op's.
  Program p = Program::with_global_block();
  p.global_block().append_op(make_op("mul", {{"X", {"x"}}, {"Y", {"y"}}}, {{"Out", {"o"}}}));
  Scope scope;
  scope.var("x") = Tensor(DataType::FP16, {2, 3});
  scope.var("y") = Tensor(DataType::FP16, {4, 5});
  try {
    Executor(p, RunServices{}).run(scope);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& ex) {
    EXPECT_EQ(count(ex.what(), "op 0"), 1u) << ex.what();
    EXPECT_EQ(count(ex.what(), "'mul'"), 1u) << ex.what();
  }
}

TEST(ExecutorErrorPlace, TheErrorsTypeIsKept) {
  Program p = Program::with_global_block();
  p.global_block().append_op(make_op("test_place_aborted", {}, {}));
  Scope scope;
  try {
    Executor(p, RunServices{}).run(scope);
    ADD_FAILURE() << "expected an error";
  } catch (const CommAbortedError& e) {
    EXPECT_STREQ(e.what(),
                 "block 0, op 0 'test_place_aborted': rank 0 of 2, ring 0 (threads): barrier: "
                 "aborted: peer died");
    EXPECT_EQ(e.place().ring, 0);
    EXPECT_EQ(e.place().op, 0);
  }
}

// The code that knows a place throws it as fields, not as text in the
// message: an op's rules (OpContext::error) and a communicator
// (Communicator::place).
TEST(ExecutorErrorPlace, KernelsAndCommunicatorsThrowTheirPlaceAsFields) {
  Program p = Program::with_global_block();
  p.global_block().append_op(make_op("mul", {{"X", {"x"}}, {"Y", {"y"}}}, {{"Out", {"o"}}}));
  Scope scope;
  scope.var("x") = tensor<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  scope.var("y") = tensor<float>({4, 1}, {1, 2, 3, 4});
  try {
    Executor(p, RunServices{}).run(scope);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.place(), (SourceLocation{.block = 0, .op = 0, .op_type = "mul"})) << e.what();
    EXPECT_EQ(e.message().find("block"), std::string::npos) << e.message();
  }

  auto group = std::make_shared<ThreadGroup>(1, CommOptions{});
  std::unique_ptr<Communicator> ring = group->make_communicator(0, 3);
  Tensor in = tensor<float>({2}, {1, 2});
  Tensor out = tensor<float>({3}, {0, 0, 0});
  try {
    ring->all_gather(in, out);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.place(), (SourceLocation{.rank = 0, .nranks = 1, .ring = 3, .backend = "threads",
                                         .collective = "all_gather FP32[2]"}))
        << e.what();
    EXPECT_EQ(e.message(), "the output must hold 1 x 2 elements of FP32");
  }
}

}  // namespace
}  // namespace ctp
