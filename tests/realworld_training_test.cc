// A saved PaddleFL training program (../shared/realworld, skipped visibly
// when absent) trains as saved: `ctp transpile` (grad_allreduce) and then
// `ctp launch --nproc 2 -- ctp run`, each worker on its own shard of a
// learnable data set. Its loss goes down on both workers and both hold the
// same parameters at every step.
#include <cmath>
#include <filesystem>

#include "executor/runtime/npy.h"
#include "program_ir/atomic_file.h"
#include "tests/executor_process_util.h"
#include "tests/kernels_test_util.h"
#include "tests/realworld_files.h"

namespace ctp {
namespace {

using test::CommandResult;
using test::run_command;

// `rows` samples of 25 features in [-2, 2); the label says whether the first
// five features sum above 0 (what the program's one fc layer can learn).
void write_shard(const std::filesystem::path& dir, int rank, int64_t rows) {
  const std::vector<double> v = test::random_values(static_cast<std::size_t>(rows * 25),
                                                    100 + static_cast<uint64_t>(rank), -2.0, 2.0);
  Tensor x(DataType::FP32, {rows, 25});
  Tensor label(DataType::INT64, {rows, 1});
  for (int64_t r = 0; r < rows; ++r) {
    double first = 0;
    for (int64_t c = 0; c < 25; ++c) {
      x.data<float>()[r * 25 + c] = static_cast<float>(v[static_cast<std::size_t>(r * 25 + c)]);
      if (c < 5) first += v[static_cast<std::size_t>(r * 25 + c)];
    }
    label.data<int64_t>()[r] = first > 0 ? 1 : 0;
  }
  const std::string suffix = "_" + std::to_string(rank) + ".npy";
  write_file_atomically((dir / ("x" + suffix)).string(), tensor_to_npy(x));
  write_file_atomically((dir / ("label" + suffix)).string(), tensor_to_npy(label));
}

TEST(RealWorldTraining, PaddleFlProgramTrainsOnTwoWorkers) {
#ifndef CTP_HAVE_GLOO
  GTEST_SKIP() << "built without Gloo";
#endif
  const test::RealWorld world = test::find_realworld();
  if (world.files.empty()) GTEST_SKIP() << world.skip_reason;
  const std::filesystem::path programs =
      std::filesystem::path(CTP_SOURCE_DIR) / ".." / "shared" / "realworld" / "programs";
  const std::string stem = (programs / "amarnathkurup_flsmoking_trainer0_").string();
  if (!std::filesystem::exists(stem + "main.program"))
    GTEST_SKIP() << "no " << stem << "main.program";

  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("ctp_realworld_training_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  for (int rank = 0; rank < 2; ++rank) write_shard(dir, rank, 32);
  const int port = 20000 + static_cast<int>(::getpid() % 20000);
  const std::string endpoints =
      "127.0.0.1:" + std::to_string(port) + ",127.0.0.1:" + std::to_string(port + 1);
  const std::string cli = CTP_CLI_PATH, out = (dir / "out").string();
  CommandResult r = run_command(cli + " transpile --mode grad_allreduce --all-ranks --endpoints " +
                                endpoints + " --startup " + stem + "startup.program --main " +
                                stem + "main.program -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // Each worker initialises from its own seed (the startup broadcast makes
  // them equal) and reads its own shard.
  const int steps = 40;
  r = run_command(cli + " launch --nproc 2 --timeout 60 --base-port " + std::to_string(port) +
                  " -- " + cli + " run --startup '" + out + "/rank_{rank}/startup.pb' --main '" +
                  out + "/rank_{rank}/main.pb' --steps " + std::to_string(steps) +
                  " --seed-by-rank --feed 'x=" + (dir / "x_{rank}.npy").string() +
                  "' --feed 'label=" + (dir / "label_{rank}.npy").string() +
                  "' --fetch reduce_mean_0.tmp_0,fc_0.b_0,fc_0.w_0");
  std::filesystem::remove_all(dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto loss = test::printed_by_rank(r.output, "reduce_mean_0\\.tmp_0");
  const auto bias = test::printed_by_rank(r.output, "fc_0\\.b_0");
  const auto weight = test::printed_by_rank(r.output, "fc_0\\.w_0");
  ASSERT_EQ(loss.size(), 2u) << r.output;
  for (int rank = 0; rank < 2; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    ASSERT_EQ(loss.at(rank).size(), static_cast<std::size_t>(steps)) << r.output;
    const double first = std::stod(loss.at(rank).front()), last = std::stod(loss.at(rank).back());
    EXPECT_LT(last, 0.7 * first) << r.output;
  }
  EXPECT_NE(loss.at(0), loss.at(1)) << "each worker has its own shard";
  EXPECT_EQ(bias.at(0), bias.at(1)) << r.output;
  EXPECT_EQ(weight.at(0), weight.at(1)) << r.output;
  ASSERT_EQ(weight.at(0).size(), static_cast<std::size_t>(steps)) << r.output;
  EXPECT_NE(weight.at(0).front(), weight.at(0).back()) << "the parameters train";
}

}  // namespace
}  // namespace ctp
