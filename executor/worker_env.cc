#include "executor/worker_env.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "executor/rendezvous/rendezvous_socket.h"
#include "program_ir/error.h"

namespace ctp {
namespace {

const std::string* lookup(const Environment& env, const std::string& name) {
  auto it = env.find(name);
  return it == env.end() ? nullptr : &it->second;
}

int parse_count(const std::string& name, const std::string& value) {
  int out = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), out);
  if (ec != std::errc() || end != value.data() + value.size() || out < 0)
    throw Error("environment variable " + name + "='" + value +
                "' is not a non-negative integer");
  return out;
}

// One quantity (the rank, the world size, ...) that several conventions may
// name; every variable present must give the same value.
class Agreed {
 public:
  explicit Agreed(std::string what) : what_(std::move(what)) {}
  void offer(const Environment& env, const std::string& name) {
    const std::string* v = lookup(env, name);
    if (!v) return;
    int value = parse_count(name, *v);
    if (value_ && *value_ != value)
      throw Error("conflicting " + what_ + ": " + from_ + "=" + std::to_string(*value_) + " but " +
                  name + "=" + std::to_string(value) +
                  " (two launchers set different values; unset the stale ones)");
    if (!value_) {
      value_ = value;
      from_ = name;
    }
  }
  const std::optional<int>& value() const { return value_; }
  const std::string& from() const { return from_; }

 private:
  std::string what_;
  std::optional<int> value_;
  std::string from_;
};

bool has_any(const Environment& env, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (env.count(n)) return true;
  return false;
}

}  // namespace

std::chrono::milliseconds timeout_from_seconds(double seconds, const std::string& what) {
  if (!(seconds > 0) || !std::isfinite(seconds) || seconds > kMaxTimeoutSeconds) {
    char limit[32];
    std::snprintf(limit, sizeof limit, "%g", kMaxTimeoutSeconds);
    throw Error(what + " must be a positive number of seconds, at most " + limit);
  }
  return std::chrono::milliseconds(static_cast<int64_t>(std::ceil(seconds * 1000)));
}

std::chrono::milliseconds timeout_from_text(const std::string& text, const std::string& what) {
  char* end = nullptr;
  const double seconds = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0')
    throw Error(what + "='" + text + "' is not a number of seconds");
  try {
    return timeout_from_seconds(seconds, what);
  } catch (const Error& e) {
    throw Error(what + "='" + text + "': " + e.what());
  }
}

std::optional<bool> boolean_variable(const Environment& env, const std::string& name) {
  const std::string* v = lookup(env, name);
  if (!v) return std::nullopt;
  for (const char* yes : {"1", "true", "True", "TRUE", "yes"})
    if (*v == yes) return true;
  for (const char* no : {"", "0", "false", "False", "FALSE", "no"})
    if (*v == no) return false;
  throw Error("environment variable " + name + "='" + *v + "' is not 1/true or 0/false");
}

Environment environment_from(const char* const* envp) {
  Environment env;
  for (; envp && *envp; ++envp) {
    std::string_view entry(*envp);
    auto eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    env.emplace(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
  }
  return env;
}

WorkerIdentity worker_identity(const Environment& env) {
  WorkerIdentity id;
  bool paddle = has_any(env, {"PADDLE_TRAINER_ID", "PADDLE_TRAINERS_NUM",
                              "PADDLE_TRAINER_ENDPOINTS", "PADDLE_CURRENT_ENDPOINT"});
  bool torch = has_any(env, {"RANK", "WORLD_SIZE", "LOCAL_RANK"});
  bool mpi = has_any(env, {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"});
  bool slurm = has_any(env, {"SLURM_PROCID", "SLURM_NTASKS"});
  bool use_slurm = slurm && !paddle && !torch && !mpi;
  if (paddle) id.sources.push_back("paddle");
  if (torch) id.sources.push_back("torchrun");
  if (mpi) id.sources.push_back("openmpi");
  if (use_slurm) id.sources.push_back("slurm");

  Agreed rank("ranks"), world("world sizes"), local("local ranks"), local_world("local world sizes");
  rank.offer(env, "PADDLE_TRAINER_ID");
  rank.offer(env, "RANK");
  rank.offer(env, "OMPI_COMM_WORLD_RANK");
  world.offer(env, "PADDLE_TRAINERS_NUM");
  world.offer(env, "WORLD_SIZE");
  world.offer(env, "OMPI_COMM_WORLD_SIZE");
  local.offer(env, "PADDLE_RANK_IN_NODE");
  local.offer(env, "LOCAL_RANK");
  local.offer(env, "OMPI_COMM_WORLD_LOCAL_RANK");
  local_world.offer(env, "LOCAL_WORLD_SIZE");
  local_world.offer(env, "OMPI_COMM_WORLD_LOCAL_SIZE");
  if (use_slurm) {
    rank.offer(env, "SLURM_PROCID");
    world.offer(env, "SLURM_NTASKS");
    local.offer(env, "SLURM_LOCALID");
  }

  if (const std::string* eps = lookup(env, "PADDLE_TRAINER_ENDPOINTS")) {
    for (const auto& e : net::parse_endpoint_list(*eps, "PADDLE_TRAINER_ENDPOINTS"))
      id.endpoints.push_back(e.to_string());
    std::set<std::string> unique(id.endpoints.begin(), id.endpoints.end());
    if (unique.size() != id.endpoints.size())
      throw Error("PADDLE_TRAINER_ENDPOINTS='" + *eps + "' lists an endpoint twice");
  }

  if (rank.value()) id.rank = *rank.value();
  if (world.value()) id.world_size = *world.value();
  if (!id.endpoints.empty()) {
    int listed = static_cast<int>(id.endpoints.size());
    if (world.value() && listed != id.world_size)
      throw Error("conflicting world sizes: PADDLE_TRAINER_ENDPOINTS lists " +
                  std::to_string(listed) + " endpoints but " + world.from() + "=" +
                  std::to_string(id.world_size));
    id.world_size = listed;
  }
  if (rank.value() && !world.value() && id.endpoints.empty())
    throw Error(rank.from() + " is set but no world size is (set PADDLE_TRAINERS_NUM or WORLD_SIZE)");
  if (id.world_size < 1) throw Error(world.from() + "=0: the world needs at least one worker");
  if (id.rank >= id.world_size)
    throw Error("rank " + std::to_string(id.rank) + " (" + rank.from() + ") is not below the world size " +
                std::to_string(id.world_size) + " (" + world.from() + ")");
  if (local.value()) id.local_rank = *local.value();
  id.local_world_size = local_world.value();
  if (id.local_world_size && id.local_rank >= *id.local_world_size)
    throw Error("local rank " + std::to_string(id.local_rank) + " (" + local.from() +
                ") is not below the local world size " + std::to_string(*id.local_world_size) +
                " (" + local_world.from() + ")");

  if (const std::string* cur = lookup(env, "PADDLE_CURRENT_ENDPOINT")) {
    id.current_endpoint = net::parse_endpoint(*cur, "PADDLE_CURRENT_ENDPOINT").to_string();
    if (!id.endpoints.empty()) {
      auto it = std::find(id.endpoints.begin(), id.endpoints.end(), id.current_endpoint);
      if (it == id.endpoints.end())
        throw Error("PADDLE_CURRENT_ENDPOINT=" + *cur + " is not in PADDLE_TRAINER_ENDPOINTS");
      if (it - id.endpoints.begin() != id.rank)
        throw Error("conflicting ranks: PADDLE_CURRENT_ENDPOINT=" + *cur + " is entry " +
                    std::to_string(it - id.endpoints.begin()) +
                    " of PADDLE_TRAINER_ENDPOINTS but the rank is " + std::to_string(id.rank) +
                    " (" + rank.from() + ")");
    }
  } else if (!id.endpoints.empty()) {
    id.current_endpoint = id.endpoints[id.rank];
  }

  if (const std::string* gpus = lookup(env, "FLAGS_selected_gpus")) {
    std::size_t start = 0;
    while (start <= gpus->size() && !gpus->empty()) {
      std::size_t comma = gpus->find(',', start);
      if (comma == std::string::npos) comma = gpus->size();
      id.selected_gpus.push_back(parse_count("FLAGS_selected_gpus", gpus->substr(start, comma - start)));
      start = comma + 1;
    }
  }

  if (const std::string* addr = lookup(env, "MASTER_ADDR")) {
    if (addr->empty()) throw Error("environment variable MASTER_ADDR is empty");
    id.master_addr = *addr;
  }
  if (const std::string* port = lookup(env, "MASTER_PORT")) {
    int p = parse_count("MASTER_PORT", *port);
    if (p < 1 || p > 65535) throw Error("MASTER_PORT='" + *port + "' is not a port (1..65535)");
    id.master_port = p;
  }

  if (const std::string* job = lookup(env, "CTP_JOB_ID"))
    id.job_id = *job;
  else if (const std::string* run = lookup(env, "TORCHELASTIC_RUN_ID"))
    id.job_id = *run;
  if (const std::string* t = lookup(env, "CTP_COMM_TIMEOUT"))
    id.comm_timeout = timeout_from_text(*t, "CTP_COMM_TIMEOUT");
  return id;
}

}  // namespace ctp
