// Golden cases of the backward and optimizer passes: small forward programs,
// written below with ProgramBuilder, become training programs
// (append_backward, then append_optimizer), and block 0's op lines must equal
// tests/golden_backward/<case>/main.expected.txt and startup.expected.txt,
// line by line (the text form of `ctp dump --emit text`). With
// CTP_UPDATE_GOLDEN=1 the expected files are rewritten instead: review the
// diff as you would hand-written expectations.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <sstream>

#include "program_ir/atomic_file.h"
#include "program_ir/builder.h"
#include "program_ir/text_io.h"
#include "transpilers/append_backward.h"
#include "transpilers/append_optimizer.h"

namespace ctp {
namespace {

namespace fs = std::filesystem;

struct Case {
  std::string name;
  std::function<void(ProgramBuilder& startup, ProgramBuilder& main)> build;
  std::string loss;
  OptimizerOptions optimizer;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

// A parameter declared in both programs and initialised by startup.
void param(ProgramBuilder& startup, ProgramBuilder& main, const std::string& name,
           std::vector<int64_t> shape) {
  startup.param(name, shape);
  main.param(name, shape);
  startup.op("uniform_random").out("Out", name).attr("shape", Attribute(shape))
      .attr("min", Attribute(-0.5f)).attr("max", Attribute(0.5f)).role(op_role::kForward);
}

// fc: out = x w + b, Paddle's names (fc_<i>.w_0, fc_<i>.b_0, fc_<i>.tmp_0/1).
std::string fc(ProgramBuilder& s, ProgramBuilder& m, int i, const std::string& x, int64_t in,
               int64_t out) {
  const std::string p = "fc_" + std::to_string(i);
  param(s, m, p + ".w_0", {in, out});
  param(s, m, p + ".b_0", {out});
  m.tmp(p + ".tmp_0", {-1, out});
  m.tmp(p + ".tmp_1", {-1, out});
  m.op("mul").in("X", x).in("Y", p + ".w_0").out("Out", p + ".tmp_0")
      .attr("x_num_col_dims", Attribute(int32_t{1})).attr("y_num_col_dims", Attribute(int32_t{1}))
      .role(op_role::kForward);
  m.op("elementwise_add").in("X", p + ".tmp_0").in("Y", p + ".b_0").out("Out", p + ".tmp_1")
      .attr("axis", Attribute(int32_t{1})).role(op_role::kForward);
  return p + ".tmp_1";
}

// softmax_with_cross_entropy against int64 labels, then mean: the loss.
void classification_loss(ProgramBuilder& m, const std::string& logits, int64_t classes) {
  m.data("label", {-1, 1}, DataType::INT64);
  m.tmp("softmax_0.tmp_0", {-1, classes});
  m.tmp("softmax_0.tmp_1", {-1, 1});
  m.tmp("mean_0.tmp_0", {1});
  m.op("softmax_with_cross_entropy").in("Logits", logits).in("Label", "label")
      .out("Softmax", "softmax_0.tmp_0").out("Loss", "softmax_0.tmp_1").role(op_role::kForward);
  m.op("mean").in("X", "softmax_0.tmp_1").out("Out", "mean_0.tmp_0").role(op_role::kForward);
}

// x -> fc_0 -> relu -> fc_1 -> softmax cross entropy -> mean.
void mlp(ProgramBuilder& s, ProgramBuilder& m) {
  m.data("x", {-1, 4});
  const std::string h = fc(s, m, 0, "x", 4, 8);
  m.tmp("relu_0.tmp_0", {-1, 8});
  m.op("relu").in("X", h).out("Out", "relu_0.tmp_0").role(op_role::kForward);
  classification_loss(m, fc(s, m, 1, "relu_0.tmp_0", 8, 3), 3);
}

// A var read twice (fc_0.tmp_1 by relu and by the residual add) and a
// weight used by two layers: both gradients are sums of partial gradients.
void shared_vars(ProgramBuilder& s, ProgramBuilder& m) {
  m.data("x", {-1, 4});
  const std::string h = fc(s, m, 0, "x", 4, 4);
  m.tmp("relu_0.tmp_0", {-1, 4});
  m.tmp("tmp_0", {-1, 4});
  m.tmp("tmp_1", {-1, 4});
  m.op("relu").in("X", h).out("Out", "relu_0.tmp_0").role(op_role::kForward);
  m.op("elementwise_add").in("X", "relu_0.tmp_0").in("Y", h).out("Out", "tmp_0")
      .role(op_role::kForward);
  m.op("mul").in("X", "tmp_0").in("Y", "fc_0.w_0").out("Out", "tmp_1")  // fc_0.w_0 again
      .role(op_role::kForward);
  classification_loss(m, "tmp_1", 4);
}

// A branch cut by stop_gradient: fc_0's output is marked stop_gradient, so
// fc_0's parameters get no gradient and no update; fc_1's mul_grad writes no
// gradient for its input.
void stop_gradient(ProgramBuilder& s, ProgramBuilder& m) {
  m.data("x", {-1, 4});
  const std::string frozen = fc(s, m, 0, "x", 4, 4);
  m.block().var(frozen).stop_gradient = true;
  classification_loss(m, fc(s, m, 1, frozen, 4, 3), 3);
}

OptimizerOptions optimizer(OptimizerType type) {
  OptimizerOptions o;
  o.type = type;
  o.learning_rate = 0.01f;
  return o;
}

std::vector<Case> cases() {
  return {
      {"mlp_sgd", mlp, "mean_0.tmp_0", optimizer(OptimizerType::kSgd)},
      {"mlp_momentum", mlp, "mean_0.tmp_0", optimizer(OptimizerType::kMomentum)},
      {"mlp_adam", mlp, "mean_0.tmp_0", optimizer(OptimizerType::kAdam)},
      {"mlp_adamw", mlp, "mean_0.tmp_0", optimizer(OptimizerType::kAdamW)},
      {"mlp_lamb", mlp, "mean_0.tmp_0", optimizer(OptimizerType::kLamb)},
      {"mlp_rmsprop", mlp, "mean_0.tmp_0", optimizer(OptimizerType::kRmsprop)},
      {"shared_vars_sum", shared_vars, "mean_0.tmp_0", optimizer(OptimizerType::kSgd)},
      {"stop_gradient_branch", stop_gradient, "mean_0.tmp_0", optimizer(OptimizerType::kSgd)},
  };
}

fs::path case_dir(const std::string& name) {
  return fs::path(CTP_SOURCE_DIR) / "tests" / "golden_backward" / name;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

bool updating() {
  const char* v = std::getenv("CTP_UPDATE_GOLDEN");
  return v && std::string(v) == "1";
}

void expect_ops(const fs::path& file, const Program& program) {
  const std::string actual = block_ops_to_text(program.global_block());
  if (updating()) {
    fs::create_directories(file.parent_path());
    write_file_atomically(file.string(), actual);
    return;
  }
  ASSERT_TRUE(fs::exists(file)) << file << " is missing; run with CTP_UPDATE_GOLDEN=1";
  const auto want = lines_of(read_file(file.string()));
  const auto got = lines_of(actual);
  for (std::size_t i = 0; i < std::min(want.size(), got.size()); ++i)
    ASSERT_EQ(got[i], want[i]) << file.filename() << " line " << i + 1;
  ASSERT_EQ(got.size(), want.size()) << file.filename() << ": op count";
}

class BackwardGolden : public ::testing::TestWithParam<Case> {};

TEST_P(BackwardGolden, MatchesExpectedOpSequence) {
  const Case& c = GetParam();
  ProgramBuilder startup, main;
  c.build(startup, main);
  Program s = startup.build(), m = main.build();
  append_backward(m, BackwardOptions{.loss = c.loss});
  append_optimizer(s, m, c.optimizer);
  expect_ops(case_dir(c.name) / "main.expected.txt", m);
  expect_ops(case_dir(c.name) / "startup.expected.txt", s);
}

INSTANTIATE_TEST_SUITE_P(Cases, BackwardGolden, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace ctp
