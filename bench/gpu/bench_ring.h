// Ring 0 for the GPU benchmarks, made as a worker makes it: a startup
// program of c_gen_nccl_id (the ids over TCP) and c_comm_init, run by the
// executor, which gives the default ring (blocking, inline launches). With
// `nonblocking_only`, the bench joins with the first id only, which gives the
// non-blocking ring that c_comm_init made before the blocking one became the
// default (kept for comparison).
#pragma once
#ifdef CTP_HAVE_CUDA
#include <string>
#include <vector>

#include "executor/cuda/nccl_communicator.h"
#include "executor/executor.h"
#include "executor/rendezvous/rendezvous_socket.h"
#include "program_ir/builder.h"

namespace ctp::bench {

inline NcclCommunicator& join_ring0(int rank, int nranks, const std::string& endpoint_list,
                                    bool nonblocking_only, DeviceContext& dc,
                                    CommunicatorManager& comms, const RunServices& services) {
  std::vector<std::string> endpoints;
  for (const auto& e : net::parse_endpoint_list(endpoint_list, "--endpoints"))
    endpoints.push_back(e.host + ":" + std::to_string(e.port));
  if (static_cast<int>(endpoints.size()) != nranks)
    throw Error("--endpoints lists " + std::to_string(endpoints.size()) + " endpoints for " +
                std::to_string(nranks) + " ranks");
  std::vector<std::string> others;
  for (int i = 0; i < nranks; ++i)
    if (i != rank) others.push_back(endpoints[i]);
  ProgramBuilder pb;
  const auto gen_id = [&](const std::string& var) {
    Var id;
    id.name = var;
    id.type = VarKind::RAW;
    id.persistable = true;
    pb.var(id);
    pb.op("c_gen_nccl_id").out("Out", var).attr("rank", rank)
        .attr("endpoint", endpoints[rank]).attr("other_endpoints", others);
  };
  gen_id("comm_id_0");
  if (!nonblocking_only)
    pb.op("c_comm_init").in("X", "comm_id_0").attr("nranks", nranks).attr("rank", rank)
        .attr("ring_id", 0);
  const Program startup = pb.build();
  Scope scope;
  Executor(startup, services).run(scope);
  if (nonblocking_only) {
    const Tensor& ids = scope.get("comm_id_0");
    NcclRingSetup setup;
    set_ring_ids(setup, std::string(static_cast<const char*>(ids.raw_data()), ids.bytes()), {});
    setup.blocking_unique_id.clear();
    setup.rank = rank;
    setup.size = nranks;
    setup.ring_id = 0;
    setup.device = &dc;
    setup.options = comms.options();
    comms.install(0, NcclCommunicator::connect(setup));
  }
  return as_nccl(comms.get(0));
}

}  // namespace ctp::bench
#endif
