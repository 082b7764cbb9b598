// ctp.Error: every ctp::Error the library throws reaches Python as this
// exception, with its message and its place (ctp.SourceLocation, the fields
// of program_ir/source_location.h) as attributes.
#include <exception>
#include <optional>
#include <string>

#include <pybind11/operators.h>
#include <pybind11/stl.h>

#include "program_ir/error.h"
#include "program_ir/source_location.h"
#include "python/src/bindings.h"
#include "python/src/values.h"

namespace py = pybind11;

namespace ctp::python {
namespace {

// Unknown parts read as None: -1 for positions and counts, 0 for a line or
// column, "" for names.
std::optional<int64_t> known(int64_t value, int64_t unknown = -1) {
  if (value == unknown) return std::nullopt;
  return value;
}

py::object known_text(const std::string& text) {
  return text.empty() ? py::none() : text_to_python(text);
}

template <std::string SourceLocation::*field>
py::object text_field(const SourceLocation& at) {
  return known_text(at.*field);
}

template <int64_t SourceLocation::*field, int64_t unknown = -1>
std::optional<int64_t> number_field(const SourceLocation& at) {
  return known(at.*field, unknown);
}

void bind_source_location(py::module_& m) {
  py::class_<SourceLocation>(m, "SourceLocation",
                             "Where an error or a verify finding is: the input, the program's "
                             "block, op, var, slot or attribute, and for a run the rank, ring "
                             "and collective. Parts not known are None; str() prints it as "
                             "errors do.")
      .def_property_readonly("source", &text_field<&SourceLocation::source>)
      .def_property_readonly("pass_name", &text_field<&SourceLocation::pass>,
                             "The transpile pass at work ('grad_allreduce main')")
      .def_property_readonly("part", &text_field<&SourceLocation::part>)
      .def_property_readonly("line", &number_field<&SourceLocation::line, 0>)
      .def_property_readonly("column", &number_field<&SourceLocation::column, 0>)
      .def_property_readonly("path", &text_field<&SourceLocation::path>)
      .def_property_readonly("block", &number_field<&SourceLocation::block>)
      .def_property_readonly("op", &number_field<&SourceLocation::op>)
      .def_readonly("op_count", &SourceLocation::op_count)
      .def_property_readonly("op_type", &text_field<&SourceLocation::op_type>)
      .def_property_readonly("var", &number_field<&SourceLocation::var>)
      .def_property_readonly("var_name", &text_field<&SourceLocation::var_name>)
      .def_property_readonly("slot_side", &text_field<&SourceLocation::slot_side>)
      .def_property_readonly("slot", &number_field<&SourceLocation::slot>)
      .def_property_readonly("slot_name", &text_field<&SourceLocation::slot_name>)
      .def_property_readonly("attr", &number_field<&SourceLocation::attr>)
      .def_property_readonly("attr_name", &text_field<&SourceLocation::attr_name>)
      .def_property_readonly("rank", &number_field<&SourceLocation::rank>)
      .def_property_readonly("nranks", &number_field<&SourceLocation::nranks>)
      .def_property_readonly("ring", &number_field<&SourceLocation::ring>)
      .def_property_readonly("backend", &text_field<&SourceLocation::backend>)
      .def_property_readonly("collective", &text_field<&SourceLocation::collective>)
      .def("__bool__", [](const SourceLocation& at) { return !at.empty(); })
      .def("__str__", &SourceLocation::to_string)
      .def("__repr__", [](const SourceLocation& at) {
        return "<ctp.SourceLocation " + (at.empty() ? "(no place)" : at.to_string()) + ">";
      })
      .def(py::self == py::self);
}

// "replace": a message quoting bytes of a malformed file is still raised.
py::object message_text(const std::string& text) {
  return py::reinterpret_steal<py::object>(
      PyUnicode_DecodeUTF8(text.data(), static_cast<Py_ssize_t>(text.size()), "replace"));
}

}  // namespace

void bind_errors(py::module_& m) {
  bind_source_location(m);
  // Created once with the module and kept for the life of the interpreter.
  static py::exception<Error> error_type(m, "Error");
  error_type.attr("__module__") = "ctp";  // shown as ctp.Error, where users import it
  error_type.doc() =
      "An error ctp reports: str(e) is the place and the message, as the command line prints "
      "them; e.message is the message alone and e.place its ctp.SourceLocation.";
  py::register_exception_translator([](std::exception_ptr thrown) {
    try {
      if (thrown) std::rethrow_exception(thrown);
    } catch (const Error& e) {
      py::object error = py::reinterpret_borrow<py::object>(error_type.ptr())(message_text(e.what()));
      error.attr("message") = message_text(e.message());
      error.attr("place") = py::cast(e.place());
      PyErr_SetObject(error_type.ptr(), error.ptr());
    }
  });
}

}  // namespace ctp::python
