// `ctp transpile` end to end: files written, flags and Paddle's environment
// variables mapped onto the options (flags win), --all-ranks equal to one call
// per rank, a large protobuf input giving the library's bytes in every mode,
// and exit codes 1 (bad input) and 2 (bad usage).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "bench/training_program.h"
#include "program_ir/atomic_file.h"
#include "program_ir/program_io.h"
#include "program_ir/proto_io.h"
#include "program_ir/text_io.h"
#include "transpilers/transpile.h"

namespace ctp {
namespace {

namespace fs = std::filesystem;

const fs::path kCase = fs::path(CTP_SOURCE_DIR) / "tests" / "golden" /
                       "spmt_fuse1_two_hosts_n4_r3_momentum";
const std::string kEndpoints = "10.0.0.1:6170,10.0.0.2:6171,10.0.0.1:6172,10.0.0.2:6173";

class TranspilerCli : public ::testing::Test {
 protected:
  void SetUp() override {
    out_ = fs::temp_directory_path() /
           ("ctp_transpile_cli_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(out_);
  }
  void TearDown() override {
    fs::remove_all(out_);
    fs::remove(out_.string() + ".log");
  }

  // Runs `ENV ctp transpile ARGS --startup .. --main .. -o OUT`; returns the exit code.
  int run(const std::string& args, const std::string& env = "") {
    const std::string cmd = env + " " + CTP_CLI_PATH + " transpile " + args + " --startup " +
                            (kCase / "startup.json").string() + " --main " +
                            (kCase / "main.json").string() + " -o " + out_.string() +
                            " > " + (out_.string() + ".log") + " 2>&1";
    const int status = std::system(cmd.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  std::pair<Program, Program> expected(TranspileMode mode, const TranspileOptions& o) {
    Program startup = load_program_file((kCase / "startup.json").string());
    Program main = load_program_file((kCase / "main.json").string());
    transpile(mode, o, startup, main);
    return {std::move(startup), std::move(main)};
  }

  static TranspileOptions options(int rank) {
    TranspileOptions o;
    o.collective.endpoints = {"10.0.0.1:6170", "10.0.0.2:6171", "10.0.0.1:6172",
                              "10.0.0.2:6173"};
    o.collective.rank = rank;
    o.collective.current_endpoint = o.collective.endpoints[rank];
    return o;
  }

  Program output(const std::string& name) { return load_program_file((out_ / name).string()); }

  fs::path out_;
};

TEST_F(TranspilerCli, WritesBothProgramsAsProtobuf) {
  ASSERT_EQ(run("--mode grad_allreduce --nrings 3 --rank 2 --endpoints " + kEndpoints), 0);
  TranspileOptions o = options(2);
  o.collective.nrings = 3;
  auto [startup, main] = expected(TranspileMode::kGradAllReduce, o);
  EXPECT_EQ(detect_program_format(read_file((out_ / "startup.pb").string())),
            ProgramFormat::Proto);
  EXPECT_EQ(output("startup.pb"), startup);
  EXPECT_EQ(output("main.pb"), main);
}

// A large program given as protobuf, as the CLI is mostly used: with the
// two rewrites at once, the inputs' pages given back behind the writer (a
// main.pb of several of its 4 MiB steps) and the staged files' writer
// threads, every mode writes the bytes the library's transpile gives.
TEST_F(TranspilerCli, LargeProtobufInputsGiveTheLibrarysBytesInEveryMode) {
  const bench::TrainingPrograms programs = bench::make_training_programs(24000);
  const fs::path in = out_.string() + "_in";
  fs::create_directories(in);
  const std::string startup_pb = (in / "startup.pb").string();
  const std::string main_pb = (in / "main.pb").string();
  write_file_atomically(startup_pb, serialize_program_proto(programs.startup));
  write_file_atomically(main_pb, serialize_program_proto(programs.main));
  ASSERT_GT(fs::file_size(main_pb), std::uintmax_t{3} * (4 << 20));  // three steps or more
  struct Mode {
    std::string name, flags;
    TranspilerSettings settings;
  };
  const Mode modes[] = {
      {"grad_allreduce", "", {}},
      {"local_sgd", "", {}},
      {"single_process_multi_thread", "", {}},
      {"multi_thread", "", {}},
      {"multi_thread", "--trans-mode all_reduce", {{"trans-mode", "all_reduce"}}},
      {"multi_thread", "--trans-mode all_gather", {{"trans-mode", "all_gather"}}},
  };
  CollectiveOptions collective;
  collective.endpoints = {"127.0.0.1:6170", "127.0.0.1:6171"};
  collective.rank = 0;
  collective.current_endpoint = collective.endpoints[0];
  for (const Mode& mode : modes) {
    SCOPED_TRACE(mode.name + " " + mode.flags);
    fs::remove_all(out_);
    const std::string cmd = std::string(CTP_CLI_PATH) + " transpile --mode " + mode.name + " " +
                            mode.flags + " --rank 0 --endpoints 127.0.0.1:6170,127.0.0.1:6171" +
                            " --startup " + startup_pb + " --main " + main_pb + " -o " +
                            out_.string() + " > " + out_.string() + ".log 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << read_file(out_.string() + ".log");
    Program startup = load_program_file(startup_pb), main = load_program_file(main_pb);
    transpile(mode.name, collective, mode.settings, startup, main);
    EXPECT_TRUE(read_file((out_ / "startup.pb").string()) == serialize_program_proto(startup));
    EXPECT_TRUE(read_file((out_ / "main.pb").string()) == serialize_program_proto(main));
  }
  fs::remove_all(in);
}

TEST_F(TranspilerCli, EmitsJsonAndText) {
  ASSERT_EQ(run("--mode local_sgd --rank 1 --endpoints " + kEndpoints + " --emit json"), 0);
  auto [startup, main] = expected(TranspileMode::kLocalSgd, options(1));
  EXPECT_EQ(output("main.json"), main);
  fs::remove_all(out_);
  ASSERT_EQ(run("--mode local_sgd --rank 1 --endpoints " + kEndpoints + " --emit text"), 0);
  EXPECT_EQ(read_file((out_ / "startup.txt").string()), program_to_text(startup));
}

TEST_F(TranspilerCli, EnvironmentVariablesMapOntoOptionsAndFlagsWin) {
  const std::string base = "--mode single_process_multi_thread --rank 3 --endpoints " + kEndpoints;
  ASSERT_EQ(run(base, "PADDLE_FUSE_ALLREDUCE=2 PADDLE_LOSS_SCALE=0 FLAGS_selected_gpus=0,1"), 0);
  TranspileOptions o = options(3);
  o.single_process_multi_thread = {.fuse_allreduce = 2, .loss_scale = 0, .gpu_nums = 2};
  EXPECT_EQ(output("main.pb"), expected(TranspileMode::kSingleProcessMultiThread, o).second);

  fs::remove_all(out_);
  ASSERT_EQ(run(base + " --fuse-allreduce 0 --loss-scale 1 --selected-gpus 0,1,2,3",
                "PADDLE_FUSE_ALLREDUCE=2 PADDLE_LOSS_SCALE=0 FLAGS_selected_gpus=0,1"),
            0);
  o.single_process_multi_thread = {.fuse_allreduce = 0, .loss_scale = 1, .gpu_nums = 4};
  EXPECT_EQ(output("main.pb"), expected(TranspileMode::kSingleProcessMultiThread, o).second);

  fs::remove_all(out_);
  ASSERT_EQ(run(base), 0);  // unset: the reference's defaults (fuse 1, scale 1, 8 GPUs)
  EXPECT_EQ(output("main.pb"),
            expected(TranspileMode::kSingleProcessMultiThread, options(3)).second);
}

// Rank 0's main is written once and copied for the other ranks (protobuf
// streamed, JSON rendered): every rank's files are the ones a call of its own
// writes.
TEST_F(TranspilerCli, AllRanksEqualsOneCallPerRank) {
  for (const std::string emit : {"json", "pb"}) {
    SCOPED_TRACE(emit);
    fs::remove_all(out_);
    ASSERT_EQ(run("--mode multi_thread --trans-mode all_gather --nrings 2 --all-ranks "
                  "--selected-gpus 0,1 --endpoints " + kEndpoints +
                  " --emit " + (emit == "pb" ? "proto" : "json")),
              0);
    for (int rank = 0; rank < 4; ++rank) {
      TranspileOptions o = options(rank);
      o.collective.nrings = 2;
      o.multi_thread = {.trans_mode = MultiThreadTransMode::kAllGather, .gpu_num = 2};
      auto [startup, main] = expected(TranspileMode::kMultiThread, o);
      const std::string dir = "rank_" + std::to_string(rank) + "/";
      EXPECT_EQ(output(dir + "startup." + emit), startup) << dir;
      EXPECT_EQ(output(dir + "main." + emit), main) << dir;
    }
    EXPECT_FALSE(fs::exists(out_ / "rank_4"));
  }
}

// --params and --op-dialect reach the library; stderr says which parameters
// were taken and how.
TEST_F(TranspilerCli, ParamsAndOpDialect) {
  const std::string base = "--mode grad_allreduce --rank 1 --endpoints " + kEndpoints;
  ASSERT_EQ(run(base + " --op-dialect paddle3 --emit json"), 0);
  TranspileOptions o = options(1);
  o.collective.dialect = OpDialect::kPaddle3;
  auto [startup, main] = expected(TranspileMode::kGradAllReduce, o);
  EXPECT_EQ(output("startup.json"), startup);
  EXPECT_EQ(output("main.json"), main);
  EXPECT_NE(read_file(out_.string() + ".log")
                .find("ctp transpile: grad_allreduce: 4 parameters: the vars marked is_parameter"),
            std::string::npos)
      << read_file(out_.string() + ".log");
  fs::remove_all(out_);
  ASSERT_EQ(run(base + " --params optimizer"), 0);
  EXPECT_NE(read_file(out_.string() + ".log")
                .find("4 parameters: the persistable Param inputs of the main program's update "
                      "ops"),
            std::string::npos)
      << read_file(out_.string() + ".log");
  fs::remove_all(out_);
  EXPECT_EQ(run(base + " --params some"), 2);
  EXPECT_EQ(run(base + " --op-dialect paddle2"), 2);
  EXPECT_FALSE(fs::exists(out_));
}

TEST_F(TranspilerCli, UsageErrorsExitTwo) {
  const std::string eps = " --endpoints " + kEndpoints;
  EXPECT_EQ(run("--mode grad_allreduce --trans-mode all_gather --rank 0" + eps), 2);
  EXPECT_EQ(run("--mode grad_allreduce" + eps), 2);  // no --rank
  EXPECT_EQ(run("--mode box --rank 0" + eps), 2);
  EXPECT_EQ(run("--mode grad_allreduce --rank 0 --fuse-allreduce 1" + eps), 2);
  EXPECT_EQ(run("--mode single_process_multi_thread --rank 0 --fuse-allreduce 3" + eps), 2);
  EXPECT_EQ(run("--mode single_process_multi_thread --rank 0 --nrings 2" + eps), 2);
  EXPECT_EQ(run("--mode grad_allreduce --all-ranks --rank 1" + eps), 2);
  EXPECT_EQ(run("--mode grad_allreduce --rank 7" + eps), 2);  // no endpoints[7]
  EXPECT_NE(read_file(out_.string() + ".log").find("rank 7 has no entry in the endpoints"),
            std::string::npos)
      << read_file(out_.string() + ".log");
  EXPECT_EQ(run("--mode grad_allreduce --rank 0 --emit yaml" + eps), 2);
  EXPECT_EQ(run("--mode local_sgd --rank 0 --bucket-mb 25" + eps), 2);
  EXPECT_EQ(run("--mode grad_allreduce --rank 0 --bucket-mb 0" + eps), 2);
  EXPECT_EQ(run("--mode multi_thread --rank 0 --trans-mode box" + eps), 2);
  EXPECT_EQ(run("--mode grad_allreduce --rank 0 --nrings 0" + eps), 2);
  EXPECT_FALSE(fs::exists(out_));
  // The message names the modes that take the flag, from the registry.
  EXPECT_EQ(run("--mode local_sgd --rank 0 --selected-gpus 0,1" + eps), 2);
  EXPECT_NE(read_file(out_.string() + ".log")
                .find("--selected-gpus applies to --mode single_process_multi_thread and "
                      "multi_thread only"),
            std::string::npos)
      << read_file(out_.string() + ".log");
}

TEST_F(TranspilerCli, InputErrorsExitOneAndWriteNothing) {
  EXPECT_EQ(run("--mode grad_allreduce --rank 0 --endpoints 127.0.0.1:1"), 1);
  EXPECT_EQ(run("--mode grad_allreduce --rank -1 --endpoints " + kEndpoints), 1);
  EXPECT_EQ(run("--mode grad_allreduce --rank 0 --current-endpoint 9.9.9.9:1 --endpoints " +
                kEndpoints),
            1);
  EXPECT_EQ(run("--mode single_process_multi_thread --rank 0 --endpoints " + kEndpoints,
                "PADDLE_FUSE_ALLREDUCE=yes"),
            1);
  // Endpoints the executor would refuse later are refused here (issue 20).
  for (const std::string bad : {"10.0.0.2:notaport", "10.0.0.2:0", "10.0.0.2:70000"}) {
    EXPECT_EQ(run("--mode grad_allreduce --rank 0 --endpoints 10.0.0.1:6170," + bad), 1) << bad;
    EXPECT_NE(read_file(out_.string() + ".log").find("endpoint '" + bad + "' is not host:port"),
              std::string::npos)
        << read_file(out_.string() + ".log");
  }
  const std::string missing = CTP_CLI_PATH + std::string(
      " transpile --mode grad_allreduce --rank 0 --endpoints a:1,b:1 --startup /nonexistent.json "
      "--main /nonexistent.json -o ") + out_.string() + " 2> /dev/null";
  const int status = std::system(missing.c_str());
  EXPECT_EQ(WEXITSTATUS(status), 1);
  EXPECT_FALSE(fs::exists(out_));
  // The two programs are read at once: when both fail, startup's error is
  // the one reported, as reading them in turn reports it; else the one that
  // failed is named.
  auto error_for = [&](const std::string& startup, const std::string& main) {
    const std::string log = out_.string() + ".log";
    const std::string cmd = CTP_CLI_PATH + std::string(
        " transpile --mode grad_allreduce --rank 0 --endpoints a:1,b:1 --startup ") + startup +
        " --main " + main + " -o " + out_.string() + " > " + log + " 2>&1";
    EXPECT_EQ(WEXITSTATUS(std::system(cmd.c_str())), 1) << cmd;
    EXPECT_FALSE(fs::exists(out_));
    return read_file(log);
  };
  const std::string good_startup = (kCase / "startup.json").string();
  const std::string good_main = (kCase / "main.json").string();
  for (int round = 0; round < 5; ++round) {
    const std::string both = error_for("/nonexistent_startup.json", "/nonexistent_main.json");
    EXPECT_NE(both.find("/nonexistent_startup.json"), std::string::npos) << both;
    EXPECT_EQ(both.find("/nonexistent_main.json"), std::string::npos) << both;
  }
  const std::string main_only = error_for(good_startup, "/nonexistent_main.json");
  EXPECT_NE(main_only.find("/nonexistent_main.json"), std::string::npos) << main_only;
  const std::string startup_only = error_for("/nonexistent_startup.json", good_main);
  EXPECT_NE(startup_only.find("/nonexistent_startup.json"), std::string::npos) << startup_only;
  // startup.pb is staged while main is rewritten, then main.pb: an output
  // that cannot be written fails the whole transpile, startup's first when
  // both fail, and leaves nothing new behind.
  for (const bool startup_bad : {false, true}) {
    fs::remove_all(out_);
    fs::create_directories(out_ / "main.pb");
    if (startup_bad) fs::create_directories(out_ / "startup.pb");
    EXPECT_EQ(run("--mode grad_allreduce --rank 0 --endpoints " + kEndpoints), 1);
    const std::string log = read_file(out_.string() + ".log");
    EXPECT_NE(log.find(startup_bad ? "startup.pb" : "main.pb"), std::string::npos) << log;
    if (!startup_bad) EXPECT_FALSE(fs::exists(out_ / "startup.pb")) << log;
    EXPECT_TRUE(fs::is_directory(out_ / "main.pb"));
  }
  fs::remove_all(out_);
  // A rank beyond the endpoints is accepted with an explicit current endpoint, as in Paddle.
  EXPECT_EQ(run("--mode grad_allreduce --rank 9 --current-endpoint 10.0.0.1:6170 --endpoints " +
                kEndpoints),
            0);
}

}  // namespace
}  // namespace ctp
