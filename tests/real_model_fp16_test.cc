// --amp fp16 on the real models (--model resnet|bert): the AMP rewrite with
// Paddle's dynamic loss scaling (transpilers/loss_scaling.h). Tiny
// configurations train on 2 Gloo workers, the loss falls and both workers
// end identical (the trainer exits 1 otherwise) and near the one-worker
// reference; a huge initial scale makes the first steps overflow: such a
// step changes no parameter, the scale drops until the gradients are finite,
// and training goes on with no NaN or Inf in the parameters, in
// grad_allreduce and in local_sgd (where the workers all-reduce the overflow
// flag, so both keep one scale).
#include <regex>

#include "tests/sample_trainer_util.h"

namespace ctp {
namespace {

using test::Training;
using test::train;

const char* const kResNet = test::kTinyResNet;
const char* const kBert = test::kTinyBert;
const char* const kTraining = " --amp fp16 --optimizer momentum --lr 0.05";

void expect_loss_falls(const Training& t) {
  ASSERT_GE(t.losses.size(), 2u) << t.output;
  EXPECT_LT(t.losses.back(), t.losses.front()) << t.output;
}

void expect_finite_parameters(const Training& t) {
  ASSERT_FALSE(t.workers.empty()) << t.output;
  for (const test::Parameters& worker : t.workers)
    for (const auto& [name, value] : worker)
      for (int64_t i = 0; i < value.numel(); ++i)
        ASSERT_TRUE(std::isfinite(test::element(value, i))) << name << " element " << i;
}

// Every "rank R: loss scaling S after the last step" line's S, by rank order.
std::vector<double> final_scales(const Training& t) {
  std::vector<double> scales;
  const std::regex line(R"(rank \d+: loss scaling ([0-9.e+-]+) after the last step)");
  for (auto it = std::sregex_iterator(t.output.begin(), t.output.end(), line);
       it != std::sregex_iterator(); ++it)
    scales.push_back(std::stod((*it)[1].str()));
  return scales;
}

// Against the one-worker reference the runs start from a scale of 1024, not
// Paddle's 32768: the workers scale the loss's gradient by 1/2 before the
// backward (grad_allreduce's mean) where the reference averages after it,
// so its FP16 values are twice theirs, and at 32768 this tiny ResNet's
// overflow in the reference and not in the workers (seen: every reference
// step skipped), which no tolerance covers. The default is the next test's.
TEST(RealModelFp16, TwoWorkersTrainIdenticallyAndMatchTheReference) {
  if (!test::have_gloo()) GTEST_SKIP() << "built without Gloo";
  struct Model {
    std::string args, reference_args;
    double tolerance;
  };
  // ResNet's workers compute the micro-batch reference's sums in its order
  // (equal bits seen); BERT's whole-batch matmuls add up in another order
  // than a shard's, and a last-bit FP32 difference can round an FP16 cast
  // the other way (1.5e-3 seen after 4 steps; 1e-2 allowed); the same with
  // its attention as flash_attn (white-listed: FP16 too).
  for (const Model& m : {Model{kResNet, " --micro-batches 2", 1e-5}, Model{kBert, "", 1e-2},
                         Model{kBert + std::string(" --attention flash"), "", 1e-2}}) {
    SCOPED_TRACE(m.args);
    const std::string common = m.args + kTraining + " --steps 4 --init-loss-scaling 1024";
    const Training reference = train("--mode none" + m.reference_args + common);
    ASSERT_EQ(reference.exit_code, 0) << reference.output;
    EXPECT_NE(reference.output.find("FP16 compute where the AMP rewrite's lists say"),
              std::string::npos) << reference.output;
    const Training compared = train("--mode grad_allreduce" + common, 2);
    ASSERT_EQ(compared.exit_code, 0) << compared.output;  // 1 when the workers differ
    ASSERT_EQ(compared.workers.size(), 2u) << compared.output;
    expect_loss_falls(compared);
    EXPECT_EQ(final_scales(compared), (std::vector<double>{1024, 1024})) << compared.output;
    test::expect_parameters_near(compared, reference.workers.at(0), m.tolerance);
  }
}

// By default the scale starts at 32768, where BERT's gradients fit: it stays.
TEST(RealModelFp16, DefaultScaleIsPaddles) {
  if (!test::have_gloo()) GTEST_SKIP() << "built without Gloo";
  const Training t = train("--mode grad_allreduce --steps 2" + std::string(kBert) + kTraining, 2);
  ASSERT_EQ(t.exit_code, 0) << t.output;
  EXPECT_NE(t.output.find("dynamic loss scaling from 32768 (x2 after 1000 finite steps, x0.8 "
                          "after 2 overflowing)"),
            std::string::npos) << t.output;
  EXPECT_EQ(final_scales(t), (std::vector<double>{32768, 32768})) << t.output;
}

// 2^40 times BERT's loss overflows FP16 on the way back; each overflowing
// step divides the scale by 10^4 (--decr-every-n-nan-or-inf 1): 2^40, 1.1e8,
// then 1.1e4, where the gradients fit (2 skipped steps, then 4 that train).
TEST(RealModelFp16, OverflowingStepsAreSkippedAndTheScaleDrops) {
  const std::string huge =
      std::string(kBert) + kTraining +
      " --init-loss-scaling 1099511627776 --decr-every-n-nan-or-inf 1 --decr-ratio 0.0001";
  // One step: it overflows, so the parameters are the initial ones.
  const Training initial = train("--mode none --steps 0" + huge);
  const Training one = train("--mode none --steps 1" + huge);
  ASSERT_EQ(one.exit_code, 0) << one.output;
  test::expect_parameters_near(one, initial.workers.at(0), 0.0);
  const std::vector<double> scales = final_scales(one);
  ASSERT_EQ(scales.size(), 1u) << one.output;
  EXPECT_NEAR(scales[0], 1099511627776.0 * 0.0001, 1e3) << one.output;
  if (!test::have_gloo()) GTEST_SKIP() << "built without Gloo";
  for (const char* mode : {"--mode grad_allreduce", "--mode local_sgd"}) {
    SCOPED_TRACE(mode);
    const Training t = train(mode + huge + " --steps 6", 2);
    ASSERT_EQ(t.exit_code, 0) << t.output;
    expect_finite_parameters(t);
    const std::vector<double> scales = final_scales(t);
    ASSERT_EQ(scales.size(), 2u) << t.output;
    EXPECT_EQ(scales[0], scales[1]) << t.output;  // the workers agree
    EXPECT_LT(scales[0], 1e6) << t.output;
    for (double loss : t.losses) EXPECT_TRUE(std::isfinite(loss)) << t.output;
    EXPECT_LT(t.losses.back(), t.losses.front()) << t.output;
  }
}

}  // namespace
}  // namespace ctp
