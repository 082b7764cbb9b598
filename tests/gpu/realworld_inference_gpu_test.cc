// The inference models of ../shared/realworld that run on the CPU run on the
// GPU too, to the same outputs: `ctp run` on each device from the same
// seeded startup and the same synthetic inputs, every fetched value saved
// (--save-fetched) and compared. Skips, visibly, without a GPU or without
// ../shared/realworld.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <set>

#include <gtest/gtest.h>

#include "executor/runtime/npy.h"
#include "program_ir/atomic_file.h"
#include "program_ir/program_io.h"
#include "tests/executor_process_util.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/realworld_files.h"
#include "tests/realworld_inference_util.h"

namespace ctp {
namespace {

namespace fs = std::filesystem;

double value_at(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DataType::FP32: return t.data<float>()[i];
    case DataType::FP64: return t.data<double>()[i];
    case DataType::INT32: return t.data<int32_t>()[i];
    case DataType::INT64: return static_cast<double>(t.data<int64_t>()[i]);
    default: ADD_FAILURE() << "unexpected dtype of a fetched value"; return 0;
  }
}

// The largest difference between the two runs' fetched values, relative to
// the largest magnitude of the CPU's value (per fetched var); the name of
// the var where it is.
std::pair<double, std::string> worst_difference(const fs::path& cpu, const fs::path& gpu) {
  std::pair<double, std::string> worst{0.0, ""};
  std::size_t compared = 0;
  // Fetched vars named with a '/' are saved in subdirectories.
  for (const auto& entry : fs::recursive_directory_iterator(cpu)) {
    if (!entry.is_regular_file()) continue;
    const std::string file = entry.path().lexically_relative(cpu).string();
    const Tensor expected = read_npy_file(entry.path().string());
    if (!fs::exists(gpu / file)) {
      ADD_FAILURE() << "the GPU run saved no " << file;
      continue;
    }
    const Tensor actual = read_npy_file((gpu / file).string());
    EXPECT_EQ(actual.shape(), expected.shape()) << file;
    EXPECT_EQ(actual.dtype(), expected.dtype()) << file;
    if (actual.shape() != expected.shape() || actual.dtype() != expected.dtype()) continue;
    double scale = 0, diff = 0;
    for (int64_t i = 0; i < expected.numel(); ++i) {
      scale = std::max(scale, std::abs(value_at(expected, i)));
      diff = std::max(diff, std::abs(value_at(actual, i) - value_at(expected, i)));
    }
    const double relative = diff / std::max(scale, 1e-6);
    if (relative >= worst.first) worst = {relative, file};
    ++compared;
  }
  EXPECT_GT(compared, 0u) << "nothing was fetched in " << cpu;
  return worst;
}

// FP32 on both devices (cuDNN without TF32, ctp run's default), summed in
// other orders through tens of layers: outputs agree to 1e-3 of their scale.
constexpr double kTolerance = 1e-3;

TEST(GpuRealWorldInference, ModelsThatRunOnTheCpuGiveTheSameOutputsOnTheGpu) {
  CTP_REQUIRE_GPUS(1);
  const test::RealWorld world = test::find_realworld();
  if (world.files.empty()) GTEST_SKIP() << world.skip_reason;
  const fs::path dir = fs::temp_directory_path() /
                       ("ctp_realworld_gpu_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::size_t ran = 0;
  for (const test::RealWorldFile& file : world.files) {
    if (!file.decodable || file.path.find("/programs/") == std::string::npos) continue;
    const std::string name = fs::path(file.path).filename().string();
    Program main;
    try {
      main = load_program_file(file.path);
    } catch (const Error&) {
      continue;
    }
    if (!test::is_inference(main) || !test::ops_without_kernel(main, DeviceKind::CPU).empty())
      continue;
    const std::set<std::string> missing = test::ops_without_kernel(main, DeviceKind::CUDA);
    if (!missing.empty()) {
      std::string lacks;
      for (const std::string& op : missing) lacks += (lacks.empty() ? "" : ", ") + op;
      std::cout << "[ no gpu   ] " << name << ": " << lacks << "\n";
      continue;
    }
    SCOPED_TRACE(name);
    const auto run_on = [&](const std::string& device) {
      const fs::path out = dir / (name + "." + device);
      const test::CommandResult r = test::run_command(
          std::string(CTP_CLI_PATH) + " run --random-params --main " +
          file.path + " --steps 1 --batch 2 --device " + device + " --save-fetched " +
          out.string() + test::input_shape_options(name, 2));
      EXPECT_EQ(r.exit_code, 0) << device << ": " << r.output.substr(0, 4000);
      return r.exit_code == 0 ? out : fs::path();
    };
    const fs::path cpu = run_on("cpu"), gpu = run_on("gpu");
    if (cpu.empty() || gpu.empty()) continue;
    const auto [worst, where] = worst_difference(cpu, gpu);
    std::cout << "[ gpu=cpu  ] " << name << ": worst " << worst << " of the scale (" << where
              << ")\n";
    EXPECT_LE(worst, kTolerance) << where;
    ++ran;
  }
  fs::remove_all(dir);
  EXPECT_GT(ran, 0u) << "no real model ran on both devices";
}

}  // namespace
}  // namespace ctp
