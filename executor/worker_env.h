// Who this worker is, from the variables its launcher set: a pure function
// of an environment map (the caller passes it; the library reads no
// environment). Recognised conventions:
//   Paddle:   PADDLE_TRAINER_ID, PADDLE_TRAINERS_NUM, PADDLE_TRAINER_ENDPOINTS,
//             PADDLE_CURRENT_ENDPOINT, FLAGS_selected_gpus, PADDLE_RANK_IN_NODE
//   torchrun: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT
//   Open MPI: OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_RANK,
//             OMPI_COMM_WORLD_LOCAL_SIZE
//   Slurm:    SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID
//   ctp:      CTP_COMM_TIMEOUT (seconds), set by `ctp launch --timeout`;
//             CTP_JOB_ID, set by `ctp launch` (else torchrun's
//             TORCHELASTIC_RUN_ID): the job's identity at rendezvous
// Values that disagree between Paddle, torchrun and Open MPI are an error
// naming both variables. Slurm's describe the allocation's task, which is
// mpirun's or torchrun's daemon when one of those runs inside Slurm, so they
// are used only when no other convention names the rank.
#pragma once
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ctp {

using Environment = std::map<std::string, std::string>;

// Copies a NUL-terminated "NAME=value" array (main's envp, or environ).
Environment environment_from(const char* const* envp);

struct WorkerIdentity {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::optional<int> local_world_size;
  // Every rank's endpoint, by rank; empty when the environment lists none
  // (torchrun, mpirun and Slurm name only a master, or nothing).
  std::vector<std::string> endpoints;
  std::string current_endpoint;  // endpoints[rank], or empty
  std::vector<int> selected_gpus;  // FLAGS_selected_gpus; empty when unset
  std::optional<std::string> master_addr;
  std::optional<int> master_port;
  std::optional<std::chrono::milliseconds> comm_timeout;
  std::string job_id;  // CTP_JOB_ID, else TORCHELASTIC_RUN_ID; empty when neither is set
  // The conventions found, in the order above ("paddle", "torchrun", ...).
  std::vector<std::string> sources;
};

// The longest timeout accepted anywhere (flags, CTP_COMM_TIMEOUT): about 115
// days. Far longer ones would overflow the clocks' nanosecond deadlines.
inline constexpr double kMaxTimeoutSeconds = 1e7;

// A timeout given in seconds: positive, finite and at most
// kMaxTimeoutSeconds, rounded up to whole milliseconds. Throws ctp::Error
// naming `what` (a flag or a variable) otherwise.
std::chrono::milliseconds timeout_from_seconds(double seconds, const std::string& what);
// The same from text ("2.5"), as CTP_COMM_TIMEOUT holds it.
std::chrono::milliseconds timeout_from_text(const std::string& text, const std::string& what);

// A yes/no variable as Paddle's flags take them (FLAGS_check_nan_inf=1):
// 1/true/True/yes and 0/false/False/no/empty; nullopt when unset. Throws
// ctp::Error naming the variable on anything else.
std::optional<bool> boolean_variable(const Environment& env, const std::string& name);

// Throws ctp::Error naming the variable(s) on malformed or conflicting
// values, or on values that contradict each other (rank >= world size,
// an endpoint list of the wrong length, a current endpoint not in it).
WorkerIdentity worker_identity(const Environment& env);

}  // namespace ctp
