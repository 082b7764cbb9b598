#include "samples/micro_batches.h"

#include "program_ir/error.h"

namespace ctp::samples {

MicroBatchPrograms split_at_update(const Program& main) {
  MicroBatchPrograms m{main, main, {}};
  Block& compute = m.compute.global_block();
  Block& update = m.update.global_block();
  std::size_t updates = 0;
  for (auto it = compute.ops().begin(); it != compute.ops().end();) {
    if (is_optimizer_op(*it)) {
      ++updates;
      it = compute.erase_op(it);
    } else {
      if (is_backward_op(*it))
        for (ParamGrad& pg : param_grad_pairs(*it)) m.params_grads.push_back(std::move(pg));
      ++it;
    }
  }
  for (auto it = update.ops().begin(); it != update.ops().end();)
    it = is_optimizer_op(*it) ? std::next(it) : update.erase_op(it);
  if (updates == 0 || m.params_grads.empty())
    throw Error("--micro-batches: the main program has no optimizer ops or no gradients "
                "named by op_role_var");
  return m;
}

void GradientAccumulator::add(std::size_t gradient, const Tensor& value) {
  Sum& s = sums_.at(gradient);
  if (value.dtype() != DataType::FP32 && value.dtype() != DataType::FP64)
    throw Error("--micro-batches averages FP32 or FP64 gradients, not " +
                std::string(to_string(value.dtype())));
  if (s.values.empty()) {
    s.dtype = value.dtype();
    s.shape = value.shape();
    s.values.assign(static_cast<std::size_t>(value.numel()), 0.0);
  }
  for (int64_t i = 0; i < value.numel(); ++i)
    s.values[static_cast<std::size_t>(i)] += value.dtype() == DataType::FP64
                                                 ? value.data<double>()[i]
                                                 : static_cast<double>(value.data<float>()[i]);
}

Tensor GradientAccumulator::result(std::size_t gradient, double divisor) const {
  const Sum& s = sums_.at(gradient);
  Tensor out(s.dtype, s.shape);
  for (std::size_t i = 0; i < s.values.size(); ++i) {
    const double v = s.values[i] / divisor;
    if (s.dtype == DataType::FP64)
      out.data<double>()[i] = v;
    else
      out.data<float>()[i] = static_cast<float>(v);
  }
  return out;
}

}  // namespace ctp::samples
