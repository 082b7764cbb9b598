// CUDA kernels of the collectives the transpilers insert. Each queues its
// NCCL call on the ring's communication stream (or the compute stream when
// use_calc_stream is set) and returns at once: the host never waits.
//
// The ring is whatever the communicator backend registry gave the run's
// device kind (NCCL); the kernels use only the Communicator interface's
// stream-ordered forms.
//
// Ordering follows the reference's stream model. A collective on a ring
// stream first waits (GPU-side) for the work already queued on the compute
// stream, so it reads its input after the op that produced it even where a
// program lacks c_sync_calc_stream; backward ops queued later overlap with
// it. Compute reads the result only after c_sync_comm_stream for that ring,
// as the transpilers insert before the optimizer and after the startup
// broadcasts.
#include "ops/common/collective.h"
#include "ops/cuda/cuda_kernel_util.h"
#include "ops/schema/meta_collective.h"

namespace ctp {
namespace {

using collective::CollectiveSlots;
using collective::kLegacySlots;
using collective::kPaddle3Slots;

struct Placement {
  Communicator* comm;
  CudaStream stream;
  DeviceStream queue() const { return DeviceStream{stream}; }
};

// The ring and the stream the op runs on, ordered after the compute stream.
Placement place(KernelContext& ctx) {
  Communicator& comm = collective::ring(ctx);
  DeviceContext& dc = cuda::device_context(ctx);
  if (ctx.bool_attr("use_calc_stream", false)) return {&comm, dc.compute_stream()};
  CudaStream stream = dc.comm_stream(comm.ring_id());
  dc.stream_wait(stream, dc.compute_stream());
  return {&comm, stream};
}

// Out of an op whose output has X's dtype and shape: X itself when the op
// works in place (no Out, or Out names X's var).
Tensor& out_for(KernelContext& ctx, Tensor& x, std::size_t i = 0,
                CollectiveSlots slots = kLegacySlots) {
  const auto& outs = ctx.output_names(slots.out);
  if (outs.empty() || outs.at(i) == ctx.input_names(slots.in).at(i)) return x;
  return cuda::device_output(ctx, slots.out, i, x.dtype(), x.shape());
}

template <ReduceOp Op>
void c_allreduce(KernelContext& ctx) {
  Placement p = place(ctx);
  Tensor& x = cuda::device_input(ctx, "X");
  Tensor& out = out_for(ctx, x);
  collective::naming_input(ctx, "X", [&] { p.comm->queue_all_reduce(x, out, Op, p.queue()); });
}

// c_broadcast (slots X, Out) and Paddle 3's broadcast (x, out).
void broadcast_kernel(KernelContext& ctx, CollectiveSlots slots) {
  Placement p = place(ctx);
  Tensor& x = cuda::device_input(ctx, slots.in);
  Tensor& out = out_for(ctx, x, 0, slots);
  const int root = static_cast<int>(ctx.int_attr("root", 0));
  collective::naming_input(ctx, slots.in,
                           [&] { p.comm->queue_broadcast(x, out, root, p.queue()); });
}

// Several gradients in one fused call: one NCCL call when they are
// coalesce_tensor's back-to-back views, otherwise one NCCL group.
void c_allreduce_xsum(KernelContext& ctx) {
  Placement p = place(ctx);
  std::vector<Tensor*> tensors;
  for (std::size_t i = 0; i < ctx.input_names("X").size(); ++i) {
    Tensor& x = cuda::device_input(ctx, "X", i);
    Tensor& out = out_for(ctx, x, i);
    if (&out != &x) {
      // Out differs from X: copy first, then reduce Out in place.
      copy_bytes(x, out, p.stream);
    }
    tensors.push_back(&out);
  }
  collective::naming_input(
      ctx, "X", [&] { p.comm->queue_all_reduce_many(tensors, ReduceOp::Sum, p.queue()); },
      std::to_string(tensors.size()) + " tensors from ");
}

// c_allgather (slots X, Out) and Paddle 3's all_gather (x, out).
void all_gather_kernel(KernelContext& ctx, CollectiveSlots slots) {
  Placement p = place(ctx);
  Tensor& x = cuda::device_input(ctx, slots.in);
  const std::vector<int64_t> shape =
      meta::c_allgather(ctx, meta_of(x), collective::allgather_nranks(ctx, *p.comm));
  Tensor input = x;  // keeps X's buffer alive if Out replaces X's tensor
  Tensor& out = cuda::device_output(ctx, slots.out, 0, x.dtype(), shape);
  collective::naming_input(ctx, slots.in,
                           [&] { p.comm->queue_all_gather(input, out, p.queue()); });
  // Out replaced X's buffer, which is freed on the compute stream when
  // `input` goes (executor/cuda/cuda_buffer.cc): that stream first waits for
  // the gather still reading it.
  if (!input.shares_buffer_with(x)) {
    DeviceContext& dc = cuda::device_context(ctx);
    if (p.stream != dc.compute_stream()) dc.stream_wait(dc.compute_stream(), p.stream);
  }
}

// GPU-side waits only: the host queues an event wait and moves on.
void c_sync_calc_stream(KernelContext& ctx) {
  cuda::device_context(ctx).comm_streams_wait_for_compute();
}

void c_sync_comm_stream(KernelContext& ctx) {
  DeviceContext& dc = cuda::device_context(ctx);
  dc.compute_waits_for_comm(static_cast<int>(ctx.int_attr("ring_id", 0)));
}

}  // namespace

CTP_REGISTER_KERNEL(c_broadcast, CUDA, [](KernelContext& c) { broadcast_kernel(c, kLegacySlots); });
CTP_REGISTER_KERNEL(broadcast, CUDA, [](KernelContext& c) { broadcast_kernel(c, kPaddle3Slots); });
CTP_REGISTER_KERNEL(c_allreduce_sum, CUDA, c_allreduce<ReduceOp::Sum>);
CTP_REGISTER_KERNEL(c_allreduce_max, CUDA, c_allreduce<ReduceOp::Max>);
CTP_REGISTER_KERNEL(c_allreduce_min, CUDA, c_allreduce<ReduceOp::Min>);
CTP_REGISTER_KERNEL(c_allreduce_prod, CUDA, c_allreduce<ReduceOp::Prod>);
CTP_REGISTER_KERNEL(c_allreduce_xsum, CUDA, c_allreduce_xsum);
CTP_REGISTER_KERNEL(c_allgather, CUDA,
                    [](KernelContext& c) { all_gather_kernel(c, kLegacySlots); });
CTP_REGISTER_KERNEL(all_gather, CUDA,
                    [](KernelContext& c) { all_gather_kernel(c, kPaddle3Slots); });
CTP_REGISTER_KERNEL(c_sync_calc_stream, CUDA, c_sync_calc_stream);
CTP_REGISTER_KERNEL(c_sync_comm_stream, CUDA, c_sync_comm_stream);

}  // namespace ctp
