// Worker identity from the launchers' environment variables: Paddle's,
// torchrun's, Open MPI's and Slurm's conventions, their agreement, and the
// errors for malformed and conflicting values.
#include <gtest/gtest.h>

#include "executor/worker_env.h"
#include "program_ir/error.h"

namespace ctp {
namespace {

std::string error_of(const Environment& env) {
  try {
    worker_identity(env);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(LaunchWorkerEnv, NothingSetIsASingleWorker) {
  WorkerIdentity id = worker_identity({});
  EXPECT_EQ(id.rank, 0);
  EXPECT_EQ(id.world_size, 1);
  EXPECT_EQ(id.local_rank, 0);
  EXPECT_TRUE(id.endpoints.empty());
  EXPECT_TRUE(id.sources.empty());
}

TEST(LaunchWorkerEnv, PaddleVariables) {
  WorkerIdentity id = worker_identity({
      {"PADDLE_TRAINER_ID", "1"},
      {"PADDLE_TRAINERS_NUM", "3"},
      {"PADDLE_TRAINER_ENDPOINTS", "10.0.0.1:6170,10.0.0.1:6171,10.0.0.2:6170"},
      {"PADDLE_CURRENT_ENDPOINT", "10.0.0.1:6171"},
      {"FLAGS_selected_gpus", "2,3"},
  });
  EXPECT_EQ(id.rank, 1);
  EXPECT_EQ(id.world_size, 3);
  EXPECT_EQ(id.endpoints, (std::vector<std::string>{"10.0.0.1:6170", "10.0.0.1:6171", "10.0.0.2:6170"}));
  EXPECT_EQ(id.current_endpoint, "10.0.0.1:6171");
  EXPECT_EQ(id.selected_gpus, (std::vector<int>{2, 3}));
  EXPECT_EQ(id.sources, (std::vector<std::string>{"paddle"}));
}

TEST(LaunchWorkerEnv, CurrentEndpointDefaultsToTheRanksEntry) {
  WorkerIdentity id = worker_identity({{"PADDLE_TRAINER_ID", "1"},
                                       {"PADDLE_TRAINER_ENDPOINTS", "a:1,b:2"}});
  EXPECT_EQ(id.world_size, 2);
  EXPECT_EQ(id.current_endpoint, "b:2");
}

TEST(LaunchWorkerEnv, TorchrunVariables) {
  WorkerIdentity id = worker_identity({{"RANK", "5"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"},
                                       {"LOCAL_WORLD_SIZE", "4"}, {"MASTER_ADDR", "node0"},
                                       {"MASTER_PORT", "29500"}});
  EXPECT_EQ(id.rank, 5);
  EXPECT_EQ(id.world_size, 8);
  EXPECT_EQ(id.local_rank, 1);
  EXPECT_EQ(id.local_world_size, 4);
  EXPECT_EQ(id.master_addr, "node0");
  EXPECT_EQ(id.master_port, 29500);
  EXPECT_EQ(id.sources, (std::vector<std::string>{"torchrun"}));
}

// The job's identity at rendezvous: ctp launch's CTP_JOB_ID, else
// torchrun's run id; none when neither is set.
TEST(LaunchWorkerEnv, JobId) {
  EXPECT_EQ(worker_identity({}).job_id, "");
  EXPECT_EQ(worker_identity({{"TORCHELASTIC_RUN_ID", "r1"}}).job_id, "r1");
  EXPECT_EQ(worker_identity({{"CTP_JOB_ID", "c1"}, {"TORCHELASTIC_RUN_ID", "r1"}}).job_id, "c1");
}

TEST(LaunchWorkerEnv, OpenMpiAndSlurm) {
  WorkerIdentity mpi = worker_identity({{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "4"},
                                        {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                        {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
  EXPECT_EQ(mpi.rank, 3);
  EXPECT_EQ(mpi.world_size, 4);
  EXPECT_EQ(mpi.local_rank, 1);
  EXPECT_EQ(mpi.local_world_size, 2);
  EXPECT_EQ(mpi.sources, (std::vector<std::string>{"openmpi"}));

  WorkerIdentity slurm = worker_identity({{"SLURM_PROCID", "6"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "2"}});
  EXPECT_EQ(slurm.rank, 6);
  EXPECT_EQ(slurm.world_size, 8);
  EXPECT_EQ(slurm.local_rank, 2);
  EXPECT_EQ(slurm.sources, (std::vector<std::string>{"slurm"}));

  // mpirun inside a Slurm allocation: Slurm's task variables describe
  // mpirun's daemon, so Open MPI's win and no conflict is reported.
  WorkerIdentity nested = worker_identity({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"},
                                           {"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "4"}});
  EXPECT_EQ(nested.rank, 3);
  EXPECT_EQ(nested.sources, (std::vector<std::string>{"openmpi"}));
}

TEST(LaunchWorkerEnv, AgreeingConventionsAreAccepted) {
  // What `ctp launch` sets: Paddle's and torchrun's together.
  WorkerIdentity id = worker_identity({{"PADDLE_TRAINER_ID", "1"}, {"PADDLE_TRAINERS_NUM", "2"},
                                       {"RANK", "1"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "1"},
                                       {"PADDLE_TRAINER_ENDPOINTS", "127.0.0.1:1,127.0.0.1:2"},
                                       {"PADDLE_CURRENT_ENDPOINT", "127.0.0.1:2"},
                                       {"CTP_COMM_TIMEOUT", "2.5"}});
  EXPECT_EQ(id.rank, 1);
  EXPECT_EQ(id.sources, (std::vector<std::string>{"paddle", "torchrun"}));
  EXPECT_EQ(id.comm_timeout, std::chrono::milliseconds(2500));
}

TEST(LaunchWorkerEnv, ConflictsAreErrorsNamingBothVariables) {
  EXPECT_EQ(error_of({{"PADDLE_TRAINER_ID", "0"}, {"PADDLE_TRAINERS_NUM", "2"}, {"RANK", "1"},
                      {"WORLD_SIZE", "2"}}),
            "conflicting ranks: PADDLE_TRAINER_ID=0 but RANK=1 (two launchers set different "
            "values; unset the stale ones)");
  EXPECT_NE(error_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_RANK", "0"},
                      {"OMPI_COMM_WORLD_SIZE", "4"}})
                .find("conflicting world sizes: WORLD_SIZE=2 but OMPI_COMM_WORLD_SIZE=4"),
            std::string::npos);
  EXPECT_NE(error_of({{"PADDLE_TRAINER_ID", "0"}, {"PADDLE_TRAINERS_NUM", "3"},
                      {"PADDLE_TRAINER_ENDPOINTS", "a:1,b:2"}})
                .find("PADDLE_TRAINER_ENDPOINTS lists 2 endpoints but PADDLE_TRAINERS_NUM=3"),
            std::string::npos);
  EXPECT_NE(error_of({{"PADDLE_TRAINER_ID", "0"}, {"PADDLE_TRAINER_ENDPOINTS", "a:1,b:2"},
                      {"PADDLE_CURRENT_ENDPOINT", "b:2"}})
                .find("PADDLE_CURRENT_ENDPOINT=b:2 is entry 1 of PADDLE_TRAINER_ENDPOINTS but the rank is 0"),
            std::string::npos);
  EXPECT_NE(error_of({{"LOCAL_RANK", "1"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "0"}}).find("conflicting local ranks"),
            std::string::npos);
}

TEST(LaunchWorkerEnv, MalformedAndInconsistentValues) {
  EXPECT_NE(error_of({{"RANK", "one"}, {"WORLD_SIZE", "2"}}).find("RANK='one' is not a non-negative integer"),
            std::string::npos);
  EXPECT_NE(error_of({{"RANK", "-1"}, {"WORLD_SIZE", "2"}}).find("RANK='-1'"), std::string::npos);
  EXPECT_NE(error_of({{"RANK", "2"}, {"WORLD_SIZE", "2"}}).find("rank 2 (RANK) is not below the world size 2"),
            std::string::npos);
  EXPECT_NE(error_of({{"RANK", "1"}}).find("RANK is set but no world size is"), std::string::npos);
  EXPECT_NE(error_of({{"WORLD_SIZE", "0"}}).find("at least one worker"), std::string::npos);
  EXPECT_NE(error_of({{"PADDLE_TRAINER_ENDPOINTS", "a:1,a:1"}}).find("lists an endpoint twice"),
            std::string::npos);
  EXPECT_NE(error_of({{"PADDLE_TRAINER_ENDPOINTS", "a:1,b"}}).find("PADDLE_TRAINER_ENDPOINTS 'b'"),
            std::string::npos);
  EXPECT_NE(error_of({{"PADDLE_TRAINER_ENDPOINTS", "a:1"}, {"PADDLE_CURRENT_ENDPOINT", "c:3"}})
                .find("is not in PADDLE_TRAINER_ENDPOINTS"),
            std::string::npos);
  EXPECT_NE(error_of({{"FLAGS_selected_gpus", "0,x"}}).find("FLAGS_selected_gpus='x'"), std::string::npos);
  EXPECT_NE(error_of({{"MASTER_PORT", "70000"}}).find("not a port"), std::string::npos);
  EXPECT_NE(error_of({{"CTP_COMM_TIMEOUT", "0"}}).find("positive number of seconds"), std::string::npos);
  EXPECT_NE(error_of({{"LOCAL_RANK", "2"}, {"LOCAL_WORLD_SIZE", "2"}}).find("local rank 2"), std::string::npos);
}

TEST(LaunchWorkerEnv, EnvironmentFromEnvp) {
  const char* envp[] = {"RANK=1", "WORLD_SIZE=2", "EMPTY=", "WEIRD", "A=b=c", nullptr};
  Environment env = environment_from(envp);
  EXPECT_EQ(env.at("RANK"), "1");
  EXPECT_EQ(env.at("EMPTY"), "");
  EXPECT_EQ(env.at("A"), "b=c");
  EXPECT_EQ(env.count("WEIRD"), 0u);
  EXPECT_EQ(worker_identity(env).rank, 1);
}

}  // namespace
}  // namespace ctp
