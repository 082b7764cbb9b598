// The parts of the extension module ctp._ctp, one function per part of the
// C++ API it wraps; module.cc calls them in order (errors first: every
// other part raises ctp.Error).
#pragma once
#include <pybind11/pybind11.h>

namespace ctp::python {

void bind_errors(pybind11::module_& m);     // errors.cc: ctp.Error
void bind_program(pybind11::module_& m);    // program_bindings.cc: Program, Block, Var, Op, I/O
void bind_builder(pybind11::module_& m);    // builder_bindings.cc: ProgramBuilder, verify
void bind_transpile(pybind11::module_& m);  // transpile_bindings.cc
void bind_executor(pybind11::module_& m);   // executor_bindings.cc: runtime, scopes, executors
void bind_samples(pybind11::module_& m);    // sample_bindings.cc: the sample MLP

}  // namespace ctp::python
