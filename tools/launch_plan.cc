#include "tools/launch_plan.h"

#include <cstdio>
#include <memory>
#include <set>

#include "executor/rendezvous/rendezvous_store.h"
#include "program_ir/error.h"

namespace ctp::launch {
namespace {

// Admits the launchers of one job to node 0's store (the address alone
// identifies the job; the token only keeps other kinds of clients out).
constexpr uint64_t kLaunchStoreToken = 0x6374706c61756e63ull;  // "ctplaunc"

std::string join(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : sep) + s;
  return out;
}

// The workers' ports on this node. Without --base-port each is a probe
// socket's free port, and the probes stay open in `held` until the caller
// has exchanged endpoints with the other nodes: another node's launcher on
// the same machine, choosing at the same time, then cannot be given a port
// this one chose (a probe closed at once could be).
std::vector<int> local_ports(const LaunchOptions& options, std::vector<net::Socket>& held) {
  std::vector<int> ports;
  if (options.base_port) {
    for (int i = 0; i < options.nproc; ++i) {
      int port = *options.base_port + i;
      if (port > 65535) throw Error("--base-port " + std::to_string(*options.base_port) +
                                    " leaves no room for " + std::to_string(options.nproc) + " ports");
      ports.push_back(port);
    }
    return ports;
  }
  for (int i = 0; i < options.nproc; ++i) {
    held.push_back(net::listen_on_free_port("choosing worker ports"));
    ports.push_back(net::local_port(held.back()));
  }
  return ports;
}

std::string ports_text(const std::string& host, const std::vector<int>& ports) {
  std::vector<std::string> eps;
  for (int p : ports) eps.push_back(net::Endpoint{host, p}.to_string());
  return join(eps, ",");
}

std::string random_job_id() {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(random_token()));
  return hex;
}

// Nodes meet at node 0's store: each publishes its endpoints and reads all;
// node 0 publishes the job id.
std::vector<std::string> exchange_endpoints(const LaunchOptions& options, const std::vector<int>& ports,
                                            std::string& job_id) {
  const net::Endpoint& master = *options.master;
  std::unique_ptr<StoreServer> server;
  if (options.node_rank == 0) {
    try {
      server = std::make_unique<StoreServer>(master.host, master.port, kLaunchStoreToken);
    } catch (const Error& e) {
      throw Error("node 0 cannot serve the launch rendezvous at --master " + master.to_string() +
                  ": " + e.what());
    }
  }
  StoreAddress address{master, kLaunchStoreToken};
  StoreClient client(address, -1, "launcher of node " + std::to_string(options.node_rank),
                     options.timeout);
  std::string host = client.local_host();  // how the master sees this node
  if (options.node_rank == 0) client.set("job", job_id);
  client.set("node/" + std::to_string(options.node_rank), ports_text(host, ports));
  std::vector<std::string> keys;
  for (int n = 0; n < options.nnodes; ++n) keys.push_back("node/" + std::to_string(n));
  try {
    client.wait(keys, options.timeout);
  } catch (const Error&) {
    std::vector<std::string> missing;
    for (int n = 0; n < options.nnodes; ++n)
      if (!client.try_get(keys[n])) missing.push_back(std::to_string(n));
    throw Error("the launchers of node(s) " + join(missing, ", ") + " did not arrive at " +
                master.to_string() + " within " + net::duration_text(options.timeout));
  }
  job_id = client.get("job", options.timeout);
  std::vector<std::string> endpoints;
  for (const auto& key : keys)
    for (const auto& e : net::parse_endpoint_list(client.get(key), "a node's endpoints"))
      endpoints.push_back(e.to_string());
  client.set("fetched/" + std::to_string(options.node_rank), "1");
  if (server) {
    // Keep serving until every node has read the list.
    std::vector<std::string> fetched;
    for (int n = 0; n < options.nnodes; ++n) fetched.push_back("fetched/" + std::to_string(n));
    client.wait(fetched, options.timeout);
  }
  return endpoints;
}

}  // namespace

LaunchPlan plan_launch(const LaunchOptions& options, const Environment& inherited) {
  if (options.nproc < 1) throw Error("--nproc must be at least 1");
  if (options.nnodes < 1) throw Error("--nnodes must be at least 1");
  if (options.node_rank < 0 || options.node_rank >= options.nnodes)
    throw Error("--node-rank " + std::to_string(options.node_rank) + " is not below --nnodes " +
                std::to_string(options.nnodes));
  if (options.nnodes > 1 && !options.master)
    throw Error("--nnodes " + std::to_string(options.nnodes) + " needs --master HOST:PORT");
  if (options.command.empty()) throw Error("no program to launch (give it after --)");

  std::vector<net::Socket> probes;
  std::vector<int> ports = local_ports(options, probes);
  LaunchPlan plan;
  auto inherited_job = inherited.find("CTP_JOB_ID");
  plan.job_id = inherited_job != inherited.end() && !inherited_job->second.empty()
                    ? inherited_job->second
                    : random_job_id();
  if (options.nnodes == 1) {
    for (int p : ports) plan.endpoints.push_back(net::Endpoint{"127.0.0.1", p}.to_string());
  } else {
    plan.endpoints = exchange_endpoints(options, ports, plan.job_id);
  }
  probes.clear();  // the workers bind these ports next
  std::set<std::string> unique(plan.endpoints.begin(), plan.endpoints.end());
  if (unique.size() != plan.endpoints.size())
    throw Error("two workers got the same endpoint (" + join(plan.endpoints, ",") +
                "): give each node its own --base-port range or leave ports to ctp");

  int world = options.nproc * options.nnodes;
  std::string master_addr = options.master ? options.master->host : "127.0.0.1";
  int master_port = options.master ? options.master->port : net::pick_free_port();
  for (int i = 0; i < options.nproc; ++i) {
    WorkerPlan w;
    w.local_rank = i;
    w.rank = options.node_rank * options.nproc + i;
    w.endpoint = plan.endpoints[w.rank];
    w.env = inherited;
    for (auto it = w.env.begin(); it != w.env.end();)
      it = it->first.rfind("OMPI_COMM_WORLD_", 0) == 0 ? w.env.erase(it) : std::next(it);
    auto& e = w.env;
    e["PADDLE_TRAINER_ID"] = std::to_string(w.rank);
    e["PADDLE_TRAINERS_NUM"] = std::to_string(world);
    e["PADDLE_TRAINER_ENDPOINTS"] = join(plan.endpoints, ",");
    e["PADDLE_CURRENT_ENDPOINT"] = w.endpoint;
    e["PADDLE_RANK_IN_NODE"] = std::to_string(i);
    e["FLAGS_selected_gpus"] = std::to_string(i);
    e["RANK"] = std::to_string(w.rank);
    e["WORLD_SIZE"] = std::to_string(world);
    e["LOCAL_RANK"] = std::to_string(i);
    e["LOCAL_WORLD_SIZE"] = std::to_string(options.nproc);
    e["MASTER_ADDR"] = master_addr;
    e["MASTER_PORT"] = std::to_string(master_port);
    char seconds[32];
    std::snprintf(seconds, sizeof(seconds), "%g", static_cast<double>(options.timeout.count()) / 1000.0);
    e["CTP_COMM_TIMEOUT"] = seconds;
    e["CTP_JOB_ID"] = plan.job_id;
    e.emplace("PYTHONUNBUFFERED", "1");  // so Python workers' lines arrive as printed
    plan.workers.push_back(std::move(w));
  }
  return plan;
}

}  // namespace ctp::launch
