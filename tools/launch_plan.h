// What `ctp launch` starts: the job's endpoints and, for each local
// worker, its rank and environment (Paddle's and torchrun's variables).
#pragma once
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "executor/rendezvous/rendezvous_socket.h"
#include "executor/worker_env.h"

namespace ctp::launch {

struct LaunchOptions {
  int nproc = 1;       // workers on this node
  int nnodes = 1;
  int node_rank = 0;
  std::optional<net::Endpoint> master;  // required with nnodes > 1
  std::optional<int> base_port;         // worker endpoints at base_port + local rank
  std::chrono::milliseconds timeout{std::chrono::seconds(300)};  // workers' comm timeout
  std::chrono::milliseconds grace{std::chrono::seconds(10)};     // after a failure
  std::vector<std::string> command;     // the program and its arguments
};

struct WorkerPlan {
  int rank = 0;
  int local_rank = 0;
  std::string endpoint;
  Environment env;  // the complete environment the worker starts with
};

struct LaunchPlan {
  std::string job_id;                  // exported as CTP_JOB_ID to every worker
  std::vector<std::string> endpoints;  // every rank's, by rank
  std::vector<WorkerPlan> workers;     // this node's
};

// Chooses this node's endpoints (free ports, or base_port + i) and the job
// id (CTP_JOB_ID if the launcher has one, else random), and with several
// nodes exchanges them through a store node 0 hosts at the master address
// (node 0's job id wins). `inherited` is the launcher's own environment: workers get it
// plus their variables (minus Open MPI's rank variables, which would
// contradict them).
LaunchPlan plan_launch(const LaunchOptions& options, const Environment& inherited);

}  // namespace ctp::launch
