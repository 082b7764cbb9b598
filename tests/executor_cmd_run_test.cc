// `ctp run` as a user runs it: program files in, one line per step out.
#include <filesystem>
#include <map>
#include <regex>

#include "executor/runtime/npy.h"
#include "program_ir/atomic_file.h"
#include "program_ir/program_io.h"
#include "samples/mlp_model.h"
#include "tests/executor_process_util.h"
#include "tests/kernels_test_util.h"
#include "tests/launch_test_util.h"

namespace ctp {
namespace {

using test::CommandResult;
using test::run_command;

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

// A run whose output is lost (a full disk) fails at the first step it
// cannot report, instead of training on and exiting 0.
TEST_F(ExecutorCmdRun, OutputThatCannotBeWrittenFails) {
  const CommandResult r = run_command("{ " + ctp_run("--steps 3 --batch 8") + " >/dev/full; }");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("ctp: error: cannot write to standard output: No space left on device"),
            std::string::npos)
      << r.output;
}

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

// --save-fetched writes the last step's fetched values as .npy, the same
// values the last step line prints, and nothing when the run fails.
TEST_F(ExecutorCmdRun, SavesTheLastStepsFetchedValuesAsNpy) {
  const std::string out = path("fetched");
  const CommandResult r =
      run_command(ctp_run("--steps 2 --batch 4 --fetch fc_1.b_0,fc_1.b_0@GRAD,mean_0.tmp_0 "
                          "--save-fetched " + out + "/"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Tensor loss = read_npy_file(out + "/mean_0.tmp_0.npy");
  const Tensor bias = read_npy_file(out + "/fc_1.b_0.npy");
  const Tensor grad = read_npy_file(out + "/fc_1.b_0@GRAD.npy");
  EXPECT_EQ(bias.shape(), (Shape{3}));
  EXPECT_EQ(grad.shape(), (Shape{3}));
  const std::regex last(R"(step 2/2 .*mean_0\.tmp_0 = ([0-9.e+-]+)\n)");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.output, m, last)) << r.output;
  EXPECT_NEAR(loss.data<float>()[0], std::stod(m[1].str()), 1e-5 * std::stod(m[1].str()));
  // A var that cannot be fetched fails the run and leaves no directory.
  const CommandResult bad = run_command(
      ctp_run("--steps 1 --batch 4 --fetch no_such_var --save-fetched " + path("none")));
  EXPECT_NE(bad.exit_code, 0) << bad.output;
  EXPECT_FALSE(std::filesystem::exists(path("none")));
  // TF32 convolutions are a GPU setting.
  const CommandResult cpu_tf32 = run_command(ctp_run("--conv-tf32"));
  EXPECT_EQ(cpu_tf32.exit_code, 2) << cpu_tf32.output;
  EXPECT_NE(cpu_tf32.output.find("--conv-tf32 needs --device gpu"), std::string::npos);
}

// Paddle names fetched vars with a '/' ("save_infer_model/scale_0"): such a
// var is saved in a subdirectory, as Paddle's save_vars does; a name that
// would leave the directory is refused, and nothing is written.
TEST_F(ExecutorCmdRun, FetchedVarsWithASlashAreSavedInASubdirectory) {
  Program main = programs_.main;
  Block& block = main.global_block();
  for (const std::string name : {"save_infer_model/scale_0", "../escaped"}) {
    Var copy = *block.find_var("mean_0.tmp_0");
    copy.name = name;
    block.add_var(copy);
    block.append_op(Op("scale", {{"X", {"mean_0.tmp_0"}}}, {{"Out", {name}}}));
  }
  write_file_atomically(path("slash.json"), serialize_program(main, ProgramFormat::Json));
  const std::string run = std::string(CTP_CLI_PATH) + " run --startup " + path("startup.pb") +
                          " --main " + path("slash.json") + " --steps 1 --batch 4 ";
  const CommandResult r = run_command(
      run + "--fetch mean_0.tmp_0,save_infer_model/scale_0 --save-fetched " + path("out"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Tensor loss = read_npy_file(path("out/mean_0.tmp_0.npy"));
  const Tensor scaled = read_npy_file(path("out/save_infer_model/scale_0.npy"));
  EXPECT_EQ(scaled.data<float>()[0], loss.data<float>()[0]);  // scale 1
  const CommandResult escape = run_command(
      run + "--fetch mean_0.tmp_0,../escaped --save-fetched " + path("out2"));
  EXPECT_NE(escape.exit_code, 0) << escape.output;
  EXPECT_NE(escape.output.find("--save-fetched: var '../escaped' cannot be a file name in"),
            std::string::npos)
      << escape.output;
  EXPECT_FALSE(std::filesystem::exists(path("out2")));
  EXPECT_FALSE(std::filesystem::exists(path("escaped.npy")));
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

// --input-shape NAME=D0,D1,...: the whole shape of a synthetic input, shown
// on the synthetic inputs line; bad specs are usage errors (exit 2).
TEST_F(ExecutorCmdRun, InputShapeGivesASyntheticInputItsShape) {
  CommandResult r = run_command(
      ctp_run("--batch 8 --input-shape x=5,4 --input-shape label=5,1 --fetch x"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("synthetic inputs (batch 8): x=5,4 label=5,1"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("x = [5, 4] FP32"), std::string::npos) << r.output;
  for (const char* bad : {"x", "x=", "=5,4", "x=5,,4", "x=5,0", "x=5,4a", "x=5,4 --input-shape x=6,4"}) {
    r = run_command(ctp_run(std::string("--input-shape ") + bad));
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.output;
  }
  r = run_command(ctp_run("--input-shape x=5,4a"));
  EXPECT_NE(r.output.find("--input-shape expects NAME=D0,D1,... (e.g. x=1,3,48,320), got "
                          "'x=5,4a': dim '4a' is not a whole number of 1 or more"),
            std::string::npos)
      << r.output;
  r = run_command(ctp_run("--input-shape x=5,3"));  // x is declared [-1, 4]
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("differs at dim 1, which is fixed"), std::string::npos) << r.output;
}

TEST_F(ExecutorCmdRun, RunsTranspiledProgramsUnderLaunch) {
#ifndef CTP_HAVE_GLOO
  GTEST_SKIP() << "built without Gloo";
#endif
  // A free pair (port, port + 1): ports from the pid collide between tests
  // that ctest runs at once with neighbouring pids.
  const int port = test::free_port_pair();
  ASSERT_NE(port, 0) << "no free pair of ports";
  const std::string endpoints =
      "127.0.0.1:" + std::to_string(port) + ",127.0.0.1:" + std::to_string(port + 1);
  const std::string cli = CTP_CLI_PATH;
  CommandResult r = run_command(cli + " transpile --mode grad_allreduce --all-ranks --endpoints " +
                                endpoints + " --startup " + path("startup.pb") + " --main " +
                                path("main.json") + " -o " + path("out"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // Different seeds per rank: the startup broadcast equalises them; then each
  // rank's own synthetic batch gives its own loss, but the all-reduced
  // gradients keep the parameters equal.
  r = run_command(cli + " launch --nproc 2 --timeout 30 --base-port " + std::to_string(port) +
                  " -- " + cli + " run --startup '" + path("out") + "/rank_{rank}/startup.pb' --main '" +
                  path("out") + "/rank_{rank}/main.pb' --steps 3 --batch 4 --seed-by-rank" +
                  " --fetch mean_0.tmp_0,fc_0.b_0");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto bias = test::printed_by_rank(r.output, "fc_0\\.b_0");
  const auto loss = test::printed_by_rank(r.output, "mean_0\\.tmp_0");
  ASSERT_EQ(bias.size(), 2u) << r.output;
  ASSERT_EQ(bias.at(0).size(), 3u) << r.output;
  EXPECT_EQ(bias.at(0), bias.at(1)) << r.output;
  EXPECT_NE(loss.at(0), loss.at(1)) << r.output;
}

TEST_F(ExecutorCmdRun, DrivesDeviceThreadsForSingleProcessPrograms) {
  const std::string cli = CTP_CLI_PATH;
  CommandResult r = run_command(cli + " transpile --mode single_process_multi_thread --rank 0 " +
                                "--endpoints 127.0.0.1:6170 --selected-gpus 0,1 --startup " +
                                path("startup.pb") + " --main " + path("main.json") + " -o " + path("spmt"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_command(cli + " run --startup " + path("spmt") + "/startup.pb --main " + path("spmt") +
                  "/main.pb --threads 2 --steps 2 --batch 4");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("step 2/2  mean_0.tmp_0 = "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("on 2 device threads"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace ctp
