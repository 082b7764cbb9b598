// The saved PaddleFL training programs (../shared/realworld, skipped visibly
// when absent) train as saved: `ctp transpile` (grad_allreduce) and then
// `ctp launch --nproc 2 -- ctp run`, each worker on its own shard of a
// learnable data set. Their loss goes down on both workers and both hold
// the same parameters at every step.
#include <cmath>
#include <filesystem>

#include "executor/runtime/npy.h"
#include "program_ir/atomic_file.h"
#include "tests/executor_process_util.h"
#include "tests/kernels_test_util.h"
#include "tests/launch_test_util.h"
#include "tests/realworld_files.h"

namespace ctp {
namespace {

using test::CommandResult;
using test::run_command;

// One saved trainer program: its file stem, the feature vars it feeds (each
// [rows, width] FP32; the features are split across them in order) and the
// vars it prints: the loss first, then parameters that must train alike.
struct SavedTrainer {
  std::string stem;
  std::vector<std::string> feeds;
  int64_t width;
  std::string loss;
  std::vector<std::string> params;
  std::string accuracy;  // empty: the program computes none
};

void PrintTo(const SavedTrainer& t, std::ostream* os) { *os << t.stem; }

// `rows` samples of features in [-2, 2); the label (INT64 [rows, 1]) says
// whether the first five features sum above 0, which a fc layer can learn.
void write_shard(const std::filesystem::path& dir, const SavedTrainer& t, int rank,
                 int64_t rows) {
  const int64_t columns = t.width * static_cast<int64_t>(t.feeds.size());
  const std::vector<double> v = test::random_values(static_cast<std::size_t>(rows * columns),
                                                    100 + static_cast<uint64_t>(rank), -2.0, 2.0);
  const auto value = [&](int64_t r, int64_t c) { return v[static_cast<std::size_t>(r * columns + c)]; };
  const std::string suffix = "_" + std::to_string(rank) + ".npy";
  for (std::size_t f = 0; f < t.feeds.size(); ++f) {
    Tensor x(DataType::FP32, {rows, t.width});
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < t.width; ++c)
        x.data<float>()[r * t.width + c] =
            static_cast<float>(value(r, static_cast<int64_t>(f) * t.width + c));
    write_file_atomically((dir / ("feed" + std::to_string(f) + suffix)).string(),
                          tensor_to_npy(x));
  }
  Tensor label(DataType::INT64, {rows, 1});
  for (int64_t r = 0; r < rows; ++r) {
    double first = 0;
    for (int64_t c = 0; c < 5; ++c) first += value(r, c);
    label.data<int64_t>()[r] = first > 0 ? 1 : 0;
  }
  write_file_atomically((dir / ("label" + suffix)).string(), tensor_to_npy(label));
}

std::string escaped(const std::string& var) {
  std::string out;
  for (char c : var) out += c == '.' ? std::string("\\.") : std::string(1, c);
  return out;
}

class RealWorldTraining : public ::testing::TestWithParam<SavedTrainer> {};

TEST_P(RealWorldTraining, SavedProgramTrainsOnTwoWorkers) {
#ifndef CTP_HAVE_GLOO
  GTEST_SKIP() << "built without Gloo";
#endif
  const SavedTrainer& t = GetParam();
  const test::RealWorld world = test::find_realworld();
  if (world.files.empty()) GTEST_SKIP() << world.skip_reason;
  const std::filesystem::path programs =
      std::filesystem::path(CTP_SOURCE_DIR) / ".." / "shared" / "realworld" / "programs";
  const std::string stem = (programs / t.stem).string();
  if (!std::filesystem::exists(stem + "main.program"))
    GTEST_SKIP() << "no " << stem << "main.program";

  const test::TempDir dir("realworld_training");
  for (int rank = 0; rank < 2; ++rank) write_shard(dir.path(), t, rank, 32);
  // A free pair (port, port + 1): ports from the pid collide between tests
  // that ctest runs at once with neighbouring pids.
  const int port = test::free_port_pair();
  ASSERT_NE(port, 0) << "no free pair of ports";
  const std::string endpoints =
      "127.0.0.1:" + std::to_string(port) + ",127.0.0.1:" + std::to_string(port + 1);
  const std::string cli = CTP_CLI_PATH, out = dir / "out";
  CommandResult r = run_command(cli + " transpile --mode grad_allreduce --all-ranks --endpoints " +
                                endpoints + " --startup " + stem + "startup.program --main " +
                                stem + "main.program -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // Each worker initialises from its own seed (the startup broadcast makes
  // them equal) and reads its own shard.
  const int steps = 40;
  std::string feeds, fetch = t.loss;
  for (std::size_t f = 0; f < t.feeds.size(); ++f)
    feeds += " --feed '" + t.feeds[f] + "=" + dir / ("feed" + std::to_string(f) + "_{rank}.npy") +
             "'";
  // Each printed value runs to the end of its line: the per-worker values
  // (loss, accuracy) come first so that the parameters' text holds only
  // parameters.
  if (!t.accuracy.empty()) fetch += "," + t.accuracy;
  for (const std::string& p : t.params) fetch += "," + p;
  r = run_command(cli + " launch --nproc 2 --timeout 60 --base-port " + std::to_string(port) +
                  " -- " + cli + " run --startup '" + out + "/rank_{rank}/startup.pb' --main '" +
                  out + "/rank_{rank}/main.pb' --steps " + std::to_string(steps) +
                  " --seed-by-rank" + feeds + " --feed 'label=" + dir / "label_{rank}.npy" +
                  "' --fetch " + fetch);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto loss = test::printed_by_rank(r.output, escaped(t.loss));
  ASSERT_EQ(loss.size(), 2u) << r.output;
  for (int rank = 0; rank < 2; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    ASSERT_EQ(loss.at(rank).size(), static_cast<std::size_t>(steps)) << r.output;
    const double first = std::stod(loss.at(rank).front()), last = std::stod(loss.at(rank).back());
    EXPECT_LT(last, 0.7 * first) << r.output;
  }
  EXPECT_NE(loss.at(0), loss.at(1)) << "each worker has its own shard";
  for (const std::string& p : t.params) {
    SCOPED_TRACE(p);
    const auto param = test::printed_by_rank(r.output, escaped(p));
    ASSERT_EQ(param.size(), 2u) << r.output;
    EXPECT_EQ(param.at(0), param.at(1)) << r.output;
    ASSERT_EQ(param.at(0).size(), static_cast<std::size_t>(steps)) << r.output;
    EXPECT_NE(param.at(0).front(), param.at(0).back()) << "the parameters train";
  }
  if (t.accuracy.empty()) return;
  // The accuracy the program computes on its own batch ends above its start.
  const auto accuracy = test::printed_by_rank(r.output, escaped(t.accuracy));
  ASSERT_EQ(accuracy.size(), 2u) << r.output;
  for (int rank = 0; rank < 2; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    ASSERT_EQ(accuracy.at(rank).size(), static_cast<std::size_t>(steps)) << r.output;
    const double first = std::stod(accuracy.at(rank).front());
    const double last = std::stod(accuracy.at(rank).back());
    EXPECT_GE(last, 0.8) << r.output;
    EXPECT_GT(last, first) << r.output;
  }
}

// amarnathkurup: one fc layer on 25 features (feed "x"). beiyuouo: three
// inputs of 5 features ("0", "1", "2", concatenated), three fc layers,
// top_k and accuracy.
INSTANTIATE_TEST_SUITE_P(
    PaddleFl, RealWorldTraining,
    ::testing::Values(
        SavedTrainer{"amarnathkurup_flsmoking_trainer0_", {"x"}, 25, "reduce_mean_0.tmp_0",
                     {"fc_0.b_0", "fc_0.w_0"}, ""},
        SavedTrainer{"beiyuouo_paddleflgui_trainer0_", {"0", "1", "2"}, 5, "reduce_mean_0.tmp_0",
                     {"fc_0.w_0", "fc_2.b_0"}, "accuracy_0.tmp_0"}),
    [](const ::testing::TestParamInfo<SavedTrainer>& info) {
      return info.param.stem.substr(0, info.param.stem.find('_'));
    });

}  // namespace
}  // namespace ctp
