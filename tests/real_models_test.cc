// ResNet and BERT as Paddle static programs (samples/real_models.h): Paddle's
// names and layouts, parameter counts as torchvision's resnet50 and
// transformers' BERT-large have them, schemas accept every op, and small
// configurations run forward on the CPU to a finite loss of the order of ln(classes)
// (the loss of an untrained classifier).
#include <algorithm>
#include <cmath>
#include <map>

#include <gtest/gtest.h>

#include "executor/program_runner.h"
#include "ops/schema/shape_rules.h"
#include "program_ir/program_io.h"
#include "program_ir/verify.h"
#include "samples/real_models.h"
#include "tests/kernels_test_util.h"
#include "tests/tiny_bert.h"
#include "transpilers/append_backward.h"

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
  samples::BertConfig config = test::tiny_bert_config();
  config.dropout = 0.1f;
  const samples::ModelPrograms model = samples::build_bert(config);
  EXPECT_EQ(op_counts(model.main)["dropout"], 1 + 2 * 3);
  expect_untrained_loss(forward_loss(model, 3), 5, "BERT");
}

TEST(RealModels, BertLargeWithFlashAttentionHasOneFlashAttnPerLayer) {
  samples::BertConfig config;
  config.attention = samples::BertAttention::Flash;
  const samples::ModelPrograms model = samples::build_bert(config);
  EXPECT_EQ(model.parameters.size(), 391u);
  std::map<std::string, int> ops = op_counts(model.main);
  EXPECT_EQ(ops["flash_attn"], 24);
  EXPECT_EQ(ops.count("softmax"), 0u);
  EXPECT_EQ(ops.count("transpose2"), 0u);  // [batch, seq, heads, head_dim] needs none
  EXPECT_EQ(ops["reshape2"], 24 * 4);      // q, k, v into heads, the context back
  const Block& main = model.main.global_block();
  const Op& flash = *std::find_if(main.ops().begin(), main.ops().end(),
                                  [](const Op& op) { return op.type == "flash_attn"; });
  EXPECT_EQ(main.var(flash.output("out")->front()).shape, (Shape{-1, 512, 16, 64}));
  EXPECT_EQ(main.var(flash.output("softmax_lse")->front()).dtype, DataType::FP32);
  expect_verified(model.main);
  // Saved as a Paddle file, it reads back to the same bytes.
  const std::string bytes = serialize_program(model.main, ProgramFormat::Proto);
  EXPECT_EQ(serialize_program(parse_program(bytes, "main.pb"), ProgramFormat::Proto), bytes);
}

// A small BERT built both ways from one seed: the same parameters, and one
// training step's loss and every parameter's gradient agree within FP32
// rounding: 1e-5 relative to the element, or to a thousandth of the largest
// gradient element where the element is smaller (the key bias's gradient is
// 0 but for rounding: softmax ignores a constant added to every key). The
// fused kernel sums the scores and products in another order than the chain.
TEST(RealModels, FlashAndOpsAttentionGiveTheSameLossAndGradients) {
  samples::BertConfig config = test::tiny_bert_config();
  std::map<std::string, Tensor> results[2];
  for (const samples::BertAttention attention :
       {samples::BertAttention::Ops, samples::BertAttention::Flash}) {
    config.attention = attention;
    samples::ModelPrograms model = samples::build_bert(config);
    const BackwardResult backward =
        append_backward(model.main, BackwardOptions{.loss = model.loss});
    ProgramRunOptions options;
    options.batch = 3;
    options.seed = 7;
    options.fetch = {model.loss};
    for (const ParamGrad& pg : backward.params_grads) options.fetch.push_back(pg.grad);
    ProgramRunner runner(model.startup, model.main, options);
    runner.run_startup();
    for (auto& [name, value] : runner.run_step())
      results[attention == samples::BertAttention::Flash].emplace(name, std::move(value));
  }
  ASSERT_EQ(results[0].size(), results[1].size());
  ASSERT_GT(results[0].size(), 20u);
  double largest = 0;
  for (const auto& [name, expected] : results[0])
    for (int64_t i = 0; i < expected.numel(); ++i)
      largest = std::max(largest, std::abs(test::element(expected, i)));
  for (const auto& [name, expected] : results[0]) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(results[1].contains(name));
    const Tensor& actual = results[1].at(name);
    ASSERT_EQ(actual.shape(), expected.shape());
    for (int64_t i = 0; i < expected.numel(); ++i) {
      const double e = test::element(expected, i);
      EXPECT_NEAR(test::element(actual, i), e, 1e-5 * std::max(std::abs(e), 1e-3 * largest))
          << i;
    }
  }
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
  samples::BertConfig flash;
  flash.attention = samples::BertAttention::Flash;
  flash.dropout = 0.1f;
  try {
    samples::build_bert(flash);
    ADD_FAILURE() << "flash attention with dropout was built";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "BERT with flash attention needs dropout 0 (flash_attn implements no dropout), "
              "not 0.1; use the ops attention for dropout");
  }
}

}  // namespace
}  // namespace ctp
