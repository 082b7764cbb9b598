// flash_attn and flash_attn_grad on the CPU against attention written op by
// op (transpose2, matmul_v2, scale, softmax, matmul_v2, transpose2; causal
// through an additive mask), both built with StaticLayers and trained
// through append_backward, so the grad maker is checked with the kernels:
// FP64 and FP32 tight; BF16 and FP16 against FP32 loosely; the rows causal
// leaves without keys; the AMP rewrite computing flash_attn in 16 bits.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <ostream>

#include "ops/cpu/float16_compute.h"
#include "samples/static_layers.h"
#include "tests/kernels_test_util.h"
#include "transpilers/amp_rewrite.h"
#include "transpilers/append_backward.h"

namespace ctp {
namespace {

struct Dims {
  int64_t batch, seq_q, seq_k, heads, head_dim;
  bool causal = false;
  Shape q() const { return {batch, seq_q, heads, head_dim}; }
  Shape kv() const { return {batch, seq_k, heads, head_dim}; }
};

// gtest prints a case's dims.
void PrintTo(const Dims& d, std::ostream* os) {
  *os << "batch " << d.batch << ", seq " << d.seq_q << " x " << d.seq_k << ", heads "
      << d.heads << ", head_dim " << d.head_dim << (d.causal ? ", causal" : "");
}

enum class Variant { Fused, Ops };

const Op& flash_op(const Block& block) {
  for (const Op& op : block.ops())
    if (op.type == "flash_attn") return op;
  throw Error("no flash_attn op");
}

// A training program of loss = mean(attention(q, k, v) * w) with parameters
// q, k, v and data w (and, for the ops' causal mask, data mask), and the
// names of its attention output and probabilities.
struct AttentionProgram {
  Program main;
  std::string out, probs;
};

AttentionProgram attention_program(const Dims& d, Variant variant, DataType dtype,
                                   bool return_softmax = false) {
  ProgramBuilder startup, main;
  samples::StaticLayers nn(startup, main);
  main.param("q", d.q(), dtype);
  main.param("k", d.kv(), dtype);
  main.param("v", d.kv(), dtype);
  const std::string w = nn.data("w", d.q(), dtype);
  AttentionProgram p;
  if (variant == Variant::Fused) {
    p.out = nn.flash_attention("q", "k", "v", d.causal, return_softmax);
    p.probs = flash_op(main.block()).output("softmax")->front();
  } else {
    const auto heads_first = [&](const std::string& t) { return nn.transpose(t, {0, 2, 1, 3}); };
    std::string scores =
        nn.scale(nn.matmul(heads_first("q"), heads_first("k"), false, true),
                 1.0f / std::sqrt(static_cast<float>(d.head_dim)));
    if (d.causal) scores = nn.add(scores, nn.data("mask", {d.seq_q, d.seq_k}, dtype));
    p.probs = nn.softmax(scores);
    p.out = nn.transpose(nn.matmul(p.probs, heads_first("v"), false, false), {0, 2, 1, 3});
  }
  main.tmp("weighted", d.q(), dtype);
  main.tmp("loss", {1}, dtype);
  main.op("elementwise_mul").in("X", p.out).in("Y", w).out("Out", "weighted")
      .attr("axis", Attribute(int32_t{-1})).role(op_role::kForward);
  main.op("mean").in("X", "weighted").out("Out", "loss")
      .role(op_role::kForward | op_role::kLoss);
  p.main = main.build();
  append_backward(p.main, BackwardOptions{.loss = "loss"});
  return p;
}

Tensor random_of(DataType dtype, const Shape& shape, uint64_t seed, double scale = 1.0) {
  const Tensor t = test::random_tensor(shape, seed);
  Tensor out(dtype, shape);
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double v = t.data<double>()[i] * scale;
    if (dtype == DataType::FP64) out.data<double>()[i] = v;
    else out.data<float>()[i] = static_cast<float>(v);
  }
  return out;
}

// The inputs of both variants: q, k, v scaled so that the scores spread
// (probabilities far from uniform), w, and the causal mask.
Scope inputs(const Dims& d, DataType dtype) {
  Scope scope;
  scope.var("q") = random_of(dtype, d.q(), 11, 3.0);
  scope.var("k") = random_of(dtype, d.kv(), 12, 3.0);
  scope.var("v") = random_of(dtype, d.kv(), 13);
  scope.var("w") = random_of(dtype, d.q(), 14);
  Tensor mask(dtype, {d.seq_q, d.seq_k});
  for (int64_t i = 0; i < d.seq_q; ++i)
    for (int64_t j = 0; j < d.seq_k; ++j) {
      const double v = j > i + (d.seq_k - d.seq_q) ? -1e30 : 0.0;
      if (dtype == DataType::FP64) mask.data<double>()[i * d.seq_k + j] = v;
      else mask.data<float>()[i * d.seq_k + j] = static_cast<float>(v);
    }
  scope.var("mask") = mask;
  return scope;
}

std::vector<double> as_doubles(const Tensor& t) {
  std::vector<double> out(static_cast<std::size_t>(t.numel()));
  const Tensor wide = t.dtype() == DataType::FP16 || t.dtype() == DataType::BF16
                          ? cpu::widen_to_float(t) : t;
  for (int64_t i = 0; i < t.numel(); ++i) out[static_cast<std::size_t>(i)] = test::element(wide, i);
  return out;
}

// |a - b| <= tol * max |b|, element by element (tol itself when b is all 0).
void expect_close(const Tensor& actual, const Tensor& expected, double tol, const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_EQ(actual.shape(), expected.shape());
  const std::vector<double> a = as_doubles(actual), e = as_doubles(expected);
  double scale = 0.0;
  for (double v : e) scale = std::max(scale, std::abs(v));
  if (scale == 0.0) scale = 1.0;
  int bad = 0;
  for (std::size_t i = 0; i < a.size() && bad < 5; ++i)
    if (!(std::abs(a[i] - e[i]) <= tol * scale)) {
      ADD_FAILURE() << "element " << i << ": " << a[i] << " vs " << e[i] << " (tol " << tol * scale
                    << ")";
      ++bad;
    }
}

struct Outcome {
  Scope scope;
  AttentionProgram program;
};

Outcome run(const Dims& d, Variant variant, DataType dtype, bool return_softmax = false) {
  Outcome o{inputs(d, dtype), attention_program(d, variant, dtype, return_softmax)};
  Executor(o.program.main, {}).run(o.scope);
  return o;
}

class FlashAttnVsOps : public ::testing::TestWithParam<std::tuple<Dims, DataType>> {};

// FP64: the forward to 1e-12; the gradients to 1e-6, since softmax_lse is
// FP32 (as in Paddle) and the backward's probabilities exp(s - lse) carry its
// rounding. FP32: 1e-5 of each tensor's largest element.
TEST_P(FlashAttnVsOps, OutputAndGradientsMatch) {
  const auto& [d, dtype] = GetParam();
  const bool fp64 = dtype == DataType::FP64;
  const double tol = fp64 ? 1e-12 : 1e-5, grad_tol = fp64 ? 1e-6 : 1e-5;
  Outcome fused = run(d, Variant::Fused, dtype, true);
  Outcome ops = run(d, Variant::Ops, dtype);
  expect_close(fused.scope.get(fused.program.out), ops.scope.get(ops.program.out), tol, "out");
  expect_close(fused.scope.get(fused.program.probs), ops.scope.get(ops.program.probs), tol,
               "softmax (return_softmax)");
  expect_close(fused.scope.get("loss"), ops.scope.get("loss"), tol, "loss");
  for (const char* p : {"q@GRAD", "k@GRAD", "v@GRAD"})
    expect_close(fused.scope.get(p), ops.scope.get(p), grad_tol, p);
  // The program's backward is one flash_attn_grad.
  int grads = 0;
  for (const Op& op : fused.program.main.global_block().ops()) grads += op.type == "flash_attn_grad";
  EXPECT_EQ(grads, 1);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, FlashAttnVsOps,
    ::testing::Combine(::testing::Values(Dims{2, 5, 5, 3, 4}, Dims{1, 4, 7, 2, 8},
                                         Dims{2, 6, 6, 2, 4, true}, Dims{1, 3, 6, 2, 4, true}),
                       ::testing::Values(DataType::FP64, DataType::FP32)),
    [](const auto& info) {
      const Dims& d = std::get<0>(info.param);
      return std::string(d.causal ? "Causal" : "Full") + std::to_string(d.seq_q) + "x" +
             std::to_string(d.seq_k) + std::string(to_string(std::get<1>(info.param)));
    });

// softmax_lse is the log-sum-exp of each query row's scaled scores.
TEST(FlashAttn, SoftmaxLseIsTheLogSumExpOfTheScores) {
  const Dims d{1, 3, 4, 2, 4};
  Outcome fused = run(d, Variant::Fused, DataType::FP64);
  const Op& op = flash_op(fused.program.main.global_block());
  const Tensor& lse = fused.scope.get(op.output("softmax_lse")->front());
  ASSERT_EQ(lse.dtype(), DataType::FP32);
  ASSERT_EQ(lse.shape(), (Shape{1, 2, 3}));
  const Tensor& q = fused.scope.get("q");
  const Tensor& k = fused.scope.get("k");
  for (int64_t h = 0; h < d.heads; ++h)
    for (int64_t i = 0; i < d.seq_q; ++i) {
      double sum = 0;
      for (int64_t j = 0; j < d.seq_k; ++j) {
        double dot = 0;
        for (int64_t c = 0; c < d.head_dim; ++c)
          dot += q.data<double>()[(i * d.heads + h) * d.head_dim + c] *
                 k.data<double>()[(j * d.heads + h) * d.head_dim + c];
        sum += std::exp(dot / 2.0);  // scale 1/sqrt(4)
      }
      EXPECT_NEAR(lse.data<float>()[h * d.seq_q + i], std::log(sum), 1e-5) << h << ", " << i;
    }
}

// Causal with more queries than keys: the first seq_q - seq_k rows see no
// key; they get out 0, lse +inf and no gradient, and the rest match the ops.
TEST(FlashAttn, CausalRowsWithoutKeysGiveZero) {
  const Dims d{1, 5, 3, 2, 4, true};
  Outcome fused = run(d, Variant::Fused, DataType::FP64);
  const Op& op = flash_op(fused.program.main.global_block());
  const Tensor& lse = fused.scope.get(op.output("softmax_lse")->front());
  const Tensor& out = fused.scope.get(fused.program.out);
  const Tensor& dq = fused.scope.get("q@GRAD");
  const int64_t row = d.heads * d.head_dim;
  for (int64_t i = 0; i < d.seq_q; ++i) {
    const bool empty = i < d.seq_q - d.seq_k;
    for (int64_t h = 0; h < d.heads; ++h)
      EXPECT_EQ(std::isinf(lse.data<float>()[h * d.seq_q + i]), empty) << i;
    for (int64_t c = 0; c < row; ++c) {
      EXPECT_TRUE(std::isfinite(dq.data<double>()[i * row + c]));
      if (empty) {
        EXPECT_EQ(out.data<double>()[i * row + c], 0.0) << i;
        EXPECT_EQ(dq.data<double>()[i * row + c], 0.0) << i;
      } else {
        EXPECT_NE(out.data<double>()[i * row + c], 0.0) << i;
      }
    }
  }
  for (const char* p : {"k@GRAD", "v@GRAD"})
    for (double g : as_doubles(fused.scope.get(p))) EXPECT_TRUE(std::isfinite(g)) << p;
}

// 16-bit q, k, v: the kernel computes in FP32 on the rounded inputs and
// rounds each output once, so it follows the FP32 kernel to 16-bit
// precision; softmax_lse stays FP32.
class FlashAttnHalf : public ::testing::TestWithParam<DataType> {};

TEST_P(FlashAttnHalf, FollowsFp32) {
  const DataType half = GetParam();
  const Dims d{2, 6, 6, 2, 8, true};
  const auto rounded = [&](const Tensor& t) {
    Tensor low;
    cpu::round_into(t, half, low);
    return low;
  };
  Scope wide = inputs(d, DataType::FP32), low;
  for (const char* name : {"q", "k", "v"}) {
    low.var(name) = rounded(wide.get(name));
    wide.var(name) = cpu::widen_to_float(low.get(name));  // the same values in both
  }
  low.var("dout") = rounded(random_of(DataType::FP32, d.q(), 21));
  wide.var("dout") = cpu::widen_to_float(low.get("dout"));
  const std::vector<NamedAttribute> attrs = {{"causal", Attribute(true)}};
  const Op forward = test::make_op(
      "flash_attn", {{"q", {"q"}}, {"k", {"k"}}, {"v", {"v"}}},
      {{"out", {"out"}}, {"softmax", {"sm"}}, {"softmax_lse", {"lse"}}, {"seed_offset", {"so"}}},
      attrs);
  const Op backward = test::make_op(
      "flash_attn_grad",
      {{"q", {"q"}}, {"k", {"k"}}, {"v", {"v"}}, {"out", {"out"}}, {"softmax_lse", {"lse"}},
       {"seed_offset", {"so"}}, {"out@GRAD", {"dout"}}},
      {{"q@GRAD", {"dq"}}, {"k@GRAD", {"dk"}}, {"v@GRAD", {"dv"}}}, attrs);
  for (Scope* s : {&wide, &low}) {
    test::run_op(*s, forward);
    test::run_op(*s, backward);
  }
  EXPECT_EQ(low.get("out").dtype(), half);
  EXPECT_EQ(low.get("lse").dtype(), DataType::FP32);
  EXPECT_EQ(low.get("dq").dtype(), half);
  const double tol = half == DataType::BF16 ? 2e-2 : 4e-3;
  expect_close(low.get("out"), wide.get("out"), tol, "out");
  expect_close(low.get("lse"), wide.get("lse"), 1e-6, "softmax_lse");
  for (const char* g : {"dq", "dk", "dv"}) expect_close(low.get(g), wide.get(g), tol, g);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, FlashAttnHalf, ::testing::Values(DataType::BF16, DataType::FP16),
                         [](const auto& info) { return std::string(to_string(info.param)); });

// Under --amp bf16, flash_attn is a white-list op: it computes on BF16 casts
// of q, k, v, its out is BF16 and softmax_lse stays FP32; the program trains
// (FP32 gradients of the FP32 parameters) close to the FP32 program.
TEST(FlashAttn, AmpComputesIn16BitsAndKeepsLseFp32) {
  const Dims d{1, 4, 4, 2, 8};
  ProgramBuilder startup, main;
  samples::StaticLayers nn(startup, main);
  for (const char* p : {"q", "k", "v"}) main.param(p, d.q());
  const std::string out = nn.flash_attention("q", "k", "v", false);
  main.tmp("loss", {1});
  main.op("mean").in("X", out).out("Out", "loss").role(op_role::kForward | op_role::kLoss);
  Program program = main.build();
  amp_rewrite(program, AmpOptions{.dtype = DataType::BF16});
  const Block& block = program.global_block();
  const Op* flash = &flash_op(block);
  for (const char* slot : {"q", "k", "v"})
    EXPECT_EQ(block.var(flash->input(slot)->front()).dtype, DataType::BF16) << slot;
  EXPECT_EQ(block.var(flash->output("out")->front()).dtype, DataType::BF16);
  EXPECT_EQ(block.var(flash->output("softmax_lse")->front()).dtype, DataType::FP32);
  append_backward(program, BackwardOptions{.loss = "loss"});
  Scope scope = inputs(d, DataType::FP32);
  Executor(program, {}).run(scope);
  EXPECT_EQ(scope.get("q@GRAD").dtype(), DataType::FP32);
  EXPECT_TRUE(std::isfinite(test::element(scope.get("q@GRAD"), 0)));
}

}  // namespace
}  // namespace ctp
