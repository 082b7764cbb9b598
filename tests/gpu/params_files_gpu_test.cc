// load_combine / save_combine in a GPU run (ops/cuda/io_kernels_cuda.cc):
// parameters read from Paddle's tensor file land on the GPU and give the
// CPU's product; a save from the GPU writes the CPU's bytes.
#include <gtest/gtest.h>

#include <optional>

#include "program_ir/atomic_file.h"
#include "program_ir/builder.h"
#include "tests/executor_process_util.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/gpu/kernels_vs_cpu_util.h"

namespace ctp {
namespace {

TEST(GpuKernels, LoadCombineAndSaveCombineAsOnTheCpu) {
  CTP_REQUIRE_GPUS(1);
  test::TempDir dir("gpu_params");
  {
    ProgramBuilder writer;
    writer.op("save_combine").in("X", std::vector<std::string>{"w", "b"})
        .attr("file_path", Attribute(dir / "params"));
    Scope s;
    s.var("w") = gpu_testing::random_fp32({16, 8}, 80);
    s.var("b") = gpu_testing::random_fp32({8}, 81);
    const Program program = writer.build();
    Executor(program, RunServices{}).run(s);
  }
  for (const std::string device : {"cpu", "gpu"}) {
    ProgramBuilder pb;
    pb.op("load_combine").out("Out", std::vector<std::string>{"w", "b"})
        .attr("file_path", Attribute(dir / "params"));
    pb.op("mul").in("X", "x").in("Y", "w").out("Out", "y");
    pb.op("save_combine").in("X", std::vector<std::string>{"w", "y"})
        .attr("file_path", Attribute(dir / ("out_" + device)));
    Scope s;
    s.var("x") = gpu_testing::random_fp32({4, 16}, 82);
    std::optional<DeviceContext> dc;
    RunServices services;
    if (device == "gpu") {
      dc.emplace(0);
      services.device = dc->device();
      services.device_context = &*dc;
    }
    const Program program = pb.build();
    Executor(program, services).run(s);
    if (dc) dc->synchronize();
  }
  // w round-trips exactly; y (cuBLAS against the CPU's loops) within FP32 rounding,
  // so compare w's bytes and y's values.
  const std::string cpu = read_file(dir / "out_cpu"), gpu = read_file(dir / "out_gpu");
  ASSERT_EQ(cpu.size(), gpu.size());
  const std::size_t w_bytes = 20 + 6 + 16 * 8 * 4;  // header, TensorDesc {5, 16, 8}, data
  EXPECT_EQ(cpu.substr(0, w_bytes), gpu.substr(0, w_bytes));
  const float* yc = reinterpret_cast<const float*>(cpu.data() + cpu.size() - 4 * 8 * 4);
  const float* yg = reinterpret_cast<const float*>(gpu.data() + gpu.size() - 4 * 8 * 4);
  for (int i = 0; i < 32; ++i) EXPECT_NEAR(yc[i], yg[i], 1e-5) << i;
}

}  // namespace
}  // namespace ctp
