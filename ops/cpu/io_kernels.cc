// save / save_combine / load / load_combine on the CPU
// (ops/common/persistence_ops.h).
#include "ops/common/persistence_ops.h"
#include "ops/cpu/cpu_kernel_util.h"

namespace ctp::cpu {
namespace {

void save_inputs(KernelContext& ctx) {
  std::vector<Tensor> inputs;
  for (std::size_t i = 0; i < ctx.input_count("X"); ++i) inputs.push_back(ctx.input("X", i));
  save_tensors(ctx, inputs);
}

void load_outputs(KernelContext& ctx) {
  std::vector<Tensor> loaded = load_tensors(ctx);
  for (std::size_t i = 0; i < loaded.size(); ++i) ctx.output("Out", i) = std::move(loaded[i]);
}

}  // namespace

CTP_REGISTER_KERNEL(save, CPU, save_inputs);
CTP_REGISTER_KERNEL(save_combine, CPU, save_inputs);
CTP_REGISTER_KERNEL(load, CPU, load_outputs);
CTP_REGISTER_KERNEL(load_combine, CPU, load_outputs);

}  // namespace ctp::cpu
