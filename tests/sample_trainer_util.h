// Running ctp_sample_trainer from tests, as users run it (alone, or under
// `ctp launch --nproc N`), and reading what it printed and saved.
#pragma once
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "executor/runtime/npy.h"
#include "tests/executor_process_util.h"
#include "tests/kernels_test_util.h"

namespace ctp::test {

using Parameters = std::map<std::string, Tensor>;

// The tiny real models the trainer tests train (tests/real_model_*_test.cc).
inline const char* const kTinyResNet =
    " --model resnet --depth 18 --width 4 --image-size 64 --classes 4 --batch 8 --seed 3"
    " --log-every 1";
inline const char* const kTinyBert =
    " --model bert --layers 2 --hidden-size 32 --heads 2 --seq-len 16 --vocab 64 --classes 4"
    " --batch 4 --seed 3 --log-every 1";

struct Training {
  int exit_code = -1;
  std::string output;
  std::vector<double> losses;
  double accuracy = -1;
  std::vector<Parameters> workers;  // by worker index
};

inline Training train(const std::string& args, int processes = 1) {
  static int run = 0;
  TempDir dir("trainer" + std::to_string(run++));
  const std::string trainer = CTP_SAMPLE_TRAINER_PATH;
  const std::string command =
      processes > 1 ? std::string(CTP_CLI_PATH) + " launch --nproc " + std::to_string(processes) +
                          " --timeout 30 -- " + trainer
                    : trainer;
  const CommandResult r =
      run_command(command + " " + args + " --save-params " + dir.path().string());
  Training t{r.exit_code, r.output, {}, -1, {}};
  // Under ctp launch, rank 0's lines carry a "[rank 0] " prefix.
  const std::regex step(R"((?:^|\n)(?:\[rank 0\] )?step +\d+/\d+ \[[#-]+\] loss ([0-9.e+-]+))");
  for (auto it = std::sregex_iterator(r.output.begin(), r.output.end(), step);
       it != std::sregex_iterator(); ++it)
    t.losses.push_back(std::stod((*it)[1].str()));
  std::smatch m;
  if (std::regex_search(r.output, m, std::regex(R"(rank 0: accuracy ([0-9.]+)%)")))
    t.accuracy = std::stod(m[1].str()) / 100;
  for (int w = 0;; ++w) {
    const auto worker_dir = dir.path() / ("worker" + std::to_string(w));
    if (!std::filesystem::exists(worker_dir)) break;
    Parameters params;
    for (const auto& file : std::filesystem::directory_iterator(worker_dir))
      params[file.path().stem().string()] = read_npy_file(file.path().string());
    t.workers.push_back(std::move(params));
  }
  return t;
}

// Every parameter of every worker of `t` within `relative` of `reference`'s.
inline void expect_parameters_near(const Training& t, const Parameters& reference, double relative) {
  ASSERT_FALSE(t.workers.empty()) << t.output;
  ASSERT_FALSE(reference.empty());
  for (std::size_t w = 0; w < t.workers.size(); ++w) {
    ASSERT_EQ(t.workers[w].size(), reference.size()) << "worker " << w;
    for (const auto& [name, expected] : reference) {
      const Tensor& actual = t.workers[w].at(name);
      ASSERT_EQ(actual.shape(), expected.shape()) << name;
      double worst = 0;
      for (int64_t i = 0; i < expected.numel(); ++i) {
        const double a = element(actual, i), e = element(expected, i);
        worst = std::max(worst, std::abs(a - e) / std::max(1e-2, std::abs(e)));
      }
      EXPECT_LE(worst, relative) << "worker " << w << " parameter " << name;
    }
  }
}

inline double mean(const std::vector<double>& v, std::size_t begin, std::size_t end) {
  double s = 0;
  for (std::size_t i = begin; i < end; ++i) s += v[i];
  return s / static_cast<double>(end - begin);
}

inline bool have_gloo() {
#ifdef CTP_HAVE_GLOO
  return true;
#else
  return false;
#endif
}

}  // namespace ctp::test
