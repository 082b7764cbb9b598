#include "ops/cpu/float16_compute.h"

#include <algorithm>
#include <optional>

#include "executor/runtime/float16.h"

namespace ctp::cpu {
namespace {

bool is_16bit(DataType d) { return d == DataType::FP16 || d == DataType::BF16; }
bool is_floating(DataType d) {
  return d == DataType::FP32 || d == DataType::FP64 || is_16bit(d);
}

struct Found {
  DataType dtype;
  std::string what;  // "X 'x'"
};

Error mixed(KernelContext& ctx, const Found& other, const Found& half) {
  const std::string h(to_string(half.dtype));
  return ctx.error("input " + other.what + " is " + std::string(to_string(other.dtype)) +
               " but " + half.what + " is " + h + "; the " + h +
               " kernel needs every floating-point input in " + h + " (cast them first)");
}

// The 16-bit dtype of the op's inputs, if any; a ctp::Error when the
// floating-point inputs mix it with another floating-point dtype.
std::optional<Found> common_16bit_dtype(KernelContext& ctx,
                                        const std::vector<std::string>& scalar_slots) {
  std::optional<Found> half, other;
  for (const Slot& slot : ctx.op().inputs()) {
    if (std::find(scalar_slots.begin(), scalar_slots.end(), slot.name) != scalar_slots.end())
      continue;
    for (const std::string& name : slot.args) {
      const Tensor* t = ctx.scope().find(name);
      if (!t || !t->has_shape() || !is_floating(t->dtype())) continue;
      Found f{t->dtype(), slot.name + " '" + name + "'"};
      if (!is_16bit(f.dtype)) {
        if (!other) other = f;
      } else if (!half) {
        half = f;
      } else if (f.dtype != half->dtype) {
        throw mixed(ctx, f, *half);
      }
    }
  }
  if (half && other) throw mixed(ctx, *other, *half);
  return half;
}

void run_in_float(KernelContext& ctx, const KernelFn& fp32_kernel,
                  const std::vector<std::string>& scalar_slots,
                  const std::vector<std::string>& fp32_outputs) {
  const std::optional<Found> half = common_16bit_dtype(ctx, scalar_slots);
  if (!half) {
    fp32_kernel(ctx);
    return;
  }
  Scope wide;
  const OpDef* schema = ctx.schema();
  for (const Slot& slot : ctx.op().inputs()) {
    // Inputs read only for their shape get no float copy of their elements
    // (which may be released already): a float dtype and the shape.
    const bool shape_only = schema && schema->reads_only_shape_of(slot.name);
    for (const std::string& name : slot.args) {
      const Tensor* t = ctx.scope().find(name);
      if (!t || !t->has_shape()) continue;
      const DataType dtype = is_16bit(t->dtype()) ? DataType::FP32 : t->dtype();
      if (shape_only || !t->initialized())
        wide.var(name) = Tensor::without_elements(dtype, t->shape());
      else
        wide.var(name) = is_16bit(t->dtype()) ? widen_to_float(*t) : *t;
    }
  }
  KernelContext wide_ctx(ctx.op(), ctx.block(), wide, ctx.services(), ctx.op_index());
  fp32_kernel(wide_ctx);
  for (const Slot& slot : ctx.op().outputs())
    for (std::size_t i = 0; i < slot.args.size(); ++i) {
      const Tensor* t = wide.find(slot.args[i]);
      if (!t || !t->initialized()) continue;
      Tensor& out = ctx.output(slot.name, i);
      const bool keep = std::find(fp32_outputs.begin(), fp32_outputs.end(), slot.name) !=
                        fp32_outputs.end();
      if (t->dtype() == DataType::FP32 && !keep) round_into(*t, half->dtype, out);
      else out = *t;
    }
}

}  // namespace

Tensor widen_to_float(const Tensor& t) {
  Tensor wide(DataType::FP32, t.shape());
  const uint16_t* src = t.data<uint16_t>();
  float* dst = wide.data<float>();
  const int64_t n = t.numel();
  if (t.dtype() == DataType::FP16)
    for (int64_t i = 0; i < n; ++i) dst[i] = float16::to_float(src[i]);
  else
    for (int64_t i = 0; i < n; ++i) dst[i] = bfloat16::to_float(src[i]);
  return wide;
}

void round_into(const Tensor& fp32, DataType dtype, Tensor& out) {
  out.resize(dtype, fp32.shape());
  const float* src = fp32.data<float>();
  uint16_t* dst = out.data<uint16_t>();
  const int64_t n = fp32.numel();
  if (dtype == DataType::FP16)
    for (int64_t i = 0; i < n; ++i) dst[i] = float16::from_float(src[i]);
  else
    for (int64_t i = 0; i < n; ++i) dst[i] = bfloat16::from_float(src[i]);
}

KernelFn computed_in_float(KernelFn fp32_kernel, std::vector<std::string> scalar_slots,
                           std::vector<std::string> fp32_outputs) {
  return [kernel = std::move(fp32_kernel), slots = std::move(scalar_slots),
          kept = std::move(fp32_outputs)](KernelContext& ctx) {
    run_in_float(ctx, kernel, slots, kept);
  };
}

}  // namespace ctp::cpu
