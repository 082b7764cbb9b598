// Helpers for kernel and executor tests: building tensors, running one op,
// and checking a gradient kernel against central finite differences.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "executor/executor.h"

namespace ctp::test {

template <typename T>
Tensor tensor(std::vector<int64_t> shape, std::vector<T> values) {
  Tensor t(data_type_of<T>(), std::move(shape));
  EXPECT_EQ(static_cast<std::size_t>(t.numel()), values.size()) << "test tensor size";
  for (std::size_t i = 0; i < values.size() && i < static_cast<std::size_t>(t.numel()); ++i)
    t.data<T>()[i] = values[i];
  return t;
}

template <typename T>
std::vector<T> values(const Tensor& t) {
  const T* p = t.data<T>();
  return std::vector<T>(p, p + t.numel());
}

// Deterministic values in [low, high), away from 0 by at least `gap` when
// gap > 0 (for kinks such as relu's).
inline std::vector<double> random_values(std::size_t n, uint64_t seed, double low = -1.0,
                                         double high = 1.0, double gap = 0.0) {
  std::mt19937_64 engine(seed);
  std::vector<double> out(n);
  for (double& v : out) {
    do {
      v = low + (high - low) * static_cast<double>(engine() >> 11) * 0x1.0p-53;
    } while (gap > 0 && std::abs(v) < gap);
  }
  return out;
}

inline Tensor random_tensor(std::vector<int64_t> shape, uint64_t seed, double gap = 0.0) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return tensor<double>(std::move(shape), random_values(static_cast<std::size_t>(n), seed, -1.0,
                                                        1.0, gap));
}

// Element i of an FP32 or FP64 tensor as a double.
inline double element(const Tensor& t, int64_t i) {
  return t.dtype() == DataType::FP64 ? t.data<double>()[i] : t.data<float>()[i];
}
inline double cpu_scalar(const Tensor& t) { return element(t, 0); }

inline Op make_op(std::string type, std::vector<Slot> inputs, std::vector<Slot> outputs,
                  std::vector<NamedAttribute> attrs = {}) {
  return Op(std::move(type), std::move(inputs), std::move(outputs), std::move(attrs));
}

// Runs `op` alone on the CPU against `scope`.
inline void run_op(Scope& scope, const Op& op, RunServices services = {}) {
  Program program = Program::with_global_block();
  program.global_block().append_op(op);
  Executor executor(program, std::move(services));
  executor.run(scope);
}

// The error text of running `op` alone, or "(no error)".
inline std::string run_op_error(Scope& scope, const Op& op) {
  try {
    run_op(scope, op);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

template <typename T>
void expect_near(const std::vector<T>& actual, const std::vector<T>& expected, double tol) {
  ASSERT_EQ(actual.size(), expected.size());
  for (std::size_t i = 0; i < actual.size(); ++i)
    EXPECT_NEAR(actual[i], expected[i], tol) << "element " << i;
}

// A gradient check: the forward op's inputs (FP64 unless given otherwise),
// its output slots, which output feeds the objective sum(W * out), and the
// input slots to differentiate. The `<type>_grad` op (or `grad_type`) gets every forward input
// and output plus `<objective>@GRAD` = W, and writes `<slot>@GRAD`.
struct GradCheck {
  std::string type;
  std::map<std::string, Tensor> inputs;
  std::vector<std::string> outputs{"Out"};
  std::string objective = "Out";
  std::vector<std::string> wrt{"X"};
  std::vector<NamedAttribute> attrs;
  double step = 1e-6;
  double tolerance = 1e-6;  // relative to max(1, |numeric|)
  std::string grad_type;    // empty: `<type>_grad`
};

inline void check_gradient(const GradCheck& c) {
  Scope scope;
  std::vector<Slot> fwd_in, fwd_out;
  for (const auto& [slot, t] : c.inputs) {
    scope.var("in_" + slot) = t;
    fwd_in.push_back({slot, {"in_" + slot}});
  }
  for (const std::string& slot : c.outputs) fwd_out.push_back({slot, {"out_" + slot}});
  const Op forward = make_op(c.type, fwd_in, fwd_out, c.attrs);
  run_op(scope, forward);

  const Tensor& target = scope.get("out_" + c.objective);
  const Tensor weights = random_tensor(target.shape(), 99);
  scope.var("weights") = weights;
  const auto objective = [&] {
    run_op(scope, forward);
    const Tensor& out = scope.get("out_" + c.objective);
    double total = 0;
    for (int64_t i = 0; i < out.numel(); ++i)
      total += out.data<double>()[i] * weights.data<double>()[i];
    return total;
  };

  std::vector<Slot> grad_in = fwd_in, grad_out;
  for (const Slot& s : fwd_out) grad_in.push_back(s);
  grad_in.push_back({c.objective + "@GRAD", {"weights"}});
  for (const std::string& slot : c.wrt) grad_out.push_back({slot + "@GRAD", {"grad_" + slot}});
  run_op(scope, make_op(c.grad_type.empty() ? c.type + "_grad" : c.grad_type, grad_in, grad_out,
                        c.attrs));

  for (const std::string& slot : c.wrt) {
    SCOPED_TRACE(c.type + " d/d" + slot);
    Tensor analytic = scope.get("grad_" + slot);
    Tensor& input = scope.get("in_" + slot);
    ASSERT_EQ(analytic.shape(), input.shape());
    // Work on a private copy so the perturbation never writes into a caller's buffer.
    Tensor own(input.dtype(), input.shape());
    for (int64_t i = 0; i < input.numel(); ++i) own.data<double>()[i] = input.data<double>()[i];
    input = own;
    double* x = input.data<double>();
    for (int64_t i = 0; i < input.numel(); ++i) {
      const double saved = x[i];
      x[i] = saved + c.step;
      const double up = objective();
      x[i] = saved - c.step;
      const double down = objective();
      x[i] = saved;
      const double numeric = (up - down) / (2 * c.step);
      EXPECT_NEAR(analytic.data<double>()[i], numeric,
                  c.tolerance * std::max(1.0, std::abs(numeric)))
          << "element " << i;
    }
  }
}

}  // namespace ctp::test
