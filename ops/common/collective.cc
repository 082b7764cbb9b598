#include "ops/common/collective.h"

#include <cstring>

namespace ctp::collective {

CommunicatorManager& comms(KernelContext& ctx) {
  CommunicatorManager* m = ctx.services().comms;
  if (!m)
    throw ctx.error("this run has no communicators (RunServices::comms is null): "
                "run collective programs with a CommunicatorManager");
  return *m;
}

Communicator& ring(KernelContext& ctx) {
  const int64_t ring_id = ctx.int_attr("ring_id", 0);
  try {
    return comms(ctx).get(static_cast<int>(ring_id));
  } catch (Error& e) {
    e.locate(ctx.location());
    throw;
  }
}

int64_t allgather_nranks(KernelContext& ctx, const Communicator& ring) {
  const int64_t nranks = ctx.int_attr("nranks", ring.size());
  if (nranks != ring.size())
    ctx.fail("attribute nranks=" + std::to_string(nranks) + " but ring " +
             std::to_string(ring.ring_id()) + " has " + std::to_string(ring.size()) + " ranks");
  return nranks;
}

Tensor& out_like_input(KernelContext& ctx, std::size_t i, std::string_view in_slot,
                       std::string_view out_slot) {
  Tensor& x = ctx.input(in_slot, i);
  const auto& outs = ctx.output_names(out_slot);
  if (outs.empty()) return x;  // no Out: the op works in place on X
  if (i >= outs.size())
    throw ctx.error("slot " + std::string(out_slot) + " has " +
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
