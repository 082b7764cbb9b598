// Small Paddle-like training programs for the transpiler unit tests, and a
// compact one-line rendering of ops to compare whole op sequences.
#pragma once
#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "program_ir/builder.h"
#include "program_ir/error.h"
#include "transpilers/transpile.h"

namespace ctp::testing {

inline std::string brief_value(const Attribute& a) {
  auto quote = [](const std::string& s) { return "\"" + s + "\""; };
  auto fmt_float = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", v);
    return std::string(buf);
  };
  switch (a.type()) {
    case AttrType::INT: return std::to_string(a.get<int32_t>());
    case AttrType::LONG: return std::to_string(a.get<int64_t>()) + "L";
    case AttrType::FLOAT: return fmt_float(a.get<float>()) + "f";
    case AttrType::FLOAT64: return fmt_float(a.get<double>());
    case AttrType::BOOLEAN: return a.get<bool>() ? "true" : "false";
    case AttrType::STRING: return quote(a.get<std::string>());
    case AttrType::STRINGS: {
      std::string s = "[";
      for (const auto& v : a.get<std::vector<std::string>>())
        s += (s.size() > 1 ? ", " : "") + quote(v);
      return s + "]";
    }
    case AttrType::INTS: {
      std::string s = "[";
      for (int32_t v : a.get<std::vector<int32_t>>())
        s += (s.size() > 1 ? ", " : "") + std::to_string(v);
      return s + "]";
    }
    default: return "<" + std::string(to_string(a.type())) + ">";
  }
}

// "type In=[a, b] -> Out=[c] {name=value, ...}" with attributes sorted by name
// and op_role_var left out (it is copied from the input and never inserted).
inline std::string brief(const Op& op) {
  auto slots = [](const std::vector<Slot>& ss) {
    if (ss.empty()) return std::string("()");
    std::string s;
    for (const Slot& slot : ss) {
      if (!s.empty()) s += ", ";
      s += slot.name + "=[";
      for (std::size_t i = 0; i < slot.args.size(); ++i) s += (i ? ", " : "") + slot.args[i];
      s += "]";
    }
    return s;
  };
  std::vector<NamedAttribute> attrs;
  for (const NamedAttribute& a : op.attrs())
    if (a.name != kOpRoleVarAttr) attrs.push_back(a);
  std::sort(attrs.begin(), attrs.end(),
            [](const NamedAttribute& x, const NamedAttribute& y) { return x.name < y.name; });
  std::string s = op.type + " " + slots(op.inputs()) + " -> " + slots(op.outputs()) + " {";
  for (std::size_t i = 0; i < attrs.size(); ++i)
    s += (i ? ", " : "") + attrs[i].name + "=" + brief_value(attrs[i].value);
  return s + "}";
}

// brief() of the ops the collective rewrites insert in place on `v`.
inline std::string brief_sync_calc(const std::string& v) {
  return "c_sync_calc_stream X=[" + v + "] -> Out=[" + v + "] {op_role=1}";
}
inline std::string brief_allreduce(const std::string& v, int ring) {
  return "c_allreduce_sum X=[" + v + "] -> Out=[" + v + "] {op_role=1, ring_id=" +
         std::to_string(ring) + "}";
}
inline std::string brief_sync_comm(const std::string& v, int ring, int role = 1) {
  return "c_sync_comm_stream X=[" + v + "] -> Out=[" + v + "] {op_role=" + std::to_string(role) +
         ", ring_id=" + std::to_string(ring) + "}";
}

inline std::vector<std::string> brief_ops(const Block& block) {
  std::vector<std::string> lines;
  for (const Op& op : block.ops()) lines.push_back(brief(op));
  return lines;
}

inline std::vector<std::string> op_types(const Block& block) {
  std::vector<std::string> types;
  for (const Op& op : block.ops()) types.push_back(op.type);
  return types;
}

enum class Optimizer { kSgd, kMomentum, kAdam };

struct ModelSpec {
  int layers = 2;  // fc layers: weight fc_<i>.w_0 and bias fc_<i>.b_0 each
  Optimizer optimizer = Optimizer::kSgd;
  DataType grad_dtype = DataType::FP32;
  std::vector<std::string> distributed;  // params marked is_distributed
};

inline std::string weight(int i) { return "fc_" + std::to_string(i) + ".w_0"; }
inline std::string bias(int i) { return "fc_" + std::to_string(i) + ".b_0"; }
inline std::string grad_of(const std::string& v) { return v + "@GRAD"; }

inline std::vector<std::string> param_names(const ModelSpec& spec) {
  std::vector<std::string> names;
  for (int i = 0; i < spec.layers; ++i) {
    names.push_back(weight(i));
    names.push_back(bias(i));
  }
  return names;
}

inline bool is_distributed(const ModelSpec& spec, const std::string& p) {
  return std::find(spec.distributed.begin(), spec.distributed.end(), p) != spec.distributed.end();
}

inline std::vector<int64_t> param_shape(const std::string& p) {
  return p.find(".w_") != std::string::npos ? std::vector<int64_t>{16, 16}
                                            : std::vector<int64_t>{16};
}

inline std::vector<std::string> optimizer_state(const ModelSpec& spec, const std::string& p) {
  switch (spec.optimizer) {
    case Optimizer::kSgd: return {};
    case Optimizer::kMomentum: return {p + "_velocity_0"};
    case Optimizer::kAdam:
      return {p + "_moment1_0", p + "_moment2_0", p + "_beta1_pow_acc_0", p + "_beta2_pow_acc_0"};
  }
  return {};
}

// Startup: one initializer op per parameter (and optimizer state).
inline Program build_startup(const ModelSpec& spec) {
  ProgramBuilder pb;
  pb.persistable("learning_rate_0", {1});
  pb.op("fill_constant").out("Out", "learning_rate_0").attr("value", 0.01f).role(op_role::kForward);
  for (const std::string& p : param_names(spec)) {
    pb.param(p, param_shape(p), spec.grad_dtype, is_distributed(spec, p));
    pb.op("uniform_random").out("Out", p).attr("seed", 0).role(op_role::kForward);
    for (const std::string& s : optimizer_state(spec, p)) {
      pb.persistable(s, param_shape(p), spec.grad_dtype);
      pb.op("fill_constant").out("Out", s).attr("value", 0.0f).role(op_role::kForward);
    }
  }
  return pb.build();
}

inline Program build_main(const ModelSpec& spec) {
  ProgramBuilder pb;
  const DataType dt = spec.grad_dtype;
  pb.data("x", {-1, 16}, dt);
  pb.persistable("learning_rate_0", {1});
  for (const std::string& p : param_names(spec)) {
    pb.param(p, param_shape(p), dt, is_distributed(spec, p));
    pb.tmp(grad_of(p), param_shape(p), dt);
    for (const std::string& s : optimizer_state(spec, p)) pb.persistable(s, param_shape(p), dt);
  }
  std::string in = "x";
  for (int i = 0; i < spec.layers; ++i) {
    const std::string mul_out = "fc_" + std::to_string(i) + ".tmp_0";
    const std::string add_out = "fc_" + std::to_string(i) + ".tmp_1";
    pb.tmp(mul_out, {-1, 16}, dt);
    pb.tmp(add_out, {-1, 16}, dt);
    pb.tmp(grad_of(mul_out), {-1, 16}, dt);
    pb.tmp(grad_of(add_out), {-1, 16}, dt);
    pb.op("mul").in("X", in).in("Y", weight(i)).out("Out", mul_out).role(op_role::kForward);
    pb.op("elementwise_add").in("X", mul_out).in("Y", bias(i)).out("Out", add_out)
        .role(op_role::kForward);
    in = add_out;
  }
  pb.tmp("loss", {1}, dt);
  pb.tmp("loss@GRAD", {1}, dt);
  pb.op("mean").in("X", in).out("Out", "loss").role(op_role::kForward | op_role::kLoss);
  pb.op("fill_constant").out("Out", "loss@GRAD").attr("value", 1.0f)
      .role(op_role::kBackward | op_role::kLoss);
  pb.op("mean_grad").in("X", in).in("Out@GRAD", "loss@GRAD").out("X@GRAD", grad_of(in))
      .role(op_role::kBackward);
  for (int i = spec.layers - 1; i >= 0; --i) {
    const std::string mul_out = "fc_" + std::to_string(i) + ".tmp_0";
    const std::string add_out = "fc_" + std::to_string(i) + ".tmp_1";
    const std::string x = i == 0 ? "x" : "fc_" + std::to_string(i - 1) + ".tmp_1";
    pb.op("elementwise_add_grad").in("Out@GRAD", grad_of(add_out))
        .out("X@GRAD", grad_of(mul_out)).out("Y@GRAD", grad_of(bias(i)))
        .role(op_role::kBackward).role_var({bias(i), grad_of(bias(i))});
    auto mul_grad = pb.op("mul_grad").in("Out@GRAD", grad_of(mul_out)).in("X", x)
                        .in("Y", weight(i));
    if (i > 0) mul_grad.out("X@GRAD", grad_of(x));
    mul_grad.out("Y@GRAD", grad_of(weight(i))).role(op_role::kBackward)
        .role_var({weight(i), grad_of(weight(i))});
  }
  for (const std::string& p : param_names(spec)) {
    auto op = pb.op(spec.optimizer == Optimizer::kSgd        ? "sgd"
                    : spec.optimizer == Optimizer::kMomentum ? "momentum"
                                                             : "adam");
    op.in("Param", p).in("Grad", grad_of(p)).in("LearningRate", "learning_rate_0");
    op.out("ParamOut", p);
    const auto state = optimizer_state(spec, p);
    if (spec.optimizer == Optimizer::kMomentum) {
      op.in("Velocity", state[0]).out("VelocityOut", state[0]).attr("mu", 0.9f);
    } else if (spec.optimizer == Optimizer::kAdam) {
      op.in("Moment1", state[0]).in("Moment2", state[1]).in("Beta1Pow", state[2])
          .in("Beta2Pow", state[3]);
      op.out("Moment1Out", state[0]).out("Moment2Out", state[1]).out("Beta1PowOut", state[2])
          .out("Beta2PowOut", state[3]);
      op.attr("beta1", 0.9f).attr("beta2", 0.999f).attr("epsilon", 1e-8f)
          .attr("lazy_mode", false).attr("min_row_size_to_use_multithread", int64_t{1000});
    }
    op.role(op_role::kOptimize).role_var({p, grad_of(p)});
  }
  return pb.build();
}

inline TranspileOptions options_for(int nranks, int rank, int nrings = 2) {
  TranspileOptions o;
  for (int r = 0; r < nranks; ++r)
    o.collective.endpoints.push_back("127.0.0.1:" + std::to_string(6170 + r));
  o.collective.rank = rank;
  o.collective.current_endpoint = o.collective.endpoints.empty() ? "" : o.collective.endpoints[rank];
  o.collective.nrings = nrings;
  return o;
}

// The message of the ctp::Error that f throws, or "" when it throws none.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Only the main pass of `mode`'s transpiler (the startup program untouched).
inline void run_main_pass(TranspileMode mode, const TranspileOptions& o, NameGenerator& names,
                          Program& main) {
  make_transpiler(mode, o)->main_pass(names)->run(main);
}
inline void run_main_pass(TranspileMode mode, const TranspileOptions& o, Program& main) {
  NameGenerator names;
  run_main_pass(mode, o, names, main);
}

}  // namespace ctp::testing
