// What the GPU-vs-CPU kernel tests share (tests/gpu/kernels_*vs_cpu_test.cc):
// random inputs in FP32 and 16 bits, and running one program on the CPU and
// on GPU 0 from the same inputs to compare the outputs.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>

#include "executor/cuda/device_context.h"
#include "executor/runtime/float16.h"
#include "program_ir/builder.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/kernels_test_util.h"

namespace ctp::gpu_testing {

inline Tensor random_fp32(std::vector<int64_t> shape, uint64_t seed, double gap = 0.0) {
  const Tensor d = test::random_tensor(shape, seed, gap);
  Tensor f(DataType::FP32, shape);
  for (int64_t i = 0; i < f.numel(); ++i)
    f.data<float>()[i] = static_cast<float>(d.data<double>()[i]);
  return f;
}

// Random values in [-1, 1) (at least `gap` from 0) rounded to FP16 or BF16.
inline Tensor random_half(DataType dtype, std::vector<int64_t> shape, uint64_t seed,
                          double gap = 0.0) {
  const Tensor d = test::random_tensor(shape, seed, gap);
  Tensor h(dtype, shape);
  for (int64_t i = 0; i < h.numel(); ++i) {
    const float v = static_cast<float>(d.data<double>()[i]);
    h.data<uint16_t>()[i] =
        dtype == DataType::FP16 ? float16::from_float(v) : bfloat16::from_float(v);
  }
  return h;
}

inline Tensor labels(std::vector<int64_t> values) {
  Tensor t(DataType::INT64, {static_cast<int64_t>(values.size()), 1});
  for (std::size_t i = 0; i < values.size(); ++i) t.data<int64_t>()[i] = values[i];
  return t;
}

inline double at(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DataType::FP32: return t.data<float>()[i];
    case DataType::FP64: return t.data<double>()[i];
    case DataType::INT32: return t.data<int32_t>()[i];
    case DataType::INT64: return static_cast<double>(t.data<int64_t>()[i]);
    case DataType::FP16: return float16::to_float(t.data<uint16_t>()[i]);
    case DataType::BF16: return bfloat16::to_float(t.data<uint16_t>()[i]);
    case DataType::UINT8: return t.data<uint8_t>()[i];
    case DataType::BOOL: return t.data<bool>()[i] ? 1.0 : 0.0;
    default: ADD_FAILURE() << "unexpected dtype"; return 0;
  }
}

struct Outcome {
  std::vector<std::string> gpu_only;  // also copied to gpu_host, not compared
  bool conv_tf32 = false;             // in: DeviceContext::set_conv_tf32
  std::size_t algorithm_choices = 0;  // out: the GPU's cached algorithm choices
  std::size_t kernel_states = 0;      // out: the GPU's cached kernel states (cuDNN plans)
  Scope gpu_host;                     // the GPU scope's outputs copied to the host
  Scope cpu_host;                     // the CPU scope's outputs
  RunCounters gpu_counters;
};

// Runs `program` `steps` times on the CPU and on GPU 0 from the same inputs
// and compares `outputs` with |gpu - cpu| <= atol + rtol * |cpu|.
inline void expect_same(const Program& program, const std::map<std::string, Tensor>& inputs,
                 const std::vector<std::string>& outputs, double rtol = 1e-6, double atol = 1e-7,
                 int steps = 1, Outcome* outcome = nullptr) {
  Scope cpu, gpu;
  for (const auto& [name, t] : inputs) {
    Tensor c(t.dtype(), t.shape());
    std::memcpy(c.raw_data(), t.raw_data(), t.bytes());
    cpu.var(name) = c;
    Tensor g(t.dtype(), t.shape());
    std::memcpy(g.raw_data(), t.raw_data(), t.bytes());
    gpu.var(name) = g;
  }
  DeviceContext dc(0);
  if (outcome) dc.set_conv_tf32(outcome->conv_tf32);
  RunServices cpu_services;
  RunServices gpu_services;
  gpu_services.device = dc.device();
  gpu_services.device_context = &dc;
  Executor cpu_run(program, cpu_services);
  Executor gpu_run(program, gpu_services);
  for (int s = 0; s < steps; ++s) {
    cpu_run.run(cpu);
    gpu_run.run(gpu);
  }
  dc.synchronize();
  for (const std::string& name : outputs) {
    SCOPED_TRACE("output " + name);
    const Tensor& c = cpu.get(name);
    const Tensor& g_dev = gpu.get(name);
    EXPECT_EQ(g_dev.device(), dc.device()) << "GPU kernels must leave their outputs on the GPU";
    const Tensor g = dc.to_host(g_dev);
    ASSERT_EQ(c.dtype(), g.dtype());
    ASSERT_EQ(c.shape(), g.shape());
    int reported = 0;
    for (int64_t i = 0; i < c.numel() && reported < 5; ++i) {
      const double want = at(c, i), got = at(g, i);
      // Equal values agree even where the difference is NaN (inf and inf).
      if (!(got == want || std::abs(got - want) <= atol + rtol * std::abs(want))) {
        ADD_FAILURE() << "element " << i << ": GPU " << got << ", CPU " << want;
        ++reported;
      }
    }
    if (outcome) {
      outcome->gpu_host.var(name) = g;
      outcome->cpu_host.var(name) = c;
    }
  }
  if (outcome) {
    outcome->gpu_counters = gpu_run.services().counters;
    outcome->algorithm_choices = dc.algorithm_choice_count();
    outcome->kernel_states = dc.kernel_state_count();
    for (const std::string& name : outcome->gpu_only)
      outcome->gpu_host.var(name) = dc.to_host(gpu.get(name));
  }
}

}  // namespace ctp::gpu_testing
