// `ctp minimize` end to end: a forward-only MLP written with ProgramBuilder
// becomes a training program, `ctp transpile --mode grad_allreduce` rewrites
// it, and `ctp launch --nproc 2 -- ctp run` trains it on Gloo: the loss goes
// down on both workers and both hold the same parameters at every step. And
// its errors: each names the place, exits 1 and writes nothing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "executor/runtime/npy.h"
#include "program_ir/atomic_file.h"
#include "program_ir/builder.h"
#include "program_ir/program_io.h"
#include "tests/executor_process_util.h"
#include "tests/kernels_test_util.h"
#include "tests/launch_test_util.h"

namespace ctp {
namespace {

using ::testing::HasSubstr;
using test::CommandResult;
using test::run_command;

// x [-1, 4] -> fc 16 -> relu -> fc 2 -> softmax cross entropy -> mean, with
// Paddle's names; startup initialises the parameters, main has no backward.
void write_forward_mlp(const test::TempDir& dir) {
  ProgramBuilder s, m;
  m.data("x", {-1, 4});
  m.data("label", {-1, 1}, DataType::INT64);
  std::string input = "x";
  const std::vector<std::pair<int64_t, int64_t>> layers = {{4, 16}, {16, 2}};
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const auto [in, out] = layers[i];
    const std::string fc = "fc_" + std::to_string(i);
    for (ProgramBuilder* b : {&s, &m}) {
      b->param(fc + ".w_0", {in, out});
      b->param(fc + ".b_0", {out});
    }
    s.op("uniform_random").out("Out", fc + ".w_0")
        .attr("shape", Attribute(std::vector<int64_t>{in, out}))
        .attr("min", Attribute(-0.5f)).attr("max", Attribute(0.5f)).role(op_role::kForward);
    s.op("fill_constant").out("Out", fc + ".b_0")
        .attr("shape", Attribute(std::vector<int64_t>{out}))
        .attr("value", Attribute(0.0f)).role(op_role::kForward);
    m.tmp(fc + ".tmp_0", {-1, out});
    m.tmp(fc + ".tmp_1", {-1, out});
    m.op("mul").in("X", input).in("Y", fc + ".w_0").out("Out", fc + ".tmp_0")
        .role(op_role::kForward);
    m.op("elementwise_add").in("X", fc + ".tmp_0").in("Y", fc + ".b_0").out("Out", fc + ".tmp_1")
        .attr("axis", Attribute(int32_t{1})).role(op_role::kForward);
    input = fc + ".tmp_1";
    if (i + 1 < layers.size()) {
      m.tmp(fc + ".tmp_2", {-1, out});
      m.op("relu").in("X", input).out("Out", fc + ".tmp_2").role(op_role::kForward);
      input = fc + ".tmp_2";
    }
  }
  m.tmp("softmax_with_cross_entropy_0.tmp_0", {-1, 2});
  m.tmp("softmax_with_cross_entropy_0.tmp_1", {-1, 1});
  m.tmp("mean_0.tmp_0", {1});
  m.op("softmax_with_cross_entropy").in("Logits", input).in("Label", "label")
      .out("Softmax", "softmax_with_cross_entropy_0.tmp_0")
      .out("Loss", "softmax_with_cross_entropy_0.tmp_1").role(op_role::kForward);
  m.op("mean").in("X", "softmax_with_cross_entropy_0.tmp_1").out("Out", "mean_0.tmp_0")
      .role(op_role::kForward);
  write_file_atomically(dir / "startup.json", serialize_program(s.build(), ProgramFormat::Json));
  write_file_atomically(dir / "main.json", serialize_program(m.build(), ProgramFormat::Json));
}

// 64 samples of 4 features; the label says whether x0 + x1 > 0.
void write_data(const test::TempDir& dir) {
  const int64_t rows = 64;
  const std::vector<double> v =
      test::random_values(static_cast<std::size_t>(rows * 4), 7, -2.0, 2.0);
  Tensor x(DataType::FP32, {rows, 4});
  Tensor label(DataType::INT64, {rows, 1});
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < 4; ++c)
      x.data<float>()[r * 4 + c] = static_cast<float>(v[static_cast<std::size_t>(r * 4 + c)]);
    label.data<int64_t>()[r] = v[static_cast<std::size_t>(r * 4)] +
                                           v[static_cast<std::size_t>(r * 4 + 1)] > 0 ? 1 : 0;
  }
  write_file_atomically(dir / "x.npy", tensor_to_npy(x));
  write_file_atomically(dir / "label.npy", tensor_to_npy(label));
}

const std::string kCli = CTP_CLI_PATH;

std::string minimize(const test::TempDir& dir, const std::string& flags) {
  return kCli + " minimize --startup " + (dir / "startup.json") + " --main " +
         (dir / "main.json") + " " + flags;
}

TEST(MinimizeCli, ForwardMlpTrainsOnTwoGlooWorkers) {
#ifndef CTP_HAVE_GLOO
  GTEST_SKIP() << "built without Gloo";
#endif
  const test::TempDir dir("minimize_train");
  write_forward_mlp(dir);
  write_data(dir);
  CommandResult r = run_command(minimize(dir, "--loss mean_0.tmp_0 --optimizer adam "
                                              "--learning-rate 0.05 -o " + (dir / "train")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("4 parameter(s) updated by adam"));
  // A free pair (port, port + 1): ports from the pid collide between tests
  // that ctest runs at once with neighbouring pids.
  const int port = test::free_port_pair();
  ASSERT_NE(port, 0) << "no free pair of ports";
  const std::string endpoints =
      "127.0.0.1:" + std::to_string(port) + ",127.0.0.1:" + std::to_string(port + 1);
  r = run_command(kCli + " transpile --mode grad_allreduce --all-ranks --endpoints " + endpoints +
                  " --startup " + (dir / "train/startup.pb") + " --main " +
                  (dir / "train/main.pb") + " -o " + (dir / "dp"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // Each worker initialises from its own seed; the startup broadcast makes
  // the parameters equal, and the all-reduced gradients keep them so.
  const int steps = 30;
  r = run_command(kCli + " launch --nproc 2 --timeout 60 --base-port " + std::to_string(port) +
                  " -- " + kCli + " run --startup '" + (dir / "dp") +
                  "/rank_{rank}/startup.pb' --main '" + (dir / "dp") +
                  "/rank_{rank}/main.pb' --steps " + std::to_string(steps) +
                  " --seed-by-rank --feed x=" + (dir / "x.npy") + " --feed label=" +
                  (dir / "label.npy") + " --fetch mean_0.tmp_0,fc_0.w_0,fc_1.b_0");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto loss = test::printed_by_rank(r.output, "mean_0\\.tmp_0");
  const auto weight = test::printed_by_rank(r.output, "fc_0\\.w_0");
  const auto bias = test::printed_by_rank(r.output, "fc_1\\.b_0");
  ASSERT_EQ(loss.size(), 2u) << r.output;
  for (int rank = 0; rank < 2; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    ASSERT_EQ(loss.at(rank).size(), static_cast<std::size_t>(steps)) << r.output;
    EXPECT_LT(std::stod(loss.at(rank).back()), 0.5 * std::stod(loss.at(rank).front()))
        << r.output;
  }
  EXPECT_EQ(weight.at(0), weight.at(1)) << r.output;
  EXPECT_EQ(bias.at(0), bias.at(1)) << r.output;
  EXPECT_NE(weight.at(0).front(), weight.at(0).back()) << "the parameters train";
}

TEST(MinimizeCli, ErrorsNameThePlaceAndWriteNothing) {
  const test::TempDir dir("minimize_errors");
  write_forward_mlp(dir);
  const std::string out = dir / "out";
  struct Case {
    std::string flags, message;
    int exit_code;
  };
  const std::vector<Case> cases = {
      {"--loss nope",
       "main.json: append_backward: block 0, var 'nope': the loss is not declared", 1},
      {"--loss fc_1.tmp_1",
       "var 'fc_1.tmp_1': the loss must be a scalar (shape [1] or [], as Paddle requires), but "
       "its shape is [-1, 2]; reduce it first (mean, reduce_mean)", 1},
      {"--loss mean_0.tmp_0 --optimizer adagrad", "unknown --optimizer 'adagrad'", 2},
      {"--loss mean_0.tmp_0 --learning-rate -1", "the learning rate must be positive", 1},
      {"--loss mean_0.tmp_0 --amp fp8", "--amp must be bf16 or fp16, not 'fp8'", 2},
      {"--loss mean_0.tmp_0 --amp-black-list relu",
       "--amp-white-list and --amp-black-list need --amp", 2},
      {"--loss mean_0.tmp_0 --amp bf16 --amp-white-list relu,mean --amp-black-list mean",
       "main.json: amp_rewrite: op 'mean' is in both the custom white list and the custom black "
       "list", 1},
      {"--loss mean_0.tmp_0 --init-loss-scaling 8", "--loss-scaling and its options need --amp",
       2},
      {"--loss mean_0.tmp_0 --amp bf16 --incr-ratio 3",
       "the loss-scaling options need loss scaling", 2},
      {"--loss mean_0.tmp_0 --amp fp16 --loss-scaling maybe",
       "--loss-scaling must be dynamic, static or none, not 'maybe'", 2},
      {"--loss mean_0.tmp_0 --amp fp16 --decr-ratio 2",
       "main.json: loss_scaling: decr_ratio must lie in (0, 1]", 1},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.flags);
    const CommandResult r = run_command(minimize(dir, c.flags + " -o " + out));
    EXPECT_EQ(r.exit_code, c.exit_code) << r.output;
    EXPECT_THAT(r.output, HasSubstr(c.message));
    EXPECT_FALSE(std::filesystem::exists(out)) << "a failed run wrote " << out;
  }
  // An op without a grad maker on the way from a parameter to the loss.
  Program main = load_program_file(dir / "main.json");
  std::next(main.global_block().ops().begin(), 2)->type = "my_relu";
  write_file_atomically(dir / "main.json", serialize_program(main, ProgramFormat::Json));
  const CommandResult r = run_command(minimize(dir, "--loss mean_0.tmp_0 -o " + out));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("block 0, op 2 'my_relu': lies on the way from parameter "
                                  "'fc_0.w_0' to the loss 'mean_0.tmp_0'"));
  EXPECT_FALSE(std::filesystem::exists(out));
}

// --amp bf16: the forward's mul and elementwise_add compute in BF16 on cast
// copies, the parameters and their gradients stay FP32, and it trains on the
// CPU.
TEST(MinimizeCli, AmpBf16TrainsWithFp32ParameterGradients) {
  const test::TempDir dir("minimize_amp");
  write_forward_mlp(dir);
  write_data(dir);
  CommandResult r = run_command(minimize(dir, "--loss mean_0.tmp_0 --amp bf16 --optimizer adam "
                                              "--learning-rate 0.05 --emit json -o " +
                                              (dir / "train")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // mul, elementwise_add, relu, mul, elementwise_add; casts of x, four
  // parameters and the logits (up, for the loss).
  EXPECT_THAT(r.output, HasSubstr("--amp bf16: 5 op(s) compute in bf16, 6 cast(s) inserted"));
  const Program main = load_program_file(dir / "train/main.json");
  const Block& block = main.global_block();
  EXPECT_EQ(block.var("fc_0.tmp_0").dtype, DataType::BF16);
  EXPECT_EQ(block.var("fc_0.w_0.cast_bf16").dtype, DataType::BF16);
  EXPECT_EQ(block.var("fc_0.w_0@GRAD").dtype, DataType::FP32);
  EXPECT_EQ(block.var("mean_0.tmp_0").dtype, DataType::FP32);
  const int steps = 30;
  r = run_command(kCli + " run --startup " + (dir / "train/startup.json") + " --main " +
                  (dir / "train/main.json") + " --steps " + std::to_string(steps) +
                  " --feed x=" + (dir / "x.npy") + " --feed label=" + (dir / "label.npy") +
                  " --fetch mean_0.tmp_0");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::vector<double> loss;
  const std::regex line("step \\d+/\\d+ +mean_0\\.tmp_0 = (\\S+)");
  for (auto it = std::sregex_iterator(r.output.begin(), r.output.end(), line);
       it != std::sregex_iterator(); ++it)
    loss.push_back(std::stod((*it)[1].str()));
  ASSERT_EQ(loss.size(), static_cast<std::size_t>(steps)) << r.output;
  EXPECT_LT(loss.back(), 0.5 * loss.front()) << r.output;
}

// --amp fp16 scales the loss dynamically by default (Paddle's decorator:
// transpilers/loss_scaling.h) and trains on the CPU; --loss-scaling static
// writes the check without the update.
TEST(MinimizeCli, AmpFp16ScalesTheLossAndTrains) {
  const test::TempDir dir("minimize_fp16");
  write_forward_mlp(dir);
  write_data(dir);
  CommandResult r = run_command(minimize(dir, "--loss mean_0.tmp_0 --amp fp16 --optimizer adam "
                                              "--learning-rate 0.05 --emit json -o " +
                                              (dir / "train")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("dynamic loss scaling from 32768 (loss_scaling_0); backward "
                                  "of mean_0.tmp_0.scaled"));
  const auto op_types = [](const std::string& path) {
    const Program program = load_program_file(path);
    std::vector<std::string> types;
    for (const Op& op : program.global_block().ops()) types.push_back(op.type);
    return types;
  };
  std::vector<std::string> types = op_types(dir / "train/main.json");
  EXPECT_THAT(types, ::testing::Contains("check_finite_and_unscale"));
  EXPECT_THAT(types, ::testing::Contains("update_loss_scaling"));
  const int steps = 30;
  r = run_command(kCli + " run --startup " + (dir / "train/startup.json") + " --main " +
                  (dir / "train/main.json") + " --steps " + std::to_string(steps) +
                  " --feed x=" + (dir / "x.npy") + " --feed label=" + (dir / "label.npy") +
                  " --fetch mean_0.tmp_0");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::vector<double> loss;
  const std::regex line("step \\d+/\\d+ +mean_0\\.tmp_0 = (\\S+)");
  for (auto it = std::sregex_iterator(r.output.begin(), r.output.end(), line);
       it != std::sregex_iterator(); ++it)
    loss.push_back(std::stod((*it)[1].str()));
  ASSERT_EQ(loss.size(), static_cast<std::size_t>(steps)) << r.output;
  EXPECT_LT(loss.back(), 0.5 * loss.front()) << r.output;

  r = run_command(minimize(dir, "--loss mean_0.tmp_0 --amp fp16 --loss-scaling static "
                                "--init-loss-scaling 128 --emit json -o " + (dir / "static")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("static loss scaling from 128"));
  types = op_types(dir / "static/main.json");
  EXPECT_THAT(types, ::testing::Contains("check_finite_and_unscale"));
  EXPECT_THAT(types, ::testing::Not(::testing::Contains("update_loss_scaling")));
}

TEST(MinimizeCli, WarnsOfAParameterWithNoPathToTheLoss) {
  const test::TempDir dir("minimize_warn");
  write_forward_mlp(dir);
  Program main = load_program_file(dir / "main.json");
  ProgramBuilder b(std::move(main));
  b.param("orphan.w_0", {3});
  write_file_atomically(dir / "main.json", serialize_program(b.build(), ProgramFormat::Json));
  // `backward` is minimize's alias.
  const CommandResult ok = run_command(kCli + " backward --startup " + (dir / "startup.json") +
                                       " --main " + (dir / "main.json") +
                                       " --loss mean_0.tmp_0 --emit json -o " + (dir / "o"));
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_THAT(ok.output, HasSubstr("warning: parameter 'orphan.w_0' has no path to the loss "
                                   "'mean_0.tmp_0': it gets no gradient and is not updated"));
  EXPECT_TRUE(std::filesystem::exists(dir / "o/main.json"));
  EXPECT_TRUE(std::filesystem::exists(dir / "o/startup.json"));
}

}  // namespace
}  // namespace ctp
