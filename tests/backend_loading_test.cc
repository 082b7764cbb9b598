// The CUDA backend is a library of its own, loaded the first time a run asks
// for a GPU: the ctp tool neither links nor loads CUDA, cuBLAS or NCCL for
// `--version`, `dump`, `verify` or `transpile`; a copy of ctp without the
// CUDA library still works and says clearly why a GPU run cannot; `ctp
// --version` lists the backends as they are. (The CPU-only embedding is
// tests/consumer/, run by the install_consumer test.)
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "tests/executor_process_util.h"

namespace ctp {
namespace {

using test::CommandResult;
using test::run_command;

const std::regex kCudaLibrary("cuda|cublas|cudnn|nccl|ctp_cuda");
// OpenBLAS is loaded by the first matrix product (ops/cpu/gemm.cc), not by
// the commands that never multiply: its thread pool would spin in them.
const std::regex kOpenBlas("openblas");

std::string golden(const std::string& file) {
  return std::string(CTP_SOURCE_DIR) + "/tests/golden/grad_allreduce_adam_n2_r1_ring1_multihost/" +
         file;
}

// The shared objects the dynamic loader opened for one run of `command`,
// linked or loaded later (glibc's LD_DEBUG=files).
std::vector<std::string> opened_libraries(const std::string& command, int* exit_code) {
  const CommandResult r = run_command("LD_DEBUG=files " + command);
  *exit_code = r.exit_code;
  std::vector<std::string> out;
  const std::regex opened(R"(file=(\S+) +\[\d+\]; +(needed|dynamically loaded) by)");
  for (auto it = std::sregex_iterator(r.output.begin(), r.output.end(), opened);
       it != std::sregex_iterator(); ++it)
    out.push_back((*it)[1].str());
  return out;
}

TEST(BackendLoading, CtpCommandsWithoutAGpuOpenNoCudaLibrary) {
  test::TempDir dir("backend_loading");
  const std::string ctp = CTP_CLI_PATH;
  const std::vector<std::string> commands = {
      ctp + " --version",
      ctp + " dump " + golden("main.json") + " --emit text -o " + (dir / "main.txt"),
      ctp + " verify " + golden("main.json"),
      ctp + " transpile --mode grad_allreduce --rank 1 --endpoints 10.0.0.1:6170,10.0.0.2:6171"
            " --startup " + golden("startup.json") + " --main " + golden("main.json") +
            " -o " + (dir / "out"),
  };
  for (const std::string& command : commands) {
    int exit_code = -1;
    const std::vector<std::string> opened = opened_libraries(command, &exit_code);
    EXPECT_EQ(exit_code, 0) << command;
    // The loader's trace is there: ctp's own libraries are listed.
    EXPECT_NE(std::find_if(opened.begin(), opened.end(),
                           [](const std::string& f) { return f.find("libctp_ir") != f.npos; }),
              opened.end()) << command;
    for (const std::string& file : opened) {
      EXPECT_FALSE(std::regex_search(file, kCudaLibrary)) << command << " opened " << file;
      EXPECT_FALSE(std::regex_search(file, kOpenBlas)) << command << " opened " << file;
    }
  }
}

#ifdef CTP_HAVE_OPENBLAS
// A run that multiplies loads OpenBLAS when it first does.
TEST(BackendLoading, ARunThatMultipliesLoadsOpenBlas) {
  test::TempDir dir("backend_loading_blas");
  const std::string ctp = CTP_CLI_PATH;
  int exit_code = -1;
  const std::vector<std::string> opened = opened_libraries(
      ctp + " run --startup " + golden("startup.json") + " --main " + golden("main.json") +
          " --steps 1",
      &exit_code);
  EXPECT_EQ(exit_code, 0);
  EXPECT_NE(std::find_if(opened.begin(), opened.end(),
                         [](const std::string& f) { return std::regex_search(f, kOpenBlas); }),
            opened.end());
}
#endif

TEST(BackendLoading, LddOfCtpNamesNoCudaLibrary) {
  const CommandResult r = run_command(std::string("ldd ") + CTP_CLI_PATH);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("libctp_runtime"), std::string::npos) << r.output;
  EXPECT_FALSE(std::regex_search(r.output, kCudaLibrary)) << r.output;
}

TEST(BackendLoading, VersionListsTheBackendsWithoutLoadingThem) {
  const CommandResult r = run_command(std::string(CTP_CLI_PATH) + " --version");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("cpu: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("threads"), std::string::npos) << r.output;
#ifdef CTP_HAVE_GLOO
  EXPECT_NE(r.output.find("gloo"), std::string::npos) << r.output;
#endif
#ifdef CTP_CUDA_BACKEND_BUILT
  EXPECT_NE(r.output.find("cuda: nccl (loaded on demand)"), std::string::npos) << r.output;
#else
  EXPECT_EQ(r.output.find("nccl"), std::string::npos) << r.output;
#endif
}

// ctp and its libraries copied to a folder of their own, without the CUDA
// backend's library: as on a machine where it (or CUDA) is not installed.
TEST(BackendLoading, WithoutTheCudaLibraryCtpWorksAndAGpuRunSaysWhy) {
  namespace fs = std::filesystem;
  test::TempDir dir("no_cuda_backend");
  const fs::path build = fs::path(CTP_CLI_PATH).parent_path();
  fs::copy_file(CTP_CLI_PATH, dir / "ctp");
  for (const fs::directory_entry& e : fs::directory_iterator(build)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("libctp_", 0) == 0 && name.size() > 5 &&
        name.compare(name.size() - 5, 5, ".so.0") == 0 && name != "libctp_cuda.so.0")
      fs::copy_file(e.path(), dir / name);  // follows the symlink
  }
  const std::string ctp = "LD_LIBRARY_PATH=" + dir.path().string() + " " + (dir / "ctp");

  const CommandResult ldd = run_command("LD_LIBRARY_PATH=" + dir.path().string() + " ldd " +
                                        (dir / "ctp"));
  EXPECT_NE(ldd.output.find(dir / "libctp_runtime.so.0"), std::string::npos)
      << "the copy must run on its own libraries:\n" << ldd.output;
  EXPECT_EQ(run_command(ctp + " --version").exit_code, 0);
  EXPECT_EQ(run_command(ctp + " verify " + golden("main.json")).exit_code, 0);

  const CommandResult gpu = run_command(ctp + " run --device gpu --steps 1 --startup " +
                                        golden("startup.json") + " --main " + golden("main.json"));
  EXPECT_EQ(gpu.exit_code, 1) << gpu.output;
  EXPECT_NE(gpu.output.find("cannot run on gpu:0"), std::string::npos) << gpu.output;
#ifdef CTP_CUDA_BACKEND_BUILT
  const std::string missing = (dir / "libctp_cuda.so.0");
  EXPECT_NE(gpu.output.find("cannot load the cuda backend " + missing + ": "), std::string::npos)
      << gpu.output;
  EXPECT_NE(gpu.output.find("No such file or directory"), std::string::npos) << gpu.output;
  const CommandResult version = run_command(ctp + " --version");
  EXPECT_NE(version.output.find("cuda: nccl (missing: " + missing + ")"), std::string::npos)
      << version.output;
#else
  EXPECT_NE(gpu.output.find("this build of ctp has no cuda backend"), std::string::npos)
      << gpu.output;
#endif
}

}  // namespace
}  // namespace ctp
