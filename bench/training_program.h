// A Paddle-like static training program of any size, for the benchmarks
// that time whole `ctp transpile` processes: fully connected layers with
// their backward and Adam updates, each op carrying the attributes Paddle
// 2.x writes on every op (op_role, op_role_var, op_namescope, op_callstack,
// op_device, with_quant_attr) besides its own, so that the bytes per op are
// those of a saved Paddle program (about 560 on average), not of a bare
// skeleton. Paddle's explicit defaults are written too (persistable: false,
// stop_gradient: false on its vars).
#pragma once
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "program_ir/op_role.h"
#include "program_ir/program.h"

namespace ctp::bench {

struct TrainingPrograms {
  Program startup;
  Program main;
};

namespace training_detail {

inline Var make_var(std::string name, std::vector<int64_t> shape, bool persistable,
                    bool parameter = false) {
  Var v;
  v.name = std::move(name);
  v.shape = std::move(shape);
  v.lod_level = 0;
  v.persistable = persistable;
  v.is_parameter = parameter;
  v.stop_gradient = false;
  v.explicit_defaults.persistable = !persistable;
  v.explicit_defaults.stop_gradient = true;
  return v;
}

// The call stack Paddle records for each op (two frames of the user's model
// code and the framework's append_op), varying with the layer.
inline std::vector<std::string> callstack(const std::string& where) {
  return {"  File \"paddle/fluid/framework.py\", "
          "line 3621, in append_op\n    attrs=kwargs.get(\"attrs\", None))\n",
          "  File \"train.py\", line 48, in " + where + "\n    out = fluid.layers.fc(h, 256)\n"};
}

class Maker {
 public:
  explicit Maker(Block& block) : block_(block) {}

  Op& op(std::string type, std::vector<Slot> in, std::vector<Slot> out, int32_t role,
         const std::string& scope, std::vector<std::string> role_var = {}) {
    Op op(std::move(type), std::move(in), std::move(out));
    op.set_attr(kOpRoleAttr, Attribute(role));
    op.set_attr(kOpRoleVarAttr, Attribute(std::move(role_var)));
    op.set_attr("op_namescope", Attribute(scope));
    op.set_attr("op_callstack", Attribute(callstack(scope)));
    op.set_attr("op_device", Attribute(std::string()));
    op.set_attr("with_quant_attr", Attribute(false));
    return *block_.append_op(std::move(op));
  }

 private:
  Block& block_;
};

}  // namespace training_detail

// About `target_ops` ops in the main program (8 per layer plus 3); the
// startup program initializes every parameter and optimizer state.
inline TrainingPrograms make_training_programs(std::size_t target_ops) {
  using namespace training_detail;
  const std::size_t layers = target_ops > 11 ? (target_ops - 3) / 8 : 1;
  TrainingPrograms p{Program::with_global_block(), Program::with_global_block()};
  Block& s = p.startup.global_block();
  Block& m = p.main.global_block();
  Maker main_ops(m), startup_ops(s);
  const std::vector<int64_t> hidden{-1, 256};
  m.add_var(make_var("x", hidden, false));
  for (Block* b : {&m, &s}) b->add_var(make_var("learning_rate_0", {1}, true));
  startup_ops.op("fill_constant", {}, {{"Out", {"learning_rate_0"}}}, op_role::kForward, "/")
      .set_attr("value", Attribute(0.001f));

  auto name = [](const char* stem, std::size_t i, const char* suffix) {
    return std::string(stem) + std::to_string(i) + suffix;
  };
  std::vector<std::string> params;
  std::string in = "x";
  for (std::size_t i = 0; i < layers; ++i) {
    const std::string scope = "/fc_" + std::to_string(i) + "/";
    const std::string w = name("fc_", i, ".w_0"), b = name("fc_", i, ".b_0");
    for (const std::string& prm : {w, b}) {
      const std::vector<int64_t> shape =
          prm == w ? std::vector<int64_t>{256, 256} : std::vector<int64_t>{256};
      for (Block* blk : {&m, &s}) {
        blk->add_var(make_var(prm, shape, true, true));
        for (const char* moment : {"_moment1_0", "_moment2_0"})
          blk->add_var(make_var(prm + moment, shape, true));
        for (const char* pow : {"_beta1_pow_acc_0", "_beta2_pow_acc_0"})
          blk->add_var(make_var(prm + pow, {1}, true));
      }
      m.add_var(make_var(prm + "@GRAD", shape, false));
      startup_ops.op("uniform_random", {}, {{"Out", {prm}}}, op_role::kForward, scope)
          .set_attr("seed", Attribute(int32_t{0}));
      params.push_back(prm);
    }
    const std::string mo = name("fc_", i, ".tmp_0"), ao = name("fc_", i, ".tmp_1"),
                      ro = name("relu_", i, ".tmp_0");
    for (const std::string& t : {mo, ao, ro}) {
      m.add_var(make_var(t, hidden, false));
      m.add_var(make_var(t + "@GRAD", hidden, false));
    }
    main_ops.op("mul", {{"X", {in}}, {"Y", {w}}}, {{"Out", {mo}}}, op_role::kForward, scope)
        .set_attr("x_num_col_dims", Attribute(int32_t{1}));
    main_ops.op("elementwise_add", {{"X", {mo}}, {"Y", {b}}}, {{"Out", {ao}}}, op_role::kForward,
                scope)
        .set_attr("axis", Attribute(int32_t{1}));
    main_ops.op("relu", {{"X", {ao}}}, {{"Out", {ro}}}, op_role::kForward, scope)
        .set_attr("use_cudnn", Attribute(false));
    in = ro;
  }
  m.add_var(make_var("loss", {1}, false));
  m.add_var(make_var("loss@GRAD", {1}, false));
  main_ops.op("mean", {{"X", {in}}}, {{"Out", {"loss"}}}, op_role::kForward | op_role::kLoss, "/");
  main_ops.op("fill_constant", {}, {{"Out", {"loss@GRAD"}}}, op_role::kBackward | op_role::kLoss,
              "/")
      .set_attr("value", Attribute(1.0f));
  main_ops.op("mean_grad", {{"X", {in}}, {"Out@GRAD", {"loss@GRAD"}}},
              {{"X@GRAD", {in + "@GRAD"}}}, op_role::kBackward, "/");
  for (std::size_t i = layers; i-- > 0;) {
    const std::string scope = "/fc_" + std::to_string(i) + "/";
    const std::string w = name("fc_", i, ".w_0"), b = name("fc_", i, ".b_0");
    const std::string mo = name("fc_", i, ".tmp_0"), ao = name("fc_", i, ".tmp_1"),
                      ro = name("relu_", i, ".tmp_0");
    const std::string x = i == 0 ? "x" : name("relu_", i - 1, ".tmp_0");
    main_ops.op("relu_grad", {{"Out", {ro}}, {"Out@GRAD", {ro + "@GRAD"}}},
                {{"X@GRAD", {ao + "@GRAD"}}}, op_role::kBackward, scope);
    main_ops.op("elementwise_add_grad", {{"X", {mo}}, {"Y", {b}}, {"Out@GRAD", {ao + "@GRAD"}}},
                {{"X@GRAD", {mo + "@GRAD"}}, {"Y@GRAD", {b + "@GRAD"}}}, op_role::kBackward,
                scope, {b, b + "@GRAD"});
    // The data input x has no gradient.
    std::vector<Slot> grads{{"Y@GRAD", {w + "@GRAD"}}};
    if (i > 0) grads.insert(grads.begin(), Slot{"X@GRAD", {x + "@GRAD"}});
    main_ops.op("mul_grad", {{"X", {x}}, {"Y", {w}}, {"Out@GRAD", {mo + "@GRAD"}}},
                std::move(grads), op_role::kBackward, scope, {w, w + "@GRAD"});
  }
  for (const std::string& prm : params) {
    Op& adam = main_ops.op(
        "adam",
        {{"Param", {prm}}, {"Grad", {prm + "@GRAD"}}, {"LearningRate", {"learning_rate_0"}},
         {"Moment1", {prm + "_moment1_0"}}, {"Moment2", {prm + "_moment2_0"}},
         {"Beta1Pow", {prm + "_beta1_pow_acc_0"}}, {"Beta2Pow", {prm + "_beta2_pow_acc_0"}}},
        {{"ParamOut", {prm}}, {"Moment1Out", {prm + "_moment1_0"}},
         {"Moment2Out", {prm + "_moment2_0"}}, {"Beta1PowOut", {prm + "_beta1_pow_acc_0"}},
         {"Beta2PowOut", {prm + "_beta2_pow_acc_0"}}},
        op_role::kOptimize, "/optimizer/", {prm, prm + "@GRAD"});
    adam.set_attr("beta1", Attribute(0.9f));
    adam.set_attr("beta2", Attribute(0.999f));
    adam.set_attr("epsilon", Attribute(1e-8f));
    adam.set_attr("lazy_mode", Attribute(false));
    adam.set_attr("min_row_size_to_use_multithread", Attribute(int64_t{1000}));
  }
  return p;
}

}  // namespace ctp::bench
