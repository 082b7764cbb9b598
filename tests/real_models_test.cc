// ResNet and BERT as Paddle static programs (samples/real_models.h): Paddle's
// names and layouts, parameter counts as torchvision's resnet50 and
// transformers' BERT-large have them, schemas accept every op, and small
// configurations run forward on the CPU to a finite loss of the order of ln(classes)
// (the loss of an untrained classifier).
#include <cmath>
#include <map>

#include <gtest/gtest.h>

#include "executor/program_runner.h"
#include "ops/schema/shape_rules.h"
#include "program_ir/verify.h"
#include "samples/real_models.h"
#include "tests/kernels_test_util.h"

namespace ctp {
namespace {

std::map<std::string, int> op_counts(const Program& program) {
  std::map<std::string, int> counts;
  for (const Op& op : program.global_block().ops()) ++counts[op.type];
  return counts;
}

void expect_verified(const Program& program) {
  const VerifyResult result = verify(program);
  for (const Diagnostic& d : result.diagnostics) ADD_FAILURE() << d.message;
  EXPECT_TRUE(result.ops_without_schema.empty());
}

// An untrained classifier's mean cross entropy on random labels: finite, and
// of the order of ln(classes) (He-initialised layers and batch_norm keep the
// logits' scale near 1; a broken kernel gives NaN, 0 or a far larger loss).
void expect_untrained_loss(double loss, int64_t classes, const std::string& what) {
  const double uniform = std::log(static_cast<double>(classes));
  EXPECT_TRUE(std::isfinite(loss)) << what;
  EXPECT_GT(loss, 0.25 * uniform) << what;
  EXPECT_LT(loss, 3.0 * uniform) << what;
}

// One forward step on the CPU with synthetic inputs; returns the loss.
double forward_loss(const samples::ModelPrograms& model, int64_t batch) {
  ProgramRunOptions options;
  options.batch = batch;
  options.seed = 7;
  options.fetch = {model.loss};
  ProgramRunner runner(model.startup, model.main, options);
  runner.run_startup();
  const Fetched fetched = runner.run_step();
  return test::cpu_scalar(fetched.at(0).second);
}

TEST(RealModels, ResNet50HasTorchvisionsLayersUnderPaddlesNames) {
  const samples::ModelPrograms model = samples::build_resnet({});
  std::map<std::string, int> ops = op_counts(model.main);
  // 1 stem + 16 blocks x 3 + 4 projection shortcuts.
  EXPECT_EQ(ops["conv2d"], 53);
  EXPECT_EQ(ops["batch_norm"], 53);
  EXPECT_EQ(ops["pool2d"], 2);
  // torchvision's resnet50 has 161 parameter tensors: 53 convolutions, 53 x 2
  // batch-norm affine parameters, the classifier's weight and bias.
  EXPECT_EQ(model.parameters.size(), 161u);
  const Block& main = model.main.global_block();
  EXPECT_EQ(main.var("conv2d_0.w_0").shape, (Shape{64, 3, 7, 7}));
  EXPECT_TRUE(main.var("batch_norm_0.w_0").is_parameter);
  EXPECT_TRUE(main.var("batch_norm_0.w_1").persistable);   // moving mean: not trained
  EXPECT_FALSE(main.var("batch_norm_0.w_1").is_parameter);
  EXPECT_EQ(main.var("fc_0.w_0").shape, (Shape{2048, 1000}));
  EXPECT_EQ(main.var(model.logits).shape, (Shape{-1, 1000}));
  EXPECT_EQ(product(main.var(model.loss).shape), 1);  // mean: [] (Paddle 2.5+) or [1]
  expect_verified(model.main);
  expect_verified(model.startup);
}

TEST(RealModels, SmallResNetsRunForwardToAnUntrainedLoss) {
  for (int depth : {18, 50}) {
    samples::ResNetConfig config;
    config.depth = depth;
    config.width = 4;
    config.image_size = 32;
    config.classes = 10;
    const samples::ModelPrograms model = samples::build_resnet(config);
    EXPECT_EQ(model.main.global_block().var("pool2d_1.tmp_0").shape,
              (Shape{-1, depth == 18 ? 32 : 128, 1, 1}));
    expect_untrained_loss(forward_loss(model, 2), 10, "depth " + std::to_string(depth));
  }
}

TEST(RealModels, BertLargeHasTransformersParameterCount) {
  const samples::ModelPrograms model = samples::build_bert({});
  // BertModel(bert-large) has 391 parameter tensors: 3 embeddings + their
  // layer norm, 24 x 16 per layer, and its pooler (2), whose place the
  // token-classification head (2) takes here.
  EXPECT_EQ(model.parameters.size(), 391u);
  std::map<std::string, int> ops = op_counts(model.main);
  EXPECT_EQ(ops["layer_norm"], 1 + 24 * 2);
  EXPECT_EQ(ops["lookup_table_v2"], 3);
  EXPECT_EQ(ops["softmax"], 24);
  EXPECT_EQ(ops.count("dropout"), 0u);  // dropout off by default
  const Block& main = model.main.global_block();
  EXPECT_EQ(main.var("embedding_0.w_0").shape, (Shape{30522, 1024}));
  EXPECT_EQ(main.var("linear_4.w_0").shape, (Shape{1024, 4096}));  // layer 0's FFN in
  EXPECT_EQ(main.var(model.logits).shape, (Shape{-1, 512, 2}));
  expect_verified(model.main);
}

TEST(RealModels, SmallBertRunsForwardToAnUntrainedLoss) {
  samples::BertConfig config;
  config.layers = 2;
  config.hidden = 32;
  config.heads = 4;
  config.seq_len = 8;
  config.vocab = 50;
  config.max_position = 8;
  config.classes = 5;
  config.dropout = 0.1f;
  const samples::ModelPrograms model = samples::build_bert(config);
  EXPECT_EQ(op_counts(model.main)["dropout"], 1 + 2 * 3);
  expect_untrained_loss(forward_loss(model, 3), 5, "BERT");
}

TEST(RealModels, BadConfigurationsNameWhatIsWrong) {
  samples::ResNetConfig resnet;
  resnet.depth = 20;
  EXPECT_THROW(
      {
        try {
          samples::build_resnet(resnet);
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("depth 20"), std::string::npos) << e.what();
          throw;
        }
      },
      Error);
  samples::BertConfig bert;
  bert.heads = 3;
  EXPECT_THROW(samples::build_bert(bert), Error);
}

}  // namespace
}  // namespace ctp
