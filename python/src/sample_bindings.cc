// ctp.samples.mlp: the sample MLP classifier's programs (samples/mlp_model.h),
// the model the C++ sample trainer trains, for the Python sample trainer
// (samples/python_trainer.py) and the tests.
#include <string>
#include <vector>

#include <pybind11/stl.h>

#include "python/src/bindings.h"
#include "samples/mlp_model.h"

namespace py = pybind11;
using namespace py::literals;

namespace ctp::python {

void bind_samples(py::module_& m) {
  py::module_ samples = m.def_submodule("samples", "The sample model of samples/");
  py::class_<samples::MlpPrograms>(samples, "MlpPrograms",
                                   "The MLP's startup, main (forward, backward, optimizer) and "
                                   "eval programs and the names of its vars")
      .def_readonly("startup", &samples::MlpPrograms::startup)
      .def_readonly("main", &samples::MlpPrograms::main)
      .def_readonly("eval", &samples::MlpPrograms::eval)
      .def_readonly("input", &samples::MlpPrograms::input, "[-1, input_dim] features")
      .def_readonly("label", &samples::MlpPrograms::label, "[-1, 1] INT64 classes")
      .def_readonly("loss", &samples::MlpPrograms::loss, "[1] mean cross entropy")
      .def_readonly("probabilities", &samples::MlpPrograms::probabilities)
      .def_readonly("parameters", &samples::MlpPrograms::parameters);
  samples.def(
      "mlp",
      [](int64_t input_dim, std::vector<int64_t> hidden, int64_t classes,
         const std::string& optimizer, float learning_rate) {
        samples::MlpConfig c;
        c.input_dim = input_dim;
        c.hidden = std::move(hidden);
        c.classes = classes;
        c.optimizer = samples::optimizer_from_string(optimizer);
        c.learning_rate = learning_rate;
        return samples::build_mlp(c);
      },
      "input_dim"_a = 2, "hidden"_a = std::vector<int64_t>{32}, "classes"_a = 3,
      "optimizer"_a = "sgd", "learning_rate"_a = 0.1f,
      "The sample MLP: relu layers of the hidden widths, softmax cross entropy, and the "
      "optimizer ('sgd', 'momentum' or 'adam'); initializers follow the run's seed");
}

}  // namespace ctp::python
