// One step's gradient synchronisation through ctp's executor for the
// gradient shapes of real models (bench/gpu/model_grad_shapes.py writes them
// on the device machine from torchvision / transformers), one process per GPU:
//
//   gpu_grad_sync_bench --rank R --nranks N --endpoints H:P,... --shapes FILE [--csv FILE]
//
// Modes, as the transpilers write them (compute left out: this times the
// communication a step adds when nothing overlaps it):
//   grad_allreduce  c_sync_calc_stream + c_allreduce_sum per gradient, in
//                   backward (reverse) order, then c_sync_comm_stream
//   fused           coalesce_tensor (views into one 256-byte aligned buffer;
//                   no copy after the first step) + one c_allreduce_sum
//   xsum            coalesce_tensor + c_allreduce_xsum over the views (one
//                   NCCL call: they lie back to back)
// Timing as bench/gpu/torch_grad_sync.py: 3 warm-up steps, a barrier, then
// the wall time of 20 back-to-back steps ended by a device sync, over 20.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
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
  std::string shapes;
  std::string csv;
  bool nonblocking_ring = false;  // as gpu_allreduce_bench --nonblocking-ring
};

struct Model {
  std::string name;
  std::vector<int64_t> numels;
};

std::vector<Model> read_shapes(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("cannot read --shapes " + path);
  std::vector<Model> models;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string first;
    int64_t numel = 0;
    if (!(words >> first)) continue;
    if (first == "model") {
      models.push_back({});
      words >> models.back().name;
    } else if (words >> numel && !models.empty()) {
      models.back().numels.push_back(numel);
    } else {
      throw Error(path + ": bad line '" + line + "'");
    }
  }
  return models;
}

std::string grad(std::size_t i) { return "g_" + std::to_string(i); }

Program sync_program(const std::string& mode, std::size_t count) {
  ProgramBuilder pb;
  std::vector<std::string> grads;
  for (std::size_t i = 0; i < count; ++i) grads.push_back(grad(i));
  if (mode == "grad_allreduce") {
    for (std::size_t i = count; i-- > 0;) {
      pb.op("c_sync_calc_stream").in("X", grad(i)).out("Out", grad(i));
      pb.op("c_allreduce_sum").in("X", grad(i)).out("Out", grad(i)).attr("ring_id", 0);
    }
  } else {
    pb.op("coalesce_tensor").in("Input", grads).out("Output", grads).out("FusedOutput", "fused")
        .attr("copy_data", true).attr("dtype", 5);
    pb.op("c_sync_calc_stream").in("X", "fused").out("Out", "fused");
    if (mode == "fused")
      pb.op("c_allreduce_sum").in("X", "fused").out("Out", "fused").attr("ring_id", 0);
    else
      pb.op("c_allreduce_xsum").in("X", grads).out("Out", grads).attr("ring_id", 0);
  }
  pb.op("c_sync_comm_stream").in("X", grads[0]).out("Out", grads[0]).attr("ring_id", 0);
  return pb.build();
}

int run(const Options& o) {
  DeviceContext dc(o.rank);
  CommunicatorManager comms(CommOptions{std::chrono::seconds(120)});
  RunServices services;
  services.device = dc.device();
  services.device_context = &dc;
  services.comms = &comms;
  Communicator& ring =
      bench::join_ring0(o.rank, o.nranks, o.endpoints, o.nonblocking_ring, dc, comms, services);
  std::string csv = "model,mode,tensors,parameters,step_ms\n";
  for (const Model& model : read_shapes(o.shapes)) {
    int64_t total = 0;
    for (int64_t n : model.numels) total += n;
    for (const std::string mode : {"grad_allreduce", "fused", "xsum"}) {
      const Program program = sync_program(mode, model.numels.size());
      Scope scope;
      for (std::size_t i = 0; i < model.numels.size(); ++i)
        scope.var(grad(i)) = Tensor(DataType::FP32, {model.numels[i]}, dc.device());
      Executor step(program, services);
      for (int i = 0; i < 3; ++i) step.run(scope);
      synchronize_device(dc, &comms);
      ring.barrier();
      const auto t0 = Clock::now();
      for (int i = 0; i < 20; ++i) step.run(scope);
      synchronize_device(dc, &comms);
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count() / 20;
      if (o.rank == 0) {
        const std::string label = (o.nonblocking_ring ? "ctp_nonblocking_" : "ctp_") + mode;
        std::printf("%-12s %-27s %5zu tensors %11lld params %9.3f ms (copied %llu B)\n",
                    model.name.c_str(), label.c_str(), model.numels.size(),
                    static_cast<long long>(total), ms,
                    static_cast<unsigned long long>(step.services().counters.coalesce_bytes_copied));
        std::fflush(stdout);
      }
      char row[256];
      std::snprintf(row, sizeof row, "%s,%s%s,%zu,%lld,%.4f\n", model.name.c_str(),
                    o.nonblocking_ring ? "ctp_nonblocking_" : "ctp_", mode.c_str(),
                    model.numels.size(), static_cast<long long>(total), ms);
      csv += row;
    }
  }
  if (o.rank == 0 && !o.csv.empty()) write_file_atomically(o.csv, csv);
  ring.barrier();
  return 0;
}
#endif

}  // namespace

int main(int argc, char** argv) {
#ifdef CTP_HAVE_CUDA
  Options o;
  CLI::App app{"ctp gradient synchronisation of real models' gradient shapes on NCCL"};
  app.add_option("--rank", o.rank)->required();
  app.add_option("--nranks", o.nranks)->required();
  app.add_option("--endpoints", o.endpoints)->required();
  app.add_option("--shapes", o.shapes, "written by bench/gpu/model_grad_shapes.py")->required();
  app.add_option("--csv", o.csv);
  app.add_flag("--nonblocking-ring", o.nonblocking_ring,
               "collectives on a non-blocking NCCL ring (the default ring is blocking)");
  CLI11_PARSE(app, argc, argv);
  try {
    return run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpu_grad_sync_bench rank %d: %s\n", o.rank, e.what());
    return 1;
  }
#else
  (void)argc;
  (void)argv;
  std::fprintf(stderr, "gpu_grad_sync_bench: this build of ctp has no CUDA backend\n");
  return 0;
#endif
}
