// The inference models of ../shared/realworld (skipped visibly when absent)
// run forward in `ctp run` on the CPU when ctp has a CPU kernel for every op
// they use: parameters come from a startup program the test writes (uniform
// weights, variances of 1), inputs are ctp run's synthetic data (of the sizes
// realworld_inference_util.h gives where a model's inputs have unknown dims
// beside the batch). Each model
// that lacks kernels is listed with what it lacks (docs/realworld-models.md
// keeps that list for readers).
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <set>

#include <gtest/gtest.h>

#include "program_ir/atomic_file.h"
#include "program_ir/program_io.h"
#include "tests/executor_process_util.h"
#include "tests/realworld_files.h"
#include "tests/realworld_inference_util.h"

namespace ctp {
namespace {

using test::CommandResult;
using test::run_command;

TEST(RealWorldInference, ModelsWhoseOpsAllHaveKernelsRunForwardOnTheCpu) {
  const test::RealWorld world = test::find_realworld();
  if (world.files.empty()) GTEST_SKIP() << world.skip_reason;
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("ctp_realworld_inference_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::vector<std::string> ran;
  for (const test::RealWorldFile& file : world.files) {
    if (!file.decodable || file.path.find("/programs/") == std::string::npos) continue;
    const std::string name = std::filesystem::path(file.path).filename().string();
    Program main;
    try {
      main = load_program_file(file.path);
    } catch (const Error&) {
      continue;  // the readers' own tests cover what cannot be read
    }
    if (!test::is_inference(main)) continue;
    const std::set<std::string> missing = test::ops_without_kernel(main, DeviceKind::CPU);
    if (!missing.empty()) {
      std::string lacks;
      for (const std::string& op : missing) lacks += (lacks.empty() ? "" : ", ") + op;
      std::cout << "[ lacks    ] " << name << ": " << lacks << "\n";
      continue;
    }
    SCOPED_TRACE(name);
    // Inputs with unknown dims beside the batch need sizes (input_sizes()):
    // one such dim made 1 is no image a model is made for.
    const std::string shapes = test::input_shape_options(name, 1);
    for (const std::string& input : test::inputs_with_unknown_sizes(main))
      EXPECT_NE(shapes.find(" --input-shape " + input + "="), std::string::npos)
          << "input '" << input << "' has unknown dims beside the batch; give its sizes in "
          << "tests/realworld_inference_util.h";
    const CommandResult r = run_command(std::string(CTP_CLI_PATH) + " run --random-params --main " +
                                        file.path + " --steps 1 --batch 1" + shapes);
    EXPECT_EQ(r.exit_code, 0) << r.output.substr(0, 4000);
    EXPECT_NE(r.output.find("step 1"), std::string::npos) << r.output.substr(0, 4000);
    if (r.exit_code != 0) continue;
    std::cout << "[ runs     ] " << name << "\n";
    ran.push_back(name);
  }
  std::filesystem::remove_all(dir);
  // The tiny conv + batch_norm + relu model needs nothing but this ops.
  EXPECT_NE(std::find(ran.begin(), ran.end(), "paddlelite_simple_model.pdmodel"), ran.end());
}

}  // namespace
}  // namespace ctp
