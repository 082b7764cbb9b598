// `ctp run` as a user runs it: program files in, one line per step out.
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <regex>

#include "executor/npy.h"
#include "program_ir/atomic_file.h"
#include "program_ir/program_io.h"
#include "samples/mlp_model.h"
#include "tests/kernels_test_util.h"

namespace ctp {
namespace {

struct CommandResult {
  int exit_code;
  std::string output;
};

CommandResult run_command(const std::string& command) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return {-1, "popen failed"};
  std::string output;
  char buffer[4096];
  while (std::size_t n = fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

class ExecutorCmdRun : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("ctp_cmd_run_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    samples::MlpConfig c;
    c.input_dim = 4;
    c.classes = 3;
    c.init_seed = 1;
    programs_ = samples::build_mlp(c);
    write_file_atomically(path("startup.pb"), serialize_program(programs_.startup, ProgramFormat::Proto));
    write_file_atomically(path("main.json"), serialize_program(programs_.main, ProgramFormat::Json));
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string ctp_run(const std::string& extra) const {
    return std::string(CTP_CLI_PATH) + " run --startup " + path("startup.pb") + " --main " +
           path("main.json") + " " + extra;
  }

  std::filesystem::path dir_;
  samples::MlpPrograms programs_;
};

TEST_F(ExecutorCmdRun, PrintsTheLossOfEveryStep) {
  const CommandResult r = run_command(ctp_run("--steps 4 --batch 8 --seed 5"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("synthetic inputs (batch 8): x label"), std::string::npos) << r.output;
  const std::regex line(R"(step (\d)/4  mean_0\.tmp_0 = ([0-9.e+-]+)\n)");
  int steps = 0;
  for (auto it = std::sregex_iterator(r.output.begin(), r.output.end(), line);
       it != std::sregex_iterator(); ++it) {
    EXPECT_EQ(std::stoi((*it)[1].str()), ++steps);
    const double loss = std::stod((*it)[2].str());
    EXPECT_GT(loss, 0.1);  // three classes, random labels: about log(3)
    EXPECT_LT(loss, 5.0);
  }
  EXPECT_EQ(steps, 4) << r.output;
  // The same seed gives the same run.
  const CommandResult again = run_command(ctp_run("--steps 4 --batch 8 --seed 5"));
  EXPECT_EQ(again.output.substr(0, again.output.rfind("ran startup")),
            r.output.substr(0, r.output.rfind("ran startup")));
}

TEST_F(ExecutorCmdRun, FeedsNpyFilesAndFetchesNamedVars) {
  write_file_atomically(path("x.npy"),
                        tensor_to_npy(test::tensor<float>({2, 4}, {1, 0, 0, 0, 0, 1, 0, 0})));
  write_file_atomically(path("y.npy"), tensor_to_npy(test::tensor<int64_t>({2, 1}, {2, 0})));
  const CommandResult r = run_command(
      ctp_run("--steps 30 --feed x=" + path("x.npy") + " --feed label=" + path("y.npy") +
              " --fetch fc_1.b_0,mean_0.tmp_0"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("synthetic inputs"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("step 1/30  fc_1.b_0 = [3] FP32 = ["), std::string::npos) << r.output;
  const std::regex loss(R"(step (\d+)/30 .*mean_0\.tmp_0 = ([0-9.e+-]+)\n)");
  std::vector<double> losses;
  for (auto it = std::sregex_iterator(r.output.begin(), r.output.end(), loss);
       it != std::sregex_iterator(); ++it)
    losses.push_back(std::stod((*it)[2].str()));
  ASSERT_EQ(losses.size(), 30u) << r.output;
  EXPECT_LT(losses.back(), 0.5 * losses.front());  // one fixed batch is learned
}

TEST_F(ExecutorCmdRun, ErrorsExitNonZeroWithThePlace) {
  Program broken = programs_.main;
  broken.global_block().append_op(Op("no_such_op"));
  write_file_atomically(path("broken.pb"), serialize_program(broken, ProgramFormat::Proto));
  CommandResult r = run_command(std::string(CTP_CLI_PATH) + " run --startup " + path("startup.pb") +
                                " --main " + path("broken.pb"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("op 19 'no_such_op': unknown op"), std::string::npos) << r.output;
  r = run_command(ctp_run("--feed fc_0.w_0=" + path("startup.pb")));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("not a .npy file"), std::string::npos) << r.output;
  r = run_command(ctp_run("--batch 0"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  r = run_command(ctp_run("--rank 2 --world-size 2"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
}

}  // namespace
}  // namespace ctp
