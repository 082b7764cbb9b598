// The inference models of ../shared/realworld (skipped visibly when absent)
// run forward in `ctp run` on the CPU when ctp has a CPU kernel for every op
// they use: parameters come from a startup program the test writes (uniform
// weights, variances of 1), inputs are ctp run's synthetic data. Each model
// that lacks kernels is listed with what it lacks (docs/realworld-models.md
// keeps that list for readers).
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <set>

#include <gtest/gtest.h>

#include "executor/runtime/kernel.h"
#include "program_ir/atomic_file.h"
#include "program_ir/builder.h"
#include "program_ir/program_io.h"
#include "tests/executor_process_util.h"
#include "tests/realworld_files.h"

namespace ctp {
namespace {

using test::CommandResult;
using test::run_command;

// The op types of `program` without a CPU kernel; empty when it can run.
std::set<std::string> ops_without_cpu_kernel(const Program& program) {
  std::set<std::string> missing;
  for (const Block& block : program.blocks)
    for (const Op& op : block.ops())
      if (!KernelRegistry::global().find(op.type, DeviceKind::CPU)) missing.insert(op.type);
  return missing;
}

bool is_inference(const Program& program) {
  bool feeds = false;
  for (const Op& op : program.global_block().ops()) {
    if (op.type.size() > 5 && op.type.ends_with("_grad")) return false;
    if (op.type == "feed") feeds = true;
  }
  return feeds;
}

// Values for the model's parameters: every persistable tensor an op reads
// gets small uniform values, batch_norm's variances 1.
Program startup_for(const Program& main) {
  std::set<std::string> read, variances;
  for (const Op& op : main.global_block().ops()) {
    for (const Slot& slot : op.inputs)
      for (const std::string& name : slot.args) read.insert(name);
    if (const auto* names = op.input("Variance"); names && op.type == "batch_norm")
      variances.insert(names->begin(), names->end());
  }
  ProgramBuilder pb;
  int32_t seed = 1;
  for (const Var& v : main.global_block().vars()) {
    if (!v.persistable || v.type != VarKind::LOD_TENSOR || !read.count(v.name)) continue;
    pb.persistable(v.name, v.shape, v.dtype);
    const auto shape = Attribute(v.shape);
    const auto dtype = Attribute(static_cast<int32_t>(v.dtype));
    if (variances.count(v.name)) {
      pb.op("fill_constant").out("Out", v.name).attr("shape", shape).attr("dtype", dtype)
          .attr("value", Attribute(1.0f));
    } else {
      pb.op("uniform_random").out("Out", v.name).attr("shape", shape).attr("dtype", dtype)
          .attr("min", Attribute(-0.1f)).attr("max", Attribute(0.1f))
          .attr("seed", Attribute(seed++));
    }
  }
  return pb.build();
}

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
    if (!is_inference(main)) continue;
    const std::set<std::string> missing = ops_without_cpu_kernel(main);
    if (!missing.empty()) {
      std::string lacks;
      for (const std::string& op : missing) lacks += (lacks.empty() ? "" : ", ") + op;
      std::cout << "[ lacks    ] " << name << ": " << lacks << "\n";
      continue;
    }
    SCOPED_TRACE(name);
    const std::string startup = (dir / (name + ".startup.json")).string();
    write_file_atomically(startup, serialize_program(startup_for(main), ProgramFormat::Json));
    const CommandResult r = run_command(std::string(CTP_CLI_PATH) + " run --startup " + startup +
                                        " --main " + file.path + " --steps 1 --batch 1");
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
