// flash_attn and flash_attn_grad's CUDA kernels against their CPU kernels
// (tests/gpu/kernels_vs_cpu_util.h): out, softmax_lse and the three input
// gradients of one forward and backward, FP32 and BF16 (FP16 once), with and
// without the causal mask, on sizes that fit no tile (odd sequences, one
// head, a head_dim that is no multiple of 8, seq_q != seq_k, and rows a
// causal mask hides whole). Compared by relative L2 error over each output
// (‖gpu - cpu‖ / ‖cpu‖): the GPU's GEMMs sum in another order, and with
// 16-bit inputs it rounds P and dS to 16 bits before their products where
// the CPU keeps them in FP32 (as FlashAttention does); elements also may
// not be NaN, and infinite lse values (rows with no visible key) must match.
// 16-bit cases with head_dim 32 or 64 take the fused kernels, the others
// the cuBLAS GEMMs and row kernels.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "executor/executor.h"
#include "program_ir/builder.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/gpu/kernels_vs_cpu_util.h"

namespace ctp {
namespace {

using gpu_testing::at;
using gpu_testing::expect_same;
using gpu_testing::Outcome;

struct AttentionCase {
  int64_t batch, seq_q, seq_k, heads, head_dim;
  bool causal;
  DataType dtype;
};

std::string describe(const AttentionCase& c) {
  return std::string(to_string(c.dtype)) + " [" + std::to_string(c.batch) + ", " +
         std::to_string(c.seq_q) + "/" + std::to_string(c.seq_k) + ", " +
         std::to_string(c.heads) + ", " + std::to_string(c.head_dim) + "]" +
         (c.causal ? " causal" : "");
}

Program attention_program(bool causal) {
  ProgramBuilder pb;
  pb.op("flash_attn").in("q", "q").in("k", "k").in("v", "v").out("out", "out")
      .out("softmax", "softmax").out("softmax_lse", "lse").out("seed_offset", "seed_offset")
      .attr("dropout", 0.0f).attr("causal", causal);
  pb.op("flash_attn_grad").in("q", "q").in("k", "k").in("v", "v").in("out", "out")
      .in("softmax_lse", "lse").in("seed_offset", "seed_offset").in("out@GRAD", "dout")
      .out("q@GRAD", "dq").out("k@GRAD", "dk").out("v@GRAD", "dv")
      .attr("dropout", 0.0f).attr("causal", causal);
  return pb.build();
}

Tensor random_input(DataType dtype, std::vector<int64_t> shape, uint64_t seed) {
  return dtype == DataType::FP32 ? gpu_testing::random_fp32(std::move(shape), seed)
                                 : gpu_testing::random_half(dtype, std::move(shape), seed);
}

// ‖gpu - cpu‖ / ‖cpu‖ over the elements where either is finite; an element
// infinite on one side only counts as an infinite error.
double relative_error(const Tensor& cpu, const Tensor& gpu) {
  double diff = 0, norm = 0;
  for (int64_t i = 0; i < cpu.numel(); ++i) {
    const double want = at(cpu, i), got = at(gpu, i);
    if (std::isinf(want) && got == want) continue;
    diff += (got - want) * (got - want);
    norm += want * want;
  }
  return std::sqrt(diff / (norm > 0 ? norm : 1));
}

void expect_gpu_matches_cpu(const AttentionCase& c, double tolerance) {
  SCOPED_TRACE(describe(c));
  const uint64_t seed = static_cast<uint64_t>(c.seq_q * 131 + c.seq_k * 7 + c.head_dim);
  const std::map<std::string, Tensor> inputs = {
      {"q", random_input(c.dtype, {c.batch, c.seq_q, c.heads, c.head_dim}, seed)},
      {"k", random_input(c.dtype, {c.batch, c.seq_k, c.heads, c.head_dim}, seed + 1)},
      {"v", random_input(c.dtype, {c.batch, c.seq_k, c.heads, c.head_dim}, seed + 2)},
      {"dout", random_input(c.dtype, {c.batch, c.seq_q, c.heads, c.head_dim}, seed + 3)},
  };
  const std::vector<std::string> outputs = {"out", "lse", "dq", "dk", "dv"};
  Outcome outcome;
  // Element-wise, only NaN and a lone infinity fail; the norms below judge.
  expect_same(attention_program(c.causal), inputs, outputs, 1e30, 1e30, 1, &outcome);
  for (const std::string& name : outputs) {
    const double error =
        relative_error(outcome.cpu_host.get(name), outcome.gpu_host.get(name));
    EXPECT_LE(error, tolerance) << "output " << name;
  }
}

TEST(GpuKernels, FlashAttnFp32AsOnTheCpu) {
  CTP_REQUIRE_GPUS(1);
  for (bool causal : {false, true}) {
    expect_gpu_matches_cpu({2, 64, 64, 4, 32, causal, DataType::FP32}, 2e-5);
    expect_gpu_matches_cpu({3, 37, 53, 1, 24, causal, DataType::FP32}, 2e-5);
  }
  // More queries than keys: causal rows 0..seq_q-seq_k-1 see no key.
  expect_gpu_matches_cpu({1, 45, 29, 2, 16, true, DataType::FP32}, 2e-5);
  expect_gpu_matches_cpu({1, 1, 77, 3, 8, false, DataType::FP32}, 2e-5);
  // Rows longer than the forward's registers hold (512 keys): read twice.
  for (bool causal : {false, true})
    expect_gpu_matches_cpu({1, 5, 600, 2, 16, causal, DataType::FP32}, 2e-5);
  // BERT-large's heads (16 of 512 x 64, the most keys the forward's registers hold).
  expect_gpu_matches_cpu({1, 512, 512, 16, 64, true, DataType::FP32}, 2e-5);
}

TEST(GpuKernels, FlashAttnSixteenBitAsOnTheCpu) {
  CTP_REQUIRE_GPUS(1);
  for (bool causal : {false, true}) {
    expect_gpu_matches_cpu({2, 128, 128, 4, 64, causal, DataType::BF16}, 1e-2);
    expect_gpu_matches_cpu({2, 37, 53, 1, 24, causal, DataType::BF16}, 1e-2);
  }
  expect_gpu_matches_cpu({2, 96, 96, 2, 64, true, DataType::FP16}, 5e-3);
  // BERT-large's heads.
  expect_gpu_matches_cpu({2, 512, 512, 16, 64, false, DataType::BF16}, 1e-2);
}

// The fused kernels (16-bit, head_dim 32 or 64; fused_attention_launch.h) on
// sizes that end inside a 64-row tile, seq_q != seq_k both ways, and causal
// rows that see no key (out 0, lse +inf) or keys of one partial tile.
TEST(GpuKernels, FlashAttnFusedTilesAsOnTheCpu) {
  CTP_REQUIRE_GPUS(1);
  for (bool causal : {false, true}) {
    expect_gpu_matches_cpu({2, 77, 130, 3, 64, causal, DataType::BF16}, 1e-2);
    expect_gpu_matches_cpu({1, 130, 45, 2, 32, causal, DataType::BF16}, 1e-2);
    expect_gpu_matches_cpu({3, 200, 200, 2, 32, causal, DataType::FP16}, 5e-3);
  }
  expect_gpu_matches_cpu({1, 1, 65, 1, 64, false, DataType::FP16}, 5e-3);
}

// Runs `program` once on GPU 0 and returns `outputs` copied to the host.
std::map<std::string, Tensor> run_on_gpu(const Program& program,
                                         const std::map<std::string, Tensor>& inputs,
                                         const std::vector<std::string>& outputs) {
  DeviceContext device(0);
  RunServices services;
  services.device = device.device();
  services.device_context = &device;
  Scope scope;
  for (const auto& [name, t] : inputs) scope.var(name) = device.to_device(t);
  Executor executor(program, services);
  executor.run(scope);
  device.synchronize();
  std::map<std::string, Tensor> host;
  for (const std::string& name : outputs) host[name] = device.to_host(scope.get(name));
  return host;
}

// Batch index b of a host tensor whose first dimension is the batch.
Tensor batch_slice(const Tensor& t, int64_t b) {
  std::vector<int64_t> shape = t.shape();
  const std::size_t bytes = t.bytes() / static_cast<std::size_t>(shape[0]);
  shape[0] = 1;
  Tensor one(t.dtype(), shape);
  std::memcpy(one.raw_data(), static_cast<const char*>(t.raw_data()) + b * bytes, bytes);
  return one;
}

// An op whose scratch for every batch index at once would pass the kernels'
// round limit (512 MiB) works in rounds of batch indices. BERT-large's heads
// over 1024 tokens in BF16 take 96 MiB a batch index forward and 192 MiB
// backward, so 6 batch indices go in rounds of 5 + 1 and 2 + 2 + 2: each
// batch index's results must be those of the op run on it alone (one round).
// head_dim 48 keeps the op off the fused kernels, which have no rounds.
TEST(GpuKernels, FlashAttnInRoundsOfBatchIndicesAsOneAtATime) {
  CTP_REQUIRE_GPUS(1);
  const int64_t batch = 6, seq = 1024, heads = 16, head_dim = 48;
  std::map<std::string, Tensor> inputs;
  uint64_t seed = 91;
  for (const char* name : {"q", "k", "v", "dout"})
    inputs[name] = random_input(DataType::BF16, {batch, seq, heads, head_dim}, seed++);
  const Program program = attention_program(false);
  const std::vector<std::string> outputs = {"out", "lse", "dq", "dk", "dv"};
  const std::map<std::string, Tensor> whole = run_on_gpu(program, inputs, outputs);
  for (int64_t b = 0; b < batch; ++b) {
    SCOPED_TRACE("batch index " + std::to_string(b));
    std::map<std::string, Tensor> one;
    for (const auto& [name, t] : inputs) one[name] = batch_slice(t, b);
    const std::map<std::string, Tensor> alone = run_on_gpu(program, one, outputs);
    for (const std::string& name : outputs)
      EXPECT_LE(relative_error(alone.at(name), batch_slice(whole.at(name), b)), 1e-6)
          << "output " << name;
  }
}

}  // namespace
}  // namespace ctp
