// Ring 0 for the GPU benchmarks, made as a worker makes it: a startup
// program of c_gen_nccl_id (the unique id over TCP) and c_comm_init, run by
// the executor. With `blocking`, a second id is exchanged the same way and
// the bench joins a blocking ring itself (NcclRingSetup::blocking_unique_id).
#pragma once
#ifdef CTP_HAVE_CUDA
#include <string>
#include <vector>

#include "executor/cuda/nccl_communicator.h"
#include "executor/executor.h"
#include "executor/rendezvous_socket.h"
#include "program_ir/builder.h"

namespace ctp::bench {

inline NcclCommunicator& join_ring0(int rank, int nranks, const std::string& endpoint_list,
                                    bool blocking, DeviceContext& dc, CommunicatorManager& comms,
                                    const RunServices& services) {
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
  if (blocking)
    gen_id("comm_id_0b");
  else
    pb.op("c_comm_init").in("X", "comm_id_0").attr("nranks", nranks).attr("rank", rank)
        .attr("ring_id", 0);
  const Program startup = pb.build();
  Scope scope;
  Executor(startup, services).run(scope);
  if (blocking) {
    const auto bytes = [&](const char* var) {
      const Tensor& t = scope.get(var);
      return std::string(static_cast<const char*>(t.raw_data()), t.bytes());
    };
    NcclRingSetup setup;
    setup.unique_id = bytes("comm_id_0");
    setup.blocking_unique_id = bytes("comm_id_0b");
    setup.rank = rank;
    setup.size = nranks;
    setup.ring_id = 0;
    setup.device = &dc;
    setup.options = comms.options();
    comms.install(0, NcclCommunicator::connect(setup));
  }
  return as_nccl(comms.get(0), "");
}

}  // namespace ctp::bench
#endif
