// Helpers for the GPU tests: skipping (visibly) where the machine has too
// few CUDA devices, and running one body per GPU on threads of this process.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "executor/runtime/communicator.h"
#include "executor/cuda/device_context.h"
#include "executor/runtime/kernel.h"

#define CTP_REQUIRE_GPUS(n)                                                              \
  do {                                                                                   \
    const int ctp_gpus_found_ = ::ctp::cuda_device_count();                              \
    if (ctp_gpus_found_ < (n))                                                           \
      GTEST_SKIP() << "needs " << (n) << " CUDA device(s); this machine has "            \
                   << ctp_gpus_found_;                                                   \
  } while (0)

namespace ctp::gpu_testing {

// One rank's GPU, its rings and the run services that point at both, as the
// tests' per-rank threads set them up.
struct GpuRank {
  explicit GpuRank(int gpu) : device(gpu), comms(CommOptions{std::chrono::seconds(60)}) {
    services.device = device.device();
    services.device_context = &device;
    services.comms = &comms;
  }
  GpuRank(const GpuRank&) = delete;
  GpuRank& operator=(const GpuRank&) = delete;
  DeviceContext device;
  CommunicatorManager comms;
  RunServices services;
};

// Runs body(rank) on `n` threads; rethrows the first failure as a
// std::runtime_error naming its rank.
inline void run_on_threads(int n, const std::function<void(int)>& body) {
  std::mutex mu;
  std::string failure;
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        body(r);
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(mu);
        if (failure.empty()) failure = "rank " + std::to_string(r) + ": " + e.what();
      }
    });
  for (auto& t : threads) t.join();
  if (!failure.empty()) throw std::runtime_error(failure);
}

// Expects one parameter's values `got` within `rtol` of `want`, relative to
// the parameter's scale (its largest magnitude): elementwise ratios are
// ill-conditioned for Adam, whose update of a near-zero gradient can flip
// with the last bit of the reduction order.
inline void expect_parameter_close(const std::vector<float>& want, const std::vector<float>& got,
                                   double rtol, const std::string& what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  double worst = 0, scale = 1e-6;
  for (std::size_t i = 0; i < want.size(); ++i) {
    worst = std::max(worst, std::abs(double(got[i]) - want[i]));
    scale = std::max(scale, std::abs(double(want[i])));
  }
  EXPECT_LE(worst / scale, rtol) << what;
}

}  // namespace ctp::gpu_testing
