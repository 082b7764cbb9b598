// An MLP classifier (mul, elementwise_add, relu, softmax_with_cross_entropy,
// mean, their grads and an optimizer) trained in one process: the loss must
// fall clearly within 50 steps with each optimizer.
#include "program_ir/op_role.h"
#include "samples/cluster_data.h"
#include "samples/mlp_model.h"
#include "tests/kernels_test_util.h"

namespace ctp {
namespace {

using test::cpu_scalar;
using test::element;

struct TrainResult {
  std::vector<double> losses;
  double accuracy = 0;
};

TrainResult train(samples::OptimizerKind optimizer, float learning_rate, DataType dtype) {
  samples::MlpConfig config;
  config.input_dim = 4;
  config.hidden = {16};
  config.classes = 3;
  config.dtype = dtype;
  config.optimizer = optimizer;
  config.learning_rate = learning_rate;
  config.init_seed = 5;
  const samples::MlpPrograms programs = samples::build_mlp(config);
  const samples::ClusterData data = samples::make_clusters(600, 4, 3, 11, 2.0, 1.0);

  Scope scope;
  Executor(programs.startup, RunServices{}).run(scope);
  Executor executor(programs.main, RunServices{});
  TrainResult result;
  for (int step = 0; step < 50; ++step) {
    samples::Batch batch = samples::shard_batch(data, step, 32, 0, 1, dtype);
    scope.var(programs.input) = batch.features;
    scope.var(programs.label) = batch.labels;
    executor.run(scope);
    result.losses.push_back(cpu_scalar(scope.get(programs.loss)));
  }
  Executor eval(programs.eval, RunServices{});
  samples::Batch all = samples::rows(data, 0, data.size(), dtype);
  scope.var(programs.input) = all.features;
  scope.var(programs.label) = all.labels;
  eval.run(scope);
  const Tensor& p = scope.get(programs.probabilities);
  int64_t correct = 0;
  for (int64_t i = 0; i < data.size(); ++i) {
    int64_t best = 0;
    for (int64_t c = 1; c < 3; ++c)
      if (element(p, i * 3 + c) > element(p, i * 3 + best)) best = c;
    correct += best == data.labels[static_cast<std::size_t>(i)];
  }
  result.accuracy = static_cast<double>(correct) / static_cast<double>(data.size());
  return result;
}

double average(const std::vector<double>& v, std::size_t begin, std::size_t end) {
  double s = 0;
  for (std::size_t i = begin; i < end; ++i) s += v[i];
  return s / static_cast<double>(end - begin);
}

void expect_learns(const TrainResult& r) {
  ASSERT_EQ(r.losses.size(), 50u);
  const double first = average(r.losses, 0, 5), last = average(r.losses, 45, 50);
  EXPECT_LT(last, 0.5 * first) << "loss went from " << first << " to " << last;
  EXPECT_GT(r.accuracy, 0.8);  // chance is 1/3
}

TEST(ExecutorMlp, SgdLossFalls) { expect_learns(train(samples::OptimizerKind::SGD, 0.1f, DataType::FP32)); }
TEST(ExecutorMlp, MomentumLossFalls) {
  expect_learns(train(samples::OptimizerKind::Momentum, 0.05f, DataType::FP32));
}
TEST(ExecutorMlp, AdamLossFalls) {
  expect_learns(train(samples::OptimizerKind::Adam, 0.01f, DataType::FP32));
}
TEST(ExecutorMlp, Fp64TrainsToo) { expect_learns(train(samples::OptimizerKind::SGD, 0.1f, DataType::FP64)); }

TEST(ExecutorMlp, ProgramsCarryRolesAndRoleVars) {
  const samples::MlpPrograms p = samples::build_mlp({});
  int loss_ops = 0, loss_grad_ops = 0, optimizer_ops = 0;
  std::vector<std::string> grads_with_role_var;
  for (const Op& op : p.main.global_block().ops()) {
    const int64_t role = get_op_role(op).value_or(-1);
    loss_ops += role == (op_role::kForward | op_role::kLoss);
    loss_grad_ops += role == (op_role::kBackward | op_role::kLoss);
    if (is_optimizer_op(op)) {
      ++optimizer_ops;
      EXPECT_EQ(param_grad_pairs(op).size(), 1u);
    }
    if (is_backward_op(op))
      for (const ParamGrad& pg : param_grad_pairs(op)) grads_with_role_var.push_back(pg.grad);
  }
  EXPECT_EQ(loss_ops, 1);
  EXPECT_EQ(loss_grad_ops, 1);
  EXPECT_EQ(optimizer_ops, 4);
  EXPECT_EQ(grads_with_role_var, (std::vector<std::string>{"fc_1.b_0@GRAD", "fc_1.w_0@GRAD",
                                                          "fc_0.b_0@GRAD", "fc_0.w_0@GRAD"}));
  EXPECT_EQ(p.parameters, (std::vector<std::string>{"fc_0.w_0", "fc_0.b_0", "fc_1.w_0", "fc_1.b_0"}));
  for (const std::string& param : p.parameters) {
    EXPECT_TRUE(p.startup.global_block().var(param).persistable);
    EXPECT_TRUE(p.main.global_block().var(param).is_parameter);
  }
}

}  // namespace
}  // namespace ctp
