// The sync ops are GPU-side waits: with a long matrix product still running
// on the compute stream, a program of c_sync_calc_stream, c_allreduce_sum (on
// the ring's stream) and c_sync_comm_stream returns to the host at once, and
// the all-reduce still reads the product's finished result.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <chrono>

#include "executor/cuda/nccl_communicator.h"
#include "executor/executor.h"
#include "program_ir/builder.h"
#include "tests/gpu/gpu_test_util.h"

namespace ctp {
namespace {

TEST(GpuStreams, SyncOpsDoNotBlockTheHostAndStillOrderTheStreams) {
  CTP_REQUIRE_GPUS(1);
  constexpr int64_t n = 8192;  // two FP32 GEMMs of 2*8192^3 flops: tens of ms on any GPU
  ProgramBuilder init;
  init.op("c_comm_init_all").attr("ring_id", 0);
  init.op("fill_constant").out("Out", "a").attr("shape", std::vector<int64_t>{n, n})
      .attr("value", 1.f).attr("dtype", 5);
  const Program startup = init.build();
  ProgramBuilder mb;
  mb.op("mul").in("X", "a").in("Y", "a").out("Out", "prod");
  mb.op("mul").in("X", "prod").in("Y", "a").out("Out", "prod2");
  const Program compute = mb.build();
  ProgramBuilder sb;
  sb.op("c_sync_calc_stream").in("X", "prod2").out("Out", "prod2");
  sb.op("c_allreduce_sum").in("X", "prod2").out("Out", "prod2").attr("ring_id", 0);
  sb.op("c_sync_comm_stream").in("X", "prod2").out("Out", "prod2").attr("ring_id", 0);
  sb.op("scale").in("X", "prod2").out("Out", "scaled").attr("scale", 0.5f);
  const Program sync = sb.build();

  DeviceContext dc(0);
  CommunicatorManager comms;
  RunServices services;
  services.device = dc.device();
  services.device_context = &dc;
  services.comms = &comms;
  Scope scope;
  Executor(startup, services).run(scope);
  Executor compute_run(compute, services);
  Executor sync_run(sync, services);
  compute_run.run(scope);  // warm-up: cuBLAS and buffers
  sync_run.run(scope);
  synchronize_device(dc, &comms);

  compute_run.run(scope);
  const auto start = std::chrono::steady_clock::now();
  sync_run.run(scope);
  const double host_ms = std::chrono::duration<double, std::milli>(
      std::chrono::steady_clock::now() - start).count();
  const bool gpu_still_busy = cudaStreamQuery(dc.compute_stream()) == cudaErrorNotReady;
  synchronize_device(dc, &comms);
  const auto gpu_ms = [&] {
    const auto t0 = std::chrono::steady_clock::now();
    compute_run.run(scope);
    synchronize_device(dc, &comms);
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
        .count();
  }();
  EXPECT_TRUE(gpu_still_busy) << "the products (" << gpu_ms
                              << " ms) should still run when the sync program returns";
  EXPECT_LT(host_ms, gpu_ms / 2) << "the sync ops waited on the host";
  // prod = n (all ones), prod2 = n*n (exact in FP32: powers of two); a ring of
  // one sums one value; scale halves it.
  const Tensor scaled = dc.to_host(scope.get("scaled"));
  EXPECT_EQ(scaled.data<float>()[0], 0.5f * n * n);
  EXPECT_EQ(scaled.data<float>()[scaled.numel() - 1], 0.5f * n * n);
}

}  // namespace
}  // namespace ctp
