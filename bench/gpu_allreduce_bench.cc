// All-reduce bus bandwidth through ctp's executor on NCCL, 8 B to 1 GiB, one
// process per GPU (start one per rank; bench/gpu/run_allreduce_bench.sh does).
//
//   gpu_allreduce_bench --rank R --nranks N --endpoints H:P,H:P[,...] [--device D]
//       [--min-bytes 8] [--max-bytes 1073741824] [--csv FILE]
//
// The rings come from a startup program (c_gen_nccl_id + c_comm_init, the
// unique id exchanged over TCP), and each timed call is one step of a main
// program holding one c_allreduce_sum of FP32 (ring 0, on the ring's
// communication stream, as GradAllReduce inserts it), run by the Executor:
// kernel dispatch, stream ordering and the NCCL call are all in the time.
// For reference the same sizes are also timed calling the communicator
// directly ("raw NCCL", no executor). The ring is c_comm_init's default
// (blocking NCCL communicator); --nonblocking-ring times the non-blocking
// one instead (executor/cuda/nccl_communicator.h). Time per call = the wall time of
// `iters` back-to-back calls, ended by a full device sync, over iters; the
// ranks meet at a barrier before each timed run. busbw = bytes / time *
// 2(n-1)/n, the nccl-tests formula that bench/gpu/torch_allreduce.py uses too.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#ifdef CTP_HAVE_CUDA
#include "bench/gpu/bench_ring.h"
#include "program_ir/atomic_file.h"
#endif

namespace {

#ifdef CTP_HAVE_CUDA
using namespace ctp;
using Clock = std::chrono::steady_clock;

struct Options {
  int rank = 0;
  int nranks = 2;
  std::string endpoints;
  int device = -1;
  int64_t min_bytes = 8;
  int64_t max_bytes = int64_t{1} << 30;
  std::string csv;
  // Collectives on the non-blocking NCCL ring (the probe of the default
  // ring, NcclRingSetup without blocking_unique_id), for comparison.
  bool nonblocking_ring = false;
};

Program allreduce_program() {
  ProgramBuilder pb;
  pb.persistable("grad", {-1});
  pb.op("c_allreduce_sum").in("X", "grad").out("Out", "grad").attr("ring_id", 0);
  return pb.build();
}

int iterations_for(int64_t bytes) {
  // Enough calls for ~10 ms of small sizes, at least 20 of large ones.
  int64_t iters = (int64_t{4} << 30) / std::max<int64_t>(bytes, 1);
  return static_cast<int>(std::clamp<int64_t>(iters, 20, 1000));
}

int run(const Options& o) {
  DeviceContext dc(o.device >= 0 ? o.device : o.rank);
  CommunicatorManager comms(CommOptions{std::chrono::seconds(120)});
  RunServices services;
  services.device = dc.device();
  services.device_context = &dc;
  services.comms = &comms;
  Scope scope;
  NcclCommunicator& ring =
      bench::join_ring0(o.rank, o.nranks, o.endpoints, o.nonblocking_ring, dc, comms, services);

  const Program main = allreduce_program();
  Executor step(main, services);
  const double factor = 2.0 * (o.nranks - 1) / o.nranks;
  std::string csv = "bytes,iters,ctp_us,ctp_busbw_gbs,raw_nccl_us,raw_nccl_busbw_gbs\n";
  if (o.rank == 0)
    std::printf("%12s %6s %12s %14s %12s %14s\n", "bytes", "iters", "ctp_us", "ctp_busbw_GB/s",
                "nccl_us", "nccl_busbw_GB/s");
  for (int64_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= 2) {
    const int64_t count = std::max<int64_t>(bytes / 4, 1);
    scope.var("grad") = Tensor(DataType::FP32, {count}, dc.device());
    Tensor& grad = scope.get("grad");
    const int iters = iterations_for(bytes);
    auto time_it = [&](auto&& call) {
      for (int i = 0; i < 5; ++i) call();
      synchronize_device(dc, &comms);
      ring.barrier();
      const auto t0 = Clock::now();
      for (int i = 0; i < iters; ++i) call();
      synchronize_device(dc, &comms);
      return std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / iters;
    };
    const double ctp_us = time_it([&] { step.run(scope); });
    CudaStream stream = dc.comm_stream(0);
    const double raw_us = time_it([&] { ring.all_reduce(grad, grad, ReduceOp::Sum, stream); });
    const double b = static_cast<double>(count * 4);
    const double ctp_bw = b / ctp_us * 1e-3 * factor;
    const double raw_bw = b / raw_us * 1e-3 * factor;
    if (o.rank == 0) {
      std::printf("%12lld %6d %12.2f %14.2f %12.2f %14.2f\n", static_cast<long long>(count * 4),
                  iters, ctp_us, ctp_bw, raw_us, raw_bw);
      std::fflush(stdout);
    }
    char line[200];
    std::snprintf(line, sizeof line, "%lld,%d,%.3f,%.3f,%.3f,%.3f\n",
                  static_cast<long long>(count * 4), iters, ctp_us, ctp_bw, raw_us, raw_bw);
    csv += line;
  }
  if (o.rank == 0 && !o.csv.empty()) write_file_atomically(o.csv, csv);
  synchronize_device(dc, &comms);
  ring.barrier();
  return 0;
}
#endif

}  // namespace

int main(int argc, char** argv) {
#ifdef CTP_HAVE_CUDA
  Options o;
  CLI::App app{"ctp all-reduce bus bandwidth on NCCL through the executor"};
  app.add_option("--rank", o.rank)->required();
  app.add_option("--nranks", o.nranks)->required();
  app.add_option("--endpoints", o.endpoints, "one HOST:PORT per rank, comma-separated")
      ->required();
  app.add_option("--device", o.device, "GPU ordinal (default: the rank)");
  app.add_option("--min-bytes", o.min_bytes);
  app.add_option("--max-bytes", o.max_bytes);
  app.add_option("--csv", o.csv, "rank 0 writes the table here");
  app.add_flag("--nonblocking-ring", o.nonblocking_ring,
               "run the collectives on a non-blocking NCCL ring (the default ring is blocking)");
  CLI11_PARSE(app, argc, argv);
  try {
    return run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpu_allreduce_bench rank %d: %s\n", o.rank, e.what());
    return 1;
  }
#else
  (void)argc;
  (void)argv;
  std::fprintf(stderr, "gpu_allreduce_bench: this build of ctp has no CUDA backend\n");
  return 0;
#endif
}
