#include "ops/common/collective.h"

#include <cstring>

#include "ops/schema/op_def.h"

namespace ctp::collective {
namespace {

const Attribute* find_attr(KernelContext& ctx, std::string_view name) {
  if (const Attribute* a = ctx.op().attr(name)) return a;
  if (const AttrDef* def = OpRegistry::global().find_attr(ctx.op().type, name))
    if (def->default_value) return &*def->default_value;
  return nullptr;
}

Error missing(KernelContext& ctx, std::string_view name) {
  return Error(ctx.where() + "attribute '" + std::string(name) + "' is missing");
}

Error wrong_type(KernelContext& ctx, std::string_view name, const Attribute& a,
                 std::string_view expected) {
  return Error(ctx.where() + "attribute '" + std::string(name) + "' is " +
               std::string(to_string(a.type())) + ", expected " + std::string(expected));
}

}  // namespace

int64_t int_attr(KernelContext& ctx, std::string_view name, std::optional<int64_t> fallback) {
  const Attribute* a = find_attr(ctx, name);
  if (!a) {
    if (fallback) return *fallback;
    throw missing(ctx, name);
  }
  if (a->type() != AttrType::INT && a->type() != AttrType::LONG && a->type() != AttrType::BOOLEAN)
    throw wrong_type(ctx, name, *a, "INT");
  return a->as_int64();
}

std::string string_attr(KernelContext& ctx, std::string_view name) {
  const Attribute* a = find_attr(ctx, name);
  if (!a) throw missing(ctx, name);
  if (a->type() != AttrType::STRING) throw wrong_type(ctx, name, *a, "STRING");
  return a->get<std::string>();
}

std::vector<std::string> strings_attr(KernelContext& ctx, std::string_view name, bool optional) {
  const Attribute* a = find_attr(ctx, name);
  if (!a) {
    if (optional) return {};
    throw missing(ctx, name);
  }
  if (a->type() != AttrType::STRINGS) throw wrong_type(ctx, name, *a, "STRINGS");
  return a->get<std::vector<std::string>>();
}

std::vector<int64_t> ints_attr(KernelContext& ctx, std::string_view name) {
  const Attribute* a = find_attr(ctx, name);
  if (!a) return {};
  if (a->type() == AttrType::INTS) {
    const auto& v = a->get<std::vector<int32_t>>();
    return std::vector<int64_t>(v.begin(), v.end());
  }
  if (a->type() == AttrType::LONGS) return a->get<std::vector<int64_t>>();
  throw wrong_type(ctx, name, *a, "INTS");
}

CommunicatorManager& comms(KernelContext& ctx) {
  CommunicatorManager* m = ctx.services().comms;
  if (!m)
    throw Error(ctx.where() + "this run has no communicators (RunServices::comms is null): "
                "run collective programs with a CommunicatorManager");
  return *m;
}

Communicator& ring(KernelContext& ctx) {
  int64_t ring_id = int_attr(ctx, "ring_id", 0);
  try {
    return comms(ctx).get(static_cast<int>(ring_id));
  } catch (const Error& e) {
    throw Error(ctx.where() + e.what());
  }
}

Tensor& out_like_input(KernelContext& ctx, std::size_t i, std::string_view in_slot,
                       std::string_view out_slot) {
  Tensor& x = ctx.input(in_slot, i);
  const auto& outs = ctx.output_names(out_slot);
  if (outs.empty()) return x;  // no Out: the op works in place on X
  if (i >= outs.size())
    throw Error(ctx.where() + "slot " + std::string(out_slot) + " has " +
                std::to_string(outs.size()) + " argument(s) but " + std::string(in_slot) +
                " has more");
  if (outs[i] == ctx.input_names(in_slot)[i]) return x;
  Tensor& out = ctx.output(out_slot, i);
  if (&out == &x) return x;
  out.resize(x.dtype(), x.shape());
  std::memcpy(out.raw_data(), x.raw_data(), x.bytes());
  return out;
}

}  // namespace ctp::collective
