// coalesce_tensor: lays its Output tensors out as aligned views into one
// contiguous FusedOutput buffer, so that one collective can work on all of
// them (the fused all-reduce modes).
//
// Alignment: `align_size` when positive; otherwise 256 bytes on GPUs (as
// Paddle) and 64 bytes on CPUs (ops/schema/meta_tensor.h says why).
//
// The layout is built once. On later steps, when every Output already is its
// view into the current FusedOutput, nothing is reallocated and nothing is
// copied for outputs that are their own inputs: the ops that produce those
// tensors have written straight into the fused buffer. RunServices::counters
// record every (re)layout and every byte copied. The layout and its checks
// are ops/common/coalesce.h, which the CUDA kernel shares.
#include <cstring>

#include "ops/common/coalesce.h"
#include "ops/cpu/cpu_kernel_util.h"

namespace ctp::cpu {
namespace {

void coalesce_tensor(KernelContext& ctx) {
  const std::size_t alignment =
      ctx.services().device.kind == DeviceKind::CPU ? meta::kCpuChunkAlignment
                                                    : meta::kGpuChunkAlignment;
  const CoalescePlan plan = plan_coalesce(ctx, alignment);
  const DataType dtype = plan.layout.dtype;
  Tensor& fused = ctx.output("FusedOutput");
  RunCounters& counters = ctx.services().counters;
  if (!layout_is_current(ctx, plan, Device{})) {
    ++counters.coalesce_layouts;
    // A fresh buffer: the inputs may be views into the old one.
    Tensor fresh(dtype, plan.fused_shape);
    for (std::size_t i = 0; i < plan.shapes.size(); ++i) {
      Tensor view = Tensor::view(fresh.buffer(), fresh.offset() + plan.layout.offset_bytes[i],
                                 dtype, plan.shapes[i]);
      if (plan.copy_data) {
        const Tensor& in = ctx.input("Input", i);
        std::memcpy(view.raw_data(), in.raw_data(), in.bytes());
        counters.coalesce_bytes_copied += in.bytes();
      }
      ctx.output("Output", i) = std::move(view);
    }
    fused = std::move(fresh);
  } else if (plan.copy_data) {
    for (std::size_t i = 0; i < plan.shapes.size(); ++i) {
      const Tensor& in = ctx.input("Input", i);
      Tensor& out = ctx.output("Output", i);
      if (in.raw_data() == out.raw_data()) continue;  // produced in place already
      std::memcpy(out.raw_data(), in.raw_data(), in.bytes());
      counters.coalesce_bytes_copied += in.bytes();
    }
  }
  if (plan.set_constant) fill(fused, plan.constant);
}

}  // namespace

CTP_REGISTER_KERNEL(coalesce_tensor, CPU, coalesce_tensor);

}  // namespace ctp::cpu
