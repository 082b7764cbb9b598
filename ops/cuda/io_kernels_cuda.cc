// save / save_combine / load / load_combine in a GPU run
// (ops/common/persistence_ops.h): a save copies its inputs to the host once
// the device is idle; a load reads on the host and copies to the GPU.
#include "ops/common/persistence_ops.h"
#include "ops/cuda/cuda_kernel_util.h"

namespace ctp::cuda {
namespace {

void save_inputs(KernelContext& ctx) {
  std::vector<Tensor> inputs;
  for (std::size_t i = 0; i < ctx.input_count("X"); ++i) {
    inputs.push_back(device_context(ctx).to_host(ctx.input("X", i)));
  }
  save_tensors(ctx, inputs);
}

void load_outputs(KernelContext& ctx) {
  const std::vector<Tensor> loaded = load_tensors(ctx);
  for (std::size_t i = 0; i < loaded.size(); ++i)
    ctx.output("Out", i) = device_context(ctx).to_device(loaded[i]);
}

}  // namespace

CTP_REGISTER_KERNEL(save, CUDA, save_inputs);
CTP_REGISTER_KERNEL(save_combine, CUDA, save_inputs);
CTP_REGISTER_KERNEL(load, CUDA, load_outputs);
CTP_REGISTER_KERNEL(load_combine, CUDA, load_outputs);

}  // namespace ctp::cuda
