// ctp.Error: every ctp::Error the library throws reaches Python as this
// exception, with the message and the place it is about as attributes.
#include <exception>
#include <string>

#include "program_ir/error.h"
#include "python/src/bindings.h"

namespace py = pybind11;

namespace ctp::python {

void bind_errors(py::module_& m) {
  // Created once with the module and kept for the life of the interpreter.
  static py::exception<Error> error_type(m, "Error");
  error_type.attr("__module__") = "ctp";  // shown as ctp.Error, where users import it
  error_type.doc() =
      "An error ctp reports: str(e) is the place and the message, as the command line prints "
      "them; e.message is the same text.";
  py::register_exception_translator([](std::exception_ptr thrown) {
    try {
      if (thrown) std::rethrow_exception(thrown);
    } catch (const Error& e) {
      // "replace": a message quoting bytes of a malformed file is still raised.
      const std::string what = e.what();
      py::object message = py::reinterpret_steal<py::object>(
          PyUnicode_DecodeUTF8(what.data(), static_cast<Py_ssize_t>(what.size()), "replace"));
      py::object error = py::reinterpret_borrow<py::object>(error_type.ptr())(message);
      error.attr("message") = message;
      PyErr_SetObject(error_type.ptr(), error.ptr());
    }
  });
}

}  // namespace ctp::python
