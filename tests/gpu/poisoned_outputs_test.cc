// Every test of ctp_gpu_tests runs with new kernel outputs poisoned: the
// buffers device_output makes (not zero-filled, executor/cuda/cuda_buffer.cc)
// start as 0xff bytes, NaN in every float type, so a kernel that leaves part
// of its output unwritten fails its test's comparison with the CPU instead
// of passing on memory that happened to be zero.
#include <gtest/gtest.h>

#include <vector>

#include "executor/cuda/device_context.h"
#include "tests/gpu/gpu_test_util.h"

namespace ctp {
namespace {

class PoisonedOutputs : public ::testing::Environment {
 public:
  void SetUp() override { cuda::set_poison_uninitialized(true); }
};
const ::testing::Environment* const poisoned_outputs =
    ::testing::AddGlobalTestEnvironment(new PoisonedOutputs);

TEST(GpuPoisonedOutputs, UninitializedBuffersStartAsAllOnes) {
  CTP_REQUIRE_GPUS(1);
  DeviceContext device(0);
  const Tensor t = Tensor::view(cuda::allocate_uninitialized_buffer(device.device(), 64), 0,
                                DataType::UINT8, {64});
  const Tensor host = device.to_host(t);
  const auto* p = static_cast<const unsigned char*>(host.raw_data());
  EXPECT_EQ(std::vector<unsigned char>(p, p + 64), std::vector<unsigned char>(64, 0xff));
  // Zero-filled as before everywhere else.
  const Tensor zeros = device.to_host(Tensor(DataType::UINT8, {64}, device.device()));
  const auto* z = static_cast<const unsigned char*>(zeros.raw_data());
  EXPECT_EQ(std::vector<unsigned char>(z, z + 64), std::vector<unsigned char>(64, 0));
}

}  // namespace
}  // namespace ctp
