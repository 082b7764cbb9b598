// Inputs an op reads only for their dtype and shape (SlotDef::shape_only,
// Paddle's NoNeedBufferVars): the kernels of every op that declares one give
// the same bits when that input has no elements; a step frees the elements
// of such a var after their last other read (executor/var_release.h), which
// lowers its peak and changes no result; and a kernel that reads the elements
// of an input it declared shape-only is stopped with an error naming the op
// and the slot.
#include <cstring>
#include <map>
#include <set>

#include "executor/program_runner.h"
#include "executor/runtime/float16.h"
#include "executor/runtime/memory_stats.h"
#include "ops/schema/op_def.h"
#include "ops/schema/shape_rules.h"
#include "samples/real_models.h"
#include "tests/kernels_test_util.h"
#include "tests/shape_only_cases.h"
#include "transpilers/minimize.h"

namespace ctp {
namespace {

using test::make_op;
using test::ShapeOnlyCase;
using test::shape_only_cases;
using Names = std::vector<std::string>;

// Every output's dtype, shape and bytes after running `c` alone on the CPU,
// with the shape-only inputs as they are or without their elements.
std::map<std::string, std::pair<std::string, std::vector<char>>> outputs_of(
    const ShapeOnlyCase& c, bool drop_shape_only_elements) {
  const OpDef* schema = OpRegistry::global().find(c.op.type);
  Scope scope;
  for (const Slot& slot : c.op.inputs())
    for (const std::string& name : slot.args) {
      const Tensor& t = c.inputs.at(name);
      scope.var(name) = drop_shape_only_elements && schema->reads_only_shape_of(slot.name)
                            ? Tensor::without_elements(t.dtype(), t.shape())
                            : t;
    }
  test::run_op(scope, c.op);
  std::map<std::string, std::pair<std::string, std::vector<char>>> out;
  for (const Slot& slot : c.op.outputs())
    for (const std::string& name : slot.args) {
      const Tensor& t = scope.get(name);
      std::vector<char> bytes(t.bytes());
      if (!bytes.empty()) std::memcpy(bytes.data(), t.raw_data(), bytes.size());
      out[name] = {std::string(to_string(t.dtype())) + shape_to_string(t.shape()), bytes};
    }
  return out;
}

TEST(ShapeOnlyInputs, EveryDeclaringOpsCpuKernelNeedsNoElements) {
  const std::map<std::string, ShapeOnlyCase> cases = shape_only_cases();
  std::set<std::string> declaring;
  for (const std::string& type : OpRegistry::global().types())
    for (const SlotDef& slot : OpRegistry::global().find(type)->inputs)
      if (slot.shape_only && !type.starts_with("test_")) declaring.insert(type);
  // A new declaration needs a case here, so its kernel is checked too.
  for (const std::string& type : declaring) EXPECT_TRUE(cases.count(type)) << type;
  for (const auto& [type, c] : cases) {
    EXPECT_TRUE(declaring.count(type)) << type << " declares no shape-only input";
    EXPECT_EQ(outputs_of(c, true), outputs_of(c, false)) << type;
  }
}

// The same through the CPU's 16-bit path (float copies of the inputs).
TEST(ShapeOnlyInputs, TheBf16PathNeedsNoElementsEither) {
  const Slot dout{"Out@GRAD", {"dout"}};
  const auto bf16 = [](std::vector<int64_t> shape, uint64_t seed) {
    Tensor t(DataType::BF16, shape);
    const Tensor values = test::random_tensor(shape, seed);
    for (int64_t i = 0; i < t.numel(); ++i)
      t.data<uint16_t>()[i] = bfloat16::from_float(static_cast<float>(values.data<double>()[i]));
    return t;
  };
  const ShapeOnlyCase c{
      make_op("elementwise_add_grad", {{"X", {"x"}}, {"Y", {"y"}}, dout},
              {{"X@GRAD", {"dx"}}, {"Y@GRAD", {"dy"}}}),
      {{"x", bf16({8, 4}, 1)}, {"y", bf16({4}, 2)}, {"dout", bf16({8, 4}, 3)}}};
  const auto with = outputs_of(c, false);
  EXPECT_EQ(outputs_of(c, true), with);
  EXPECT_EQ(with.at("dy").first, "BF16[4]");
}

// x (read first) -> a -> b -> c -> loss; the grad part reads a and b only
// for their shapes (elementwise_add_grad's X and Y).
Program shape_read_program() {
  Program p = Program::with_global_block();
  Block& b = p.global_block();
  b.append_op(make_op("scale", {{"X", {"x"}}}, {{"Out", {"a"}}}, {{"scale", Attribute(2.0f)}}));
  b.append_op(make_op("scale", {{"X", {"a"}}}, {{"Out", {"b"}}}, {{"scale", Attribute(3.0f)}}));
  b.append_op(make_op("elementwise_add", {{"X", {"a"}}, {"Y", {"b"}}}, {{"Out", {"c"}}}));
  b.append_op(make_op("mean", {{"X", {"c"}}}, {{"Out", {"loss"}}}));
  b.append_op(make_op("fill_constant", {}, {{"Out", {"dc"}}},
                      {{"shape", Attribute(std::vector<int64_t>{256, 1024})},
                       {"value", Attribute(1.0f)}}));
  b.append_op(make_op("elementwise_add_grad", {{"X", {"a"}}, {"Y", {"b"}}, {"Out@GRAD", {"dc"}}},
                      {{"X@GRAD", {"da"}}, {"Y@GRAD", {"db"}}}));
  b.append_op(make_op("elementwise_add", {{"X", {"da"}}, {"Y", {"db"}}}, {{"Out", {"g"}}}));
  return p;
}

TEST(ShapeOnlyInputs, TheirElementsAreFreedAfterTheLastElementRead) {
  const VarReleasePlan plan = plan_var_release(shape_read_program(), 0, {"g"});
  ASSERT_EQ(plan.elements_after_op.size(), 7u);
  EXPECT_EQ(plan.elements_after_op[2], (Names{"a", "b"}));  // elementwise_add's last read
  EXPECT_EQ(plan.after_op[5], (Names{"a", "b", "dc"}));     // the shape readers' last
  for (std::size_t i : {0u, 1u, 3u, 4u, 5u, 6u}) EXPECT_EQ(plan.elements_after_op[i], Names{}) << i;
  EXPECT_EQ(plan.after_op[2], Names{});
}

// The executor frees a's and b's elements after op 2, keeps their shapes
// for op 5, and gives the bits of a run that keeps every tensor. Its peak is
// 3 of the 1 MiB tensors (at ops 2, 5 and 6); holding a and b until op 5
// would make it 5, keeping everything 7.
TEST(ShapeOnlyInputs, AStepFreesTheirElementsEarlyWithTheSameBits) {
  const Program p = shape_read_program();
  const auto run = [&](bool release, int64_t& peak) {
    Scope scope;
    scope.var("x") = Tensor(DataType::FP32, {256, 1024});
    for (int64_t i = 0; i < scope.get("x").numel(); ++i)
      scope.get("x").data<float>()[i] = static_cast<float>(i % 97) * 0.25f;
    Executor executor(p, RunServices{});
    executor.set_release_dead_vars(release);
    executor.keep_vars({"g", "loss"});
    reset_peak_memory(DeviceKind::CPU);
    const int64_t before = memory_stats(DeviceKind::CPU).current_bytes;
    executor.run(scope);
    peak = memory_stats(DeviceKind::CPU).peak_bytes - before;
    EXPECT_EQ(scope.find("a") && scope.find("a")->has_shape(), !release);
    return std::make_pair(test::values<float>(scope.get("g")),
                          test::values<float>(scope.get("loss")));
  };
  int64_t kept_peak = 0, freed_peak = 0;
  const auto kept = run(false, kept_peak);
  const auto freed = run(true, freed_peak);
  EXPECT_EQ(freed, kept);
  const int64_t mib = 1 << 20;
  EXPECT_LE(freed_peak, 3 * mib + mib / 2);
  EXPECT_GE(kept_peak, 7 * mib);
}

// A tiny BERT trained with SGD in BF16 gives the same losses bit for bit
// whether its main program frees intermediates (shape-only reads included)
// or keeps them, and its plan frees elements early.
TEST(ShapeOnlyInputs, ATinyBertTrainsTheSameEitherWay) {
  samples::BertConfig config;
  config.layers = 2;
  config.hidden = 16;
  config.heads = 2;
  config.seq_len = 8;
  config.vocab = 40;
  config.max_position = 8;
  config.classes = 3;
  config.init_seed = 5;
  const samples::ModelPrograms model = samples::build_bert(config);
  Program startup = model.startup, main = model.main;
  MinimizeOptions options;
  options.loss = model.loss;
  options.optimizer.learning_rate = 0.05f;
  options.amp = AmpOptions{};
  minimize(startup, main, options);
  std::size_t early = 0;
  for (const Names& names : plan_var_release(main, 0, {}).elements_after_op) early += names.size();
  EXPECT_GE(early, 8u);  // every layer's bias and residual adds, at least
  const auto losses = [&](bool keep_all) {
    ProgramRunOptions run;
    run.batch = 2;
    run.seed = 3;
    run.keep_all_vars = keep_all;
    ProgramRunner runner(startup, main, run);
    runner.run_startup();
    std::vector<float> out;
    for (int i = 0; i < 3; ++i)
      out.push_back(test::values<float>(runner.run_step().at(0).second)[0]);
    return out;
  };
  const std::vector<float> kept = losses(true);
  EXPECT_EQ(losses(false), kept);
  EXPECT_NE(kept.front(), kept.back());
}

// Test-only ops with one shape-only input X whose kernels read its elements
// anyway: one through input(), one through the tensor shape_input() gives.
void register_bad_readers() {
  static const bool registered = [] {
    for (const char* type : {"test_reads_shape_only_input", "test_reads_released_elements"}) {
      OpDef def;
      def.type = type;
      SlotDef x{"X"};
      x.shape_only = true;
      def.inputs = {x};
      def.outputs = {SlotDef{"Out"}};
      OpRegistry::global().add(def);
    }
    KernelRegistry::global().add("test_reads_shape_only_input", DeviceKind::CPU,
                                 [](KernelContext& ctx) { ctx.output("Out") = ctx.input("X"); });
    KernelRegistry::global().add("test_reads_released_elements", DeviceKind::CPU,
                                 [](KernelContext& ctx) {
                                   const Tensor& x = ctx.shape_input("X");
                                   Tensor& out = ctx.output("Out");
                                   out.resize(x.dtype(), x.shape());
                                   std::memcpy(out.raw_data(), x.raw_data(), x.bytes());
                                 });
    return true;
  }();
  (void)registered;
}

std::string step_error(const std::string& reader, bool release) {
  register_bad_readers();
  Program p = Program::with_global_block();
  Block& b = p.global_block();
  b.append_op(make_op("scale", {{"X", {"x"}}}, {{"Out", {"a"}}}));
  b.append_op(make_op("relu", {{"X", {"a"}}}, {{"Out", {"r"}}}));
  b.append_op(make_op(reader, {{"X", {"a"}}}, {{"Out", {"out"}}}));
  Scope scope;
  scope.var("x") = Tensor(DataType::FP32, {2, 3});
  Executor executor(p, RunServices{});
  executor.set_release_dead_vars(release);
  executor.keep_vars({"out", "r"});
  try {
    executor.run(scope);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ShapeOnlyInputs, AKernelReadingTheElementsIsStoppedNamingOpAndSlot) {
  // Through input(): refused whether or not the elements are still there.
  for (const bool release : {false, true})
    EXPECT_EQ(step_error("test_reads_shape_only_input", release),
              "block 0, op 2 'test_reads_shape_only_input': input X 'a' is shape-only (its "
              "schema says the kernels of 'test_reads_shape_only_input' read only its dtype "
              "and shape, and its elements may be released before this op), but the kernel "
              "reads its elements")
        << release;
  // Through the shape-only tensor: its elements are gone once released.
  EXPECT_EQ(step_error("test_reads_released_elements", false), "(no error)");
  EXPECT_EQ(step_error("test_reads_released_elements", true),
            "block 0, op 2 'test_reads_released_elements': the elements of this FP32[2, 3] "
            "tensor were released after their last read; only its dtype and shape remain (for "
            "ops that read only those)");
}

}  // namespace
}  // namespace ctp
