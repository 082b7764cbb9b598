// The backward pass against Paddle itself: a training program Paddle saved
// (PaddleFL's trainer, ../shared/realworld; skipped visibly when absent) is
// cut back to its forward ops, and append_backward + the sgd optimizer must
// write the backward and the updates Paddle wrote: the same ops in the same
// order, with the same slots and vars (X@GRAD=[] included), roles and
// op_role_var.
#include <gtest/gtest.h>

#include <filesystem>

#include "program_ir/program_io.h"
#include "transpilers/append_backward.h"
#include "transpilers/append_optimizer.h"

namespace ctp {
namespace {

std::string describe(const Op& op) {
  std::string s = op.type;
  for (const auto* side : {&op.inputs(), &op.outputs()}) {
    std::vector<Slot> slots = *side;
    std::sort(slots.begin(), slots.end(),
              [](const Slot& a, const Slot& b) { return a.name < b.name; });
    s += " |";
    for (const Slot& slot : slots) {
      s += " " + slot.name + "=[";
      for (const std::string& a : slot.args) s += a + ",";
      s += "]";
    }
  }
  s += " | role " + std::to_string(get_op_role(op).value_or(-1));
  if (const Attribute* rv = op.attr(kOpRoleVarAttr))
    for (const std::string& v : rv->get<std::vector<std::string>>()) s += " " + v;
  return s;
}

bool is_training_op(const Op& op) {
  const int64_t role = get_op_role(op).value_or(0);
  return (role & (op_role::kBackward | op_role::kOptimize)) != 0;
}

TEST(AppendBackwardPaddle, PaddleFlTrainerBackwardIsWhatPaddleWrote) {
  const std::filesystem::path file = std::filesystem::path(CTP_SOURCE_DIR) / ".." / "shared" /
                                     "realworld" / "programs" /
                                     "amarnathkurup_flsmoking_trainer0_main.program";
  if (!std::filesystem::exists(file)) GTEST_SKIP() << "no " << file;
  const Program saved = load_program_file(file.string());

  // The forward program: the saved one without its backward and update ops
  // and without the vars they declared.
  Program forward = saved;
  Block& block = forward.global_block();
  std::erase_if(block.ops(), is_training_op);
  std::vector<std::string> grads;
  for (const Var& var : block.vars())
    if (var.name.find("@GRAD") != std::string::npos) grads.push_back(var.name);
  for (const std::string& name : grads) block.remove_var(name);

  Program startup = Program::with_global_block();
  append_backward(forward, {.loss = "reduce_mean_0.tmp_0"});
  OptimizerOptions sgd;
  sgd.type = OptimizerType::kSgd;
  append_optimizer(startup, forward, sgd);

  std::vector<std::string> want, got;
  for (const Op& op : saved.global_block().ops())
    if (is_training_op(op)) want.push_back(describe(op));
  for (const Op& op : forward.global_block().ops())
    if (is_training_op(op)) got.push_back(describe(op));
  // The learning rate is the saved program's var; ctp declares its own.
  for (std::string& line : got) {
    const std::size_t at = line.find("learning_rate_1");
    if (at != std::string::npos) line.replace(at, 15, "learning_rate_0");
  }
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i], want[i]) << "op " << i;
  for (const std::string& name : grads) {
    ASSERT_TRUE(forward.global_block().has_var(name)) << name;
    EXPECT_EQ(forward.global_block().var(name).shape, saved.global_block().var(name).shape)
        << name;
  }
}

}  // namespace
}  // namespace ctp
