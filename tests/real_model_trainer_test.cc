// The sample trainer on the real models (--model resnet|bert, issue 18): tiny
// configurations train on synthetic data, the loss falls, and two Gloo
// workers under `ctp launch` end with the parameters of the one-worker
// reference:
//   BERT: one worker on the whole batch (layer_norm normalises each token
//     alone, so nothing couples the rows of a batch);
//   ResNet: one worker with --micro-batches 2, which runs the forward and
//     backward on the two workers' shards and averages their gradients
//     before one update. batch_norm takes its statistics over each worker's
//     shard (as PyTorch DDP without SyncBN), so one worker on the whole
//     batch is a different computation; the test shows it differs by far
//     more than the tolerance, so the tolerance cannot hide that difference.
// The tolerance (1e-5 relative, absolute below 1e-2) covers FP32 summation
// order: the workers' gradients are halved and summed by the all-reduce where
// the reference sums them in double and halves once (equal bits here), and a
// shard's matmuls add up in another order than the whole batch's (BERT:
// 6e-7 seen after 4 steps).
#include <fstream>

#include "tests/sample_trainer_util.h"

namespace ctp {
namespace {

using test::Training;
using test::train;

const char* const kResNet = test::kTinyResNet;
const char* const kBert = test::kTinyBert;
constexpr double kTolerance = 1e-5;

// The largest relative difference (as expect_parameters_near measures it)
// between any parameter of `a`'s worker 0 and `b`'s.
double largest_difference(const Training& a, const Training& b) {
  double worst = 0;
  for (const auto& [name, expected] : b.workers.at(0)) {
    const Tensor& actual = a.workers.at(0).at(name);
    for (int64_t i = 0; i < expected.numel(); ++i) {
      const double x = test::element(actual, i), e = test::element(expected, i);
      worst = std::max(worst, std::abs(x - e) / std::max(1e-2, std::abs(e)));
    }
  }
  return worst;
}

void expect_loss_falls(const Training& t) {
  ASSERT_GE(t.losses.size(), 2u) << t.output;
  EXPECT_LT(t.losses.back(), t.losses.front()) << t.output;
}

struct Mode {
  std::string args;
  int processes;   // under ctp launch when 2 (Gloo), else device threads
  bool sums;       // multi_thread adds the threads' gradients up
  double tolerance;
};

// Trains `model` (with momentum, 4 steps) in every transpiler mode on 2
// workers, each to the parameters of `reference` (one worker: "--mode none"
// + reference_args) at the same learning rate, or at twice it for the mode
// that sums: with momentum (linear in the gradient, from a zero velocity)
// the sum of 2 gradients at rate r is their mean at rate 2r. Returns the
// grad_allreduce run (the threads' one without Gloo).
Training expect_every_mode_matches(const std::string& model, const std::string& reference_args,
                                   double local_sgd_tolerance) {
  const std::string common = model + " --steps 4 --optimizer momentum";
  const Training reference = train("--mode none" + reference_args + common + " --lr 0.05");
  const Training twice = train("--mode none" + reference_args + common + " --lr 0.1");
  EXPECT_EQ(reference.exit_code, 0) << reference.output;
  EXPECT_EQ(twice.exit_code, 0) << twice.output;
  expect_loss_falls(reference);
  std::vector<Mode> modes = {
      {"--mode single_process_multi_thread --fuse-allreduce 1", 1, false, kTolerance},
      {"--mode single_process_multi_thread --fuse-allreduce 0", 1, false, kTolerance},
      {"--mode multi_thread --trans-mode fuse_all_reduce", 1, true, kTolerance},
      {"--mode multi_thread --trans-mode all_reduce", 1, true, kTolerance},
  };
  if (test::have_gloo())
    modes.insert(modes.begin(), {{"--mode grad_allreduce", 2, false, kTolerance},
                                 {"--mode grad_allreduce --bucket-mb 0.01", 2, false, kTolerance},
                                 {"--mode local_sgd", 2, false, local_sgd_tolerance}});
  Training first;
  for (const Mode& mode : modes) {
    SCOPED_TRACE(mode.args);
    Training t = train(mode.args + common + " --lr 0.05", mode.processes);
    EXPECT_EQ(t.exit_code, 0) << t.output;  // exit 1 when the workers differ
    EXPECT_EQ(t.workers.size(), 2u) << t.output;
    expect_loss_falls(t);
    if (mode.args.find("bucket") != std::string::npos)
      EXPECT_NE(t.output.find("fused gradient buffers laid out"), std::string::npos) << t.output;
    test::expect_parameters_near(t, (mode.sums ? twice : reference).workers.at(0), mode.tolerance);
    if (first.workers.empty()) first = std::move(t);
  }
  // all_gather applies each gathered gradient through adam: no one-worker
  // run computes that; the workers stay identical (else exit 1) and learn.
  const Training gathered = train("--mode multi_thread --trans-mode all_gather --optimizer adam "
                                  "--lr 0.01 --steps 4" + model);
  EXPECT_EQ(gathered.exit_code, 0) << gathered.output;
  EXPECT_EQ(gathered.workers.size(), 2u) << gathered.output;
  expect_loss_falls(gathered);
  return first;
}

TEST(RealModelTrainer, ResNetInEveryModeEndsWithTheMicroBatchReference) {
  // local_sgd averages parameters, not gradients: one rounding more per
  // step, which this tiny ResNet amplifies (batch_norm over 4 rows of 2x2
  // maps in its last stage): a 1e-7 relative change of its parameters grows
  // to 3e-5 in 3 steps; local_sgd ends 5.5e-5 from the reference.
  const Training workers = expect_every_mode_matches(kResNet, " --micro-batches 2", 2e-4);
  // One worker on the whole batch normalises over all 8 rows: not what two
  // workers compute, and far beyond the tolerance.
  const Training whole_batch = train("--mode none --steps 4 --optimizer momentum --lr 0.05" +
                                     std::string(kResNet));
  ASSERT_EQ(whole_batch.exit_code, 0) << whole_batch.output;
  ASSERT_FALSE(workers.workers.empty());
  EXPECT_GT(largest_difference(whole_batch, workers), 1000 * kTolerance);
}

// BERT's self-attention op by op, and as one flash_attn op per layer.
class RealModelTrainerBert : public ::testing::TestWithParam<std::string> {};

TEST_P(RealModelTrainerBert, InEveryModeEndsWithOneWorkerOnTheWholeBatch) {
  // Momentum, not adam, for the comparison: the key projections' bias gets
  // a gradient that is 0 but for rounding (softmax ignores a constant added
  // to every key), and adam scales that noise up to steps of the learning
  // rate's size, which no reference reproduces.
  const Training workers = expect_every_mode_matches(kBert + GetParam(), "", kTolerance);
  if (!GetParam().empty())
    EXPECT_NE(workers.output.find("(flash_attn)"), std::string::npos) << workers.output;
}

INSTANTIATE_TEST_SUITE_P(Attention, RealModelTrainerBert,
                         ::testing::Values(std::string(), std::string(" --attention flash")),
                         [](const auto& info) { return info.param.empty() ? "Ops" : "Flash"; });

// --amp bf16 on the real models is the AMP rewrite pass's program
// (transpilers/amp_rewrite.h; FP32 parameters and gradients): 2 Gloo workers
// end with the parameters of the same program's one-worker reference. ResNet's
// equal the micro-batch reference's (the same sums, in the same order); in
// BERT the whole batch's matmuls add up in another order than a shard's, and
// a last-bit FP32 difference can round a bf16 cast the other way (2^-8
// relative): 9e-3 seen after 4 steps, so 2e-2 (flash_attn, white-listed,
// computes in BF16 too). The bf16 runs differ from the FP32 ones, so the
// rewrite did take effect.
TEST(RealModelTrainer, Bf16WorkersMatchTheBf16Reference) {
  if (!test::have_gloo()) GTEST_SKIP() << "built without Gloo";
  constexpr double kBf16Tolerance = 2e-2;
  struct Model {
    std::string args, reference_args;
    double tolerance;
  };
  for (const Model& m : {Model{kResNet, " --micro-batches 2", kTolerance},
                         Model{kBert, "", kBf16Tolerance},
                         Model{kBert + std::string(" --attention flash"), "", kBf16Tolerance}}) {
    SCOPED_TRACE(m.args);
    const std::string common = m.args + " --steps 4 --optimizer momentum --lr 0.05";
    const Training fp32 = train("--mode none" + m.reference_args + common);
    const Training reference = train("--mode none --amp bf16" + m.reference_args + common);
    ASSERT_EQ(reference.exit_code, 0) << reference.output;
    EXPECT_NE(reference.output.find("BF16 compute where the AMP rewrite's lists say"),
              std::string::npos) << reference.output;
    expect_loss_falls(reference);
    ASSERT_EQ(fp32.exit_code, 0) << fp32.output;
    EXPECT_GT(largest_difference(reference, fp32), kTolerance);
    const Training workers = train("--mode grad_allreduce --amp bf16" + common, 2);
    ASSERT_EQ(workers.exit_code, 0) << workers.output;
    EXPECT_EQ(workers.workers.size(), 2u) << workers.output;
    expect_loss_falls(workers);
    test::expect_parameters_near(workers, reference.workers.at(0), m.tolerance);
  }
}

// --init-params starts every worker from the given files: a run of 0 steps
// saves exactly what it read, whatever the seed.
TEST(RealModelTrainer, InitParamsStartsFromTheGivenFiles) {
  const Training trained = train("--mode none --steps 1" + std::string(kBert));
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  test::TempDir dir("init_params");
  for (const auto& [name, value] : trained.workers.at(0)) {
    std::ofstream file(dir.path() / (name + ".npy"), std::ios::binary);
    file << tensor_to_npy(value);
  }
  const std::string from = " --init-params " + dir.path().string();
  std::string other_seed = kBert;
  other_seed.replace(other_seed.find("--seed 3"), 8, "--seed 11");
  const Training restarted = train("--mode none --steps 0" + other_seed + from);
  ASSERT_EQ(restarted.exit_code, 0) << restarted.output;
  test::expect_parameters_near(restarted, trained.workers.at(0), 0.0);

  // A missing or mis-shaped file is named, and nothing trains.
  const auto some = trained.workers.at(0).begin();
  std::filesystem::remove(dir.path() / (some->first + ".npy"));
  const Training missing = train("--mode none --steps 1" + std::string(kBert) + from);
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.output.find(some->first + ".npy is missing"), std::string::npos)
      << missing.output;
  {
    std::ofstream file(dir.path() / (some->first + ".npy"), std::ios::binary);
    file << tensor_to_npy(Tensor(DataType::FP32, {3}));
  }
  const Training misshaped = train("--mode none --steps 1" + std::string(kBert) + from);
  EXPECT_EQ(misshaped.exit_code, 1);
  EXPECT_NE(misshaped.output.find("holds FP32 [3], but parameter '" + some->first + "'"),
            std::string::npos)
      << misshaped.output;
}

TEST(RealModelTrainer, OptionsOfAnotherModelOrWithoutSupportAreUsageErrors) {
  struct Case {
    std::string args, message;
  };
  const std::vector<Case> cases = {
      {"--model resnet --init-loss-scaling 8", "--loss-scaling and its options need --amp"},
      {"--model bert --amp bf16 --incr-ratio 2", "the loss-scaling options need loss scaling"},
      {"--model bert --amp fp16 --loss-scaling sometimes", "--loss-scaling must be dynamic"},
      {"--model mlp --amp fp16 --loss-scaling static",
       "--loss-scaling and its options apply to --model resnet and bert"},
      {"--model bert --amp bf16 --loss-scale 8", "--loss-scale is the MLP's"},
      {"--model bert --dtype fp64", "--model bert trains in fp32 only"},
      {"--model bert --depth 50", "--depth applies to --model resnet, not --model bert"},
      {"--model resnet --attention flash",
       "--attention applies to --model bert, not --model resnet"},
      {"--model resnet --hidden 8", "--hidden applies to --model mlp, not --model resnet"},
      {"--model mlp --seq-len 8", "--seq-len applies to --model bert, not --model mlp"},
      {"--model bert --mode grad_allreduce --micro-batches 2",
       "--micro-batches is the one-worker reference: it needs --mode none"},
      {"--mode none --batch 6 --micro-batches 4", "does not split evenly into 4 micro-batches"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args);
    const Training t = train(c.args + " --steps 1");
    EXPECT_EQ(t.exit_code, 2) << t.output;
    EXPECT_NE(t.output.find(c.message), std::string::npos) << t.output;
    EXPECT_TRUE(t.workers.empty());
  }
}

}  // namespace
}  // namespace ctp
