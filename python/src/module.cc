// ctp._ctp, the extension module behind `import ctp` (python/ctp/__init__.py
// re-exports it and adds what is plain Python).
#include <pybind11/pybind11.h>

#include "python/src/bindings.h"

PYBIND11_MODULE(_ctp, m) {
  m.doc() = "ctp: Paddle static programs, the collective transpilers and the executor";
  m.attr("__version__") = CTP_VERSION;
  ctp::python::bind_errors(m);
  ctp::python::bind_program(m);
  ctp::python::bind_builder(m);
  ctp::python::bind_transpile(m);
  ctp::python::bind_executor(m);
  ctp::python::bind_samples(m);
}
