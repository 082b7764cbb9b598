// The element-wise kernels move 16-byte packs only when every operand is
// aligned for them (ops/cuda/packed_kernels.cu) and fall back to one element
// per step otherwise: both paths must give the same bits. Operands here sit
// one element past an aligned address, which no pack allows; lengths leave a
// tail after the last whole pack. And the compute-stream workspace the
// two-pass column sums use keeps its block until a larger one is asked for.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "executor/cuda/device_context.h"
#include "executor/runtime/float16.h"
#include "ops/cuda/device_kernels.h"
#include "tests/gpu/gpu_test_util.h"

namespace ctp {
namespace {

using cuda::launch::BFloat16;

// Device memory for `count` elements of T at an aligned address and again
// one element past one, both filled with `host`.
template <typename T>
class TwoPlacements {
 public:
  explicit TwoPlacements(const std::vector<T>& host) : count_(host.size()) {
    EXPECT_EQ(cudaMalloc(&base_, (2 * count_ + 128) * sizeof(T)), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(aligned(), host.data(), count_ * sizeof(T), cudaMemcpyHostToDevice),
              cudaSuccess);
    EXPECT_EQ(cudaMemcpy(shifted(), host.data(), count_ * sizeof(T), cudaMemcpyHostToDevice),
              cudaSuccess);
  }
  ~TwoPlacements() { cudaFree(base_); }
  TwoPlacements(const TwoPlacements&) = delete;
  TwoPlacements& operator=(const TwoPlacements&) = delete;

  T* aligned() { return static_cast<T*>(base_); }
  // A multiple of 64 elements past the (256-byte aligned) block, plus one
  // element: 2 or 4 bytes off any 16-byte boundary.
  T* shifted() { return static_cast<T*>(base_) + (count_ + 63) / 64 * 64 + 1; }

  std::vector<T> read(const T* device) const {
    std::vector<T> out(count_);
    EXPECT_EQ(cudaMemcpy(out.data(), device, count_ * sizeof(T), cudaMemcpyDeviceToHost),
              cudaSuccess);
    return out;
  }

 private:
  std::size_t count_;
  void* base_ = nullptr;
};

std::vector<float> wave(std::size_t n, float phase) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = 3.0f * std::sin(0.7f * float(i) + phase);
  return v;
}

std::vector<BFloat16> to_bf16(const std::vector<float>& v) {
  std::vector<BFloat16> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i].bits = bfloat16::from_float(v[i]);
  return out;
}

template <typename T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

TEST(GpuPackedKernels, MisalignedOperandsGiveTheBitsOfTheAlignedPath) {
  CTP_REQUIRE_GPUS(1);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  constexpr std::size_t n = 8 * 125 + 3;  // whole packs of 8 and of 4, then a tail
  cuda::launch::Stream s = nullptr;      // the legacy default stream

  TwoPlacements<BFloat16> x(to_bf16(wave(n, 0.1f))), gate(to_bf16(wave(n, 1.3f)));
  TwoPlacements<BFloat16> relu_out{std::vector<BFloat16>(n)}, grad_out{std::vector<BFloat16>(n)};
  cuda::launch::relu<BFloat16>(x.aligned(), relu_out.aligned(), n, s);
  cuda::launch::relu<BFloat16>(x.shifted(), relu_out.shifted(), n, s);
  cuda::launch::relu_grad<BFloat16>(x.aligned(), gate.aligned(), grad_out.aligned(), n, s);
  cuda::launch::relu_grad<BFloat16>(x.shifted(), gate.shifted(), grad_out.shifted(), n, s);

  TwoPlacements<float> p(wave(n, 0.5f)), g(wave(n, 2.0f)), p_out{std::vector<float>(n)};
  TwoPlacements<BFloat16> cast_out{std::vector<BFloat16>(n)};
  TwoPlacements<float> lr{std::vector<float>(1, 0.25f)};
  cuda::launch::Scalar rate{lr.aligned(), false};
  cuda::launch::sgd<float>(p.aligned(), g.aligned(), rate, p_out.aligned(), n, s);
  cuda::launch::sgd<float>(p.shifted(), g.shifted(), rate, p_out.shifted(), n, s);
  cuda::launch::cast<float, BFloat16>(p.aligned(), cast_out.aligned(), n, s);
  cuda::launch::cast<float, BFloat16>(p.shifted(), cast_out.shifted(), n, s);

  // A bias add: X [n / 8 rows, 8], Y [8] broadcast over the rows (period 8).
  constexpr std::size_t rows = n / 8, cols = 8;
  TwoPlacements<BFloat16> bias(to_bf16(wave(cols, 0.9f))), sum_out{std::vector<BFloat16>(n)};
  cuda::launch::BroadcastIndex index;
  index.rank = 2;
  index.out_shape[0] = rows;
  index.out_shape[1] = cols;
  index.x_strides[0] = cols;
  index.x_strides[1] = 1;
  index.y_strides[0] = 0;
  index.y_strides[1] = 1;
  using cuda::launch::Binary;
  cuda::launch::binary<BFloat16>(Binary::Add, x.aligned(), bias.aligned(), sum_out.aligned(),
                                 index, s);
  cuda::launch::binary<BFloat16>(Binary::Add, x.shifted(), bias.shifted(), sum_out.shifted(),
                                 index, s);
  // A gradient with the output's layout (nothing summed): Sub's Y, negated.
  TwoPlacements<BFloat16> dense_out{std::vector<BFloat16>(n)};
  cuda::launch::BroadcastIndex flat;
  flat.rank = 1;
  flat.out_shape[0] = n;
  flat.x_strides[0] = flat.y_strides[0] = 1;
  cuda::launch::binary_grad<BFloat16>(Binary::Sub, true, x.aligned(), nullptr, dense_out.aligned(),
                                      n, flat, s, nullptr);
  cuda::launch::binary_grad<BFloat16>(Binary::Sub, true, x.shifted(), nullptr, dense_out.shifted(),
                                      n, flat, s, nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

  EXPECT_TRUE(same_bits(relu_out.read(relu_out.aligned()), relu_out.read(relu_out.shifted())));
  EXPECT_TRUE(same_bits(grad_out.read(grad_out.aligned()), grad_out.read(grad_out.shifted())));
  EXPECT_TRUE(same_bits(p_out.read(p_out.aligned()), p_out.read(p_out.shifted())));
  EXPECT_TRUE(same_bits(cast_out.read(cast_out.aligned()), cast_out.read(cast_out.shifted())));
  EXPECT_TRUE(same_bits(sum_out.read(sum_out.aligned()), sum_out.read(sum_out.shifted())));
  EXPECT_TRUE(same_bits(dense_out.read(dense_out.aligned()), dense_out.read(dense_out.shifted())));

  // And the values themselves, spot-checked against the host: the tail's last
  // element and one inside the packs.
  const std::vector<float> xs = wave(n, 0.1f), ps = wave(n, 0.5f), gs = wave(n, 2.0f);
  const std::vector<BFloat16> relu = relu_out.read(relu_out.shifted());
  const std::vector<float> updated = p_out.read(p_out.shifted());
  for (std::size_t i : {std::size_t{17}, n - 1}) {
    const float xi = bfloat16::to_float(bfloat16::from_float(xs[i]));
    EXPECT_EQ(bfloat16::to_float(relu[i].bits), xi > 0 ? xi : 0.0f) << i;
    EXPECT_FLOAT_EQ(updated[i], ps[i] - 0.25f * gs[i]) << i;
  }
}

TEST(GpuDeviceContext, ComputeWorkspaceKeepsItsBlockUntilALargerOneIsAskedFor) {
  CTP_REQUIRE_GPUS(1);
  DeviceContext dc(0);
  void* first = dc.compute_workspace(1000);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(dc.compute_workspace(1 << 20), first);  // at least 1 MiB from the start
  void* larger = dc.compute_workspace(std::size_t{8} << 20);
  ASSERT_NE(larger, nullptr);
  EXPECT_EQ(cudaMemset(larger, 0, std::size_t{8} << 20), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(dc.compute_workspace(std::size_t{3} << 20), larger);
}

}  // namespace
}  // namespace ctp
