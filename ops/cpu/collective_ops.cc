// CPU kernels of the collective ops the transpilers insert. Each runs
// synchronously on the ring's communicator: when the kernel returns, the
// collective is complete and its result is in Out.
#include <cstring>

#include "ops/common/collective.h"
#include "ops/schema/meta_collective.h"

namespace ctp {
namespace {

using collective::CollectiveSlots;
using collective::kLegacySlots;
using collective::kPaddle3Slots;
using collective::out_like_input;
using collective::ring;

// c_broadcast (slots X, Out) and Paddle 3's broadcast (x, out).
void broadcast_kernel(KernelContext& ctx, CollectiveSlots slots) {
  Communicator& comm = ring(ctx);
  Tensor& out = out_like_input(ctx, 0, slots.in, slots.out);
  int root = static_cast<int>(ctx.int_attr("root", 0));
  collective::naming_input(ctx, slots.in, [&] { comm.broadcast(out, root); });
}

template <ReduceOp Op>
void c_allreduce(KernelContext& ctx) {
  Communicator& comm = ring(ctx);
  Tensor& out = out_like_input(ctx);
  collective::naming_input(ctx, "X", [&] { comm.all_reduce(out, Op); });
}

// Several gradients reduced as one fused call (fuse_allreduce == 2).
void c_allreduce_xsum(KernelContext& ctx) {
  Communicator& comm = ring(ctx);
  std::vector<Tensor*> tensors;
  for (std::size_t i = 0; i < ctx.input_names("X").size(); ++i)
    tensors.push_back(&out_like_input(ctx, i));
  collective::naming_input(
      ctx, "X", [&] { comm.all_reduce_many(tensors, ReduceOp::Sum); },
      std::to_string(tensors.size()) + " tensors from ");
}

// c_allgather (slots X, Out) and Paddle 3's all_gather (x, out).
void all_gather_kernel(KernelContext& ctx, CollectiveSlots slots) {
  Communicator& comm = ring(ctx);
  const Tensor& x = ctx.input(slots.in);
  const std::vector<int64_t> shape =
      meta::c_allgather(ctx, meta_of(x), collective::allgather_nranks(ctx, comm));
  // X may be Out (in place); gather from a snapshot then.
  Tensor input = x;
  if (ctx.output_names(slots.out).at(0) == ctx.input_names(slots.in).at(0)) {
    input = Tensor(x.dtype(), x.shape());
    std::memcpy(input.raw_data(), x.raw_data(), x.bytes());
  }
  Tensor& out = ctx.output(slots.out);
  out.resize(x.dtype(), shape);
  collective::naming_input(ctx, slots.in, [&] { comm.all_gather(input, out); });
}

// c_sync_calc_stream / c_sync_comm_stream order a device's compute stream
// and a ring's communication stream. On CPU there are no streams: every
// kernel, the collectives included, has finished its work when it returns
// (the Gloo and thread communicators are synchronous), so everything queued
// before the op is already complete and there is nothing to wait for. They
// only keep Out bound to X. The GPU backend makes them event waits.
void c_sync_stream(KernelContext& ctx) {
  for (std::size_t i = 0; i < ctx.input_names("X").size(); ++i) out_like_input(ctx, i);
}

}  // namespace

CTP_REGISTER_KERNEL(c_broadcast, CPU, [](KernelContext& c) { broadcast_kernel(c, kLegacySlots); });
CTP_REGISTER_KERNEL(broadcast, CPU, [](KernelContext& c) { broadcast_kernel(c, kPaddle3Slots); });
CTP_REGISTER_KERNEL(c_allreduce_sum, CPU, c_allreduce<ReduceOp::Sum>);
CTP_REGISTER_KERNEL(c_allreduce_max, CPU, c_allreduce<ReduceOp::Max>);
CTP_REGISTER_KERNEL(c_allreduce_min, CPU, c_allreduce<ReduceOp::Min>);
CTP_REGISTER_KERNEL(c_allreduce_prod, CPU, c_allreduce<ReduceOp::Prod>);
CTP_REGISTER_KERNEL(c_allreduce_xsum, CPU, c_allreduce_xsum);
CTP_REGISTER_KERNEL(c_allgather, CPU,
                    [](KernelContext& c) { all_gather_kernel(c, kLegacySlots); });
CTP_REGISTER_KERNEL(all_gather, CPU,
                    [](KernelContext& c) { all_gather_kernel(c, kPaddle3Slots); });
CTP_REGISTER_KERNEL(c_sync_calc_stream, CPU, c_sync_stream);
CTP_REGISTER_KERNEL(c_sync_comm_stream, CPU, c_sync_stream);

}  // namespace ctp
