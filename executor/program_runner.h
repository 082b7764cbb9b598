// Runs a startup program once and a main program step after step, binding
// every input the main program reads before writing (and its feed ops) to a
// caller's tensor or to deterministic synthetic data: the engine of
// `ctp run`, usable from any embedding program.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "executor/runtime/device_runtime.h"
#include "executor/executor.h"

namespace ctp {

struct ProgramRunOptions {
  int64_t batch = 1;   // replaces -1 dims of synthetic inputs
  uint64_t seed = 0;   // RunServices::seed, and the synthetic data's seed
  int rank = 0;        // mixed into the synthetic data: workers see different samples
  Device device;
  // Required when `device` is a GPU (it holds the streams kernels run on):
  // inputs are moved into it and fetched values brought back to the host.
  // Must outlive the runner and `comms`.
  DeviceRuntime* runtime = nullptr;
  CommunicatorManager* comms = nullptr;
  // Inputs bound to fixed tensors (the same every step), by var name.
  std::map<std::string, Tensor> feeds;
  // Shapes of synthetic inputs, by var name, in place of the declared shape
  // with -1 as `batch`: for inputs with unknown dims beside the batch (an OCR
  // model's image width). Each keeps the declared rank and fixed dims.
  std::map<std::string, std::vector<int64_t>> input_shapes;
  // Vars read after every step. Empty: the vars of the main program's fetch
  // ops, or else the output of its loss op (role Forward|Loss), if any.
  std::vector<std::string> fetch;
  // When set, every step of the main program is timed op by op into it
  // (executor/op_profile.h). Must outlive the runner.
  OpProfile* profile = nullptr;
  // RunServices::batch_ops: independent ops of one type in one call where
  // the device has a batch kernel for them (same results either way).
  bool batch_ops = true;
  // RunServices::check_finite: every op's outputs checked for NaN/Inf.
  bool check_finite = false;
  // A fetched value that is not finite (a diverged loss) ends the run:
  // run_step throws naming the step and the first op whose output holds a
  // non-finite value.
  bool stop_when_not_finite = true;
  // The main program frees each intermediate var after its last use in the
  // step (Executor::set_release_dead_vars), except the fetched ones and the
  // inputs (feed ops' vars too); set, every tensor stays in the scope after
  // a step.
  bool keep_all_vars = false;
};

using Fetched = std::vector<std::pair<std::string, Tensor>>;

class ProgramRunner {
 public:
  // Prepares both programs (every missing kernel is reported here) and
  // works out the main program's inputs; throws ctp::Error naming a fed var
  // that the main program does not read, or a synthetic input whose var is
  // undeclared. The programs must outlive the runner.
  ProgramRunner(const Program& startup, const Program& main, ProgramRunOptions options);

  void run_startup();
  // One step of the main program; returns the fetched vars in order, in
  // host memory (on a GPU, once the step has finished on every stream).
  Fetched run_step();

  Scope& scope() { return scope_; }
  // The inputs that get synthetic data, and the vars fetched, in order.
  const std::vector<std::string>& synthetic_inputs() const { return synthetic_; }
  const std::vector<std::string>& fetch_names() const { return fetch_; }
  int64_t steps_run() const { return steps_; }

 private:
  Tensor input_for(const std::string& name);
  Tensor synthetic_for(const std::string& name, uint64_t seed) const;
  static RunServices services_for(const ProgramRunOptions& options);

  const Block& main_block_;
  ProgramRunOptions options_;
  Executor startup_;
  Executor main_;
  Scope scope_;
  std::vector<std::string> direct_inputs_;           // set in the scope before a step
  std::vector<std::pair<int64_t, std::string>> fed_;  // feed op columns and their vars
  std::vector<std::string> synthetic_;
  std::vector<std::string> fetch_;
  bool fetch_from_ops_ = false;
  int64_t steps_ = 0;
};

// Deterministic synthetic data for a declared var: its dtype, `shape` when
// given (checked against the declared shape: the same rank, the same dims
// where they are not -1), else the declared shape with -1 replaced by
// `batch`; floats uniform in [-1, 1), integers in [0, K) where
// K is the class count or vocabulary the consuming op implies (Label of
// softmax_with_cross_entropy, Ids of lookup_table, ...; 2 when unknown),
// booleans random.
Tensor synthetic_tensor(const Block& block, const std::string& var, int64_t batch,
                        uint64_t seed, const std::vector<int64_t>* shape = nullptr);

// "[2, 3] FP32 = [0.1, 0.2, ...]" with at most `max_values` values.
std::string describe_tensor(const Tensor& tensor, std::size_t max_values = 8);

}  // namespace ctp
