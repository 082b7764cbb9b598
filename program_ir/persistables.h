// A program's persistable vars; a program that loads them from Paddle's
// saved files, as Paddle's fluid.io.load_persistables / load_vars build one:
// one `load` op per var reading DIR/<var name> (what save_persistables and
// save_inference_model write without a params file), or one `load_combine`
// op reading a single file that holds every var in the order of their names
// (what they write with params_filename, e.g. `__params__` or
// `*.pdiparams`). The files are Paddle's tensor format
// (ops/common/paddle_tensor_file.h). And, for a model whose saved values
// are not at hand, a program that gives its parameters random values.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "program_ir/program.h"

namespace ctp {

// The names of the persistable LOD_TENSOR vars of `program`'s global block,
// sorted (Paddle's order in a combined file). Feed, fetch and reader vars
// are not parameters and are left out; a persistable var of another kind
// (SELECTED_ROWS, LOD_TENSOR_ARRAY, ...) is a ctp::Error naming it, since
// ctp cannot load it.
std::vector<std::string> persistable_tensor_names(const Program& program);

struct LoadPersistablesOptions {
  // Per-var files: dir/<var name> (a '/' in a name is a subdirectory, as Paddle's).
  std::string dir;
  // One combined file instead (a full path), read by one load_combine.
  std::optional<std::string> combined_file;
};

// A startup-like program that declares `main`'s persistable tensors as `main`
// declares them and loads each one.
Program load_persistables_program(const Program& main, const LoadPersistablesOptions& options);

struct RandomPersistablesOptions {
  float min = -0.1f, max = 0.1f;
  // The seed of the first var's uniform_random op; each next one gets the
  // next seed (in the order `main` declares them), so that the values are
  // the same on every run and device.
  int32_t first_seed = 1;
};

// A startup program that gives every persistable LOD_TENSOR of `main`'s
// global block that an op reads uniform values in [min, max), except
// batch_norm's Variance inputs, which get 1 (a negative variance has no
// square root). Paddle's saved inference programs carry no values: this lets
// `ctp run --random-params` time or try such a model without its weights.
Program random_persistables_program(const Program& main,
                                    const RandomPersistablesOptions& options = {});

}  // namespace ctp
