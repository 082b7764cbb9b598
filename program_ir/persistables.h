// A program's persistable vars and a program that loads them from Paddle's
// saved files, as Paddle's fluid.io.load_persistables / load_vars build one:
// one `load` op per var reading DIR/<var name> (what save_persistables and
// save_inference_model write without a params file), or one `load_combine`
// op reading a single file that holds every var in the order of their names
// (what they write with params_filename, e.g. `__params__` or
// `*.pdiparams`). The files are Paddle's tensor format
// (ops/common/paddle_tensor_file.h).
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

}  // namespace ctp
