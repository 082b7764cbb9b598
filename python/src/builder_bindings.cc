// ProgramBuilder (program_ir/builder.h), Paddle's op roles, and verify
// (program_ir/verify.h) for Python.
#include <optional>
#include <string>
#include <vector>

#include <pybind11/stl.h>

#include "program_ir/builder.h"
#include "program_ir/verify.h"
#include "python/src/bindings.h"
#include "python/src/values.h"

namespace py = pybind11;
using namespace py::literals;

namespace ctp::python {
namespace {

// An op being written by a ProgramBuilder: it edits the op in its block, so
// it keeps the builder alive.
class PyOpBuilder {
 public:
  explicit PyOpBuilder(Op& op) : op_(op) {}
  Op& op() { return op_; }

 private:
  Op& op_;
};

std::vector<std::string> args_of(py::handle args) {
  if (py::isinstance<py::str>(args)) return {args.cast<std::string>()};
  return args.cast<std::vector<std::string>>();
}

void bind_op_builder(py::module_& m) {
  py::class_<PyOpBuilder>(m, "OpBuilder",
                          "Writes the op ProgramBuilder.op() appended; each call returns the "
                          "builder, so calls chain")
      .def("input", [](PyOpBuilder& b, const std::string& slot, py::handle args) -> PyOpBuilder& {
             OpBuilder(b.op()).in(slot, args_of(args));
             return b;
           }, "slot"_a, "args"_a, py::return_value_policy::reference_internal,
           "Sets an input slot to a var name or a list of them")
      .def("output", [](PyOpBuilder& b, const std::string& slot, py::handle args) -> PyOpBuilder& {
             OpBuilder(b.op()).out(slot, args_of(args));
             return b;
           }, "slot"_a, "args"_a, py::return_value_policy::reference_internal)
      .def("attr", [](PyOpBuilder& b, const std::string& name, py::handle value,
                      const std::optional<std::string>& type) -> PyOpBuilder& {
             std::optional<AttrType> t;
             if (type) t = parse_attr_type(*type);
             OpBuilder(b.op()).attr(name, attribute_from_python(value, t));
             return b;
           }, "name"_a, "value"_a, "type"_a = py::none(),
           py::return_value_policy::reference_internal)
      .def("role", [](PyOpBuilder& b, int32_t bits) -> PyOpBuilder& {
             OpBuilder(b.op()).role(bits);
             return b;
           }, "bits"_a, py::return_value_policy::reference_internal,
           "Sets op_role (ctp.op_role.FORWARD, BACKWARD | LOSS, ...)")
      .def("role_var", [](PyOpBuilder& b, std::vector<std::string> pairs) -> PyOpBuilder& {
             OpBuilder(b.op()).role_var(std::move(pairs));
             return b;
           }, "pairs"_a, py::return_value_policy::reference_internal,
           "Sets op_role_var: [param, grad, param, grad, ...]")
      .def_property_readonly("op", &PyOpBuilder::op, py::return_value_policy::reference_internal);
}

void bind_program_builder(py::module_& m) {
  constexpr auto kView = py::return_value_policy::reference_internal;
  py::class_<ProgramBuilder>(m, "ProgramBuilder",
                             "Writes a program in a few lines:\n"
                             "  b = ctp.ProgramBuilder()\n"
                             "  b.data('x', [-1, 4]); b.param('w', [4, 2]); b.tmp('y', [-1, 2])\n"
                             "  b.op('mul').input('X', 'x').input('Y', 'w').output('Out', 'y')\n"
                             "  program = b.build()")
      .def(py::init<>())
      .def(py::init<Program>(), "program"_a, "Continues a copy of the program")
      .def("in_block", &ProgramBuilder::in_block, "idx"_a, kView,
           "Which block the next calls add to")
      .def("data", [](ProgramBuilder& b, const std::string& name, std::vector<int64_t> shape,
                      const std::string& dtype) -> Var& {
             return b.data(name, std::move(shape), parse_data_type(dtype));
           }, "name"_a, "shape"_a, "dtype"_a = "FP32", kView, "A feed var")
      .def("param", [](ProgramBuilder& b, const std::string& name, std::vector<int64_t> shape,
                       const std::string& dtype, bool is_distributed) -> Var& {
             return b.param(name, std::move(shape), parse_data_type(dtype), is_distributed);
           }, "name"_a, "shape"_a, "dtype"_a = "FP32", "is_distributed"_a = false, kView,
           "A trainable parameter (persistable, is_parameter)")
      .def("persistable", [](ProgramBuilder& b, const std::string& name,
                             std::vector<int64_t> shape, const std::string& dtype) -> Var& {
             return b.persistable(name, std::move(shape), parse_data_type(dtype));
           }, "name"_a, "shape"_a, "dtype"_a = "FP32", kView)
      .def("tmp", [](ProgramBuilder& b, const std::string& name, std::vector<int64_t> shape,
                     const std::string& dtype) -> Var& {
             return b.tmp(name, std::move(shape), parse_data_type(dtype));
           }, "name"_a, "shape"_a, "dtype"_a = "FP32", kView)
      .def("var", [](ProgramBuilder& b, const Var& v) -> Var& { return b.var(v); }, "var"_a,
           kView)
      .def("op", [](ProgramBuilder& b, const std::string& type) {
             return PyOpBuilder(b.op(type).op());
           }, "type"_a, py::keep_alive<0, 1>(), "Appends an op of that type; returns its OpBuilder")
      .def_property_readonly("program", py::overload_cast<>(&ProgramBuilder::program), kView,
                             "The program so far (a view)")
      .def("build", [](ProgramBuilder& b) { return Program(b.program()); },
           "A copy of the program written so far");
}

void bind_op_roles(py::module_& m) {
  py::module_ roles = m.def_submodule("op_role", "Paddle's op_role bits");
  roles.attr("FORWARD") = op_role::kForward;
  roles.attr("BACKWARD") = op_role::kBackward;
  roles.attr("OPTIMIZE") = op_role::kOptimize;
  roles.attr("RPC") = op_role::kRPC;
  roles.attr("DIST") = op_role::kDist;
  roles.attr("LR_SCHED") = op_role::kLRSched;
  roles.attr("LOSS") = op_role::kLoss;
  roles.attr("NOT_SPECIFIED") = op_role::kNotSpecified;
}

void bind_verify(py::module_& m) {
  py::class_<Diagnostic>(m, "Diagnostic", "One problem verify found")
      .def_property_readonly("severity", [](const Diagnostic& d) {
        return d.severity == Diagnostic::Error ? "error" : "warning";
      })
      .def_readonly("message", &Diagnostic::message, "The problem, without its place")
      .def_readonly("place", &Diagnostic::place, "Its ctp.SourceLocation")
      .def("__str__", &Diagnostic::to_string)
      .def("__repr__", [](const Diagnostic& d) { return "<ctp.Diagnostic " + d.to_string() + ">"; });
  py::class_<VerifyResult>(m, "VerifyResult", "What verify found and what it checked")
      .def_readonly("diagnostics", &VerifyResult::diagnostics)
      .def_property_readonly("errors", [](const VerifyResult& r) {
        std::vector<Diagnostic> errors;
        for (const Diagnostic& d : r.diagnostics)
          if (d.severity == Diagnostic::Error) errors.push_back(d);
        return errors;
      })
      .def_property_readonly("ok", [](const VerifyResult& r) { return !has_errors(r.diagnostics); },
                             "True when no diagnostic is an error")
      .def_property_readonly("ops_without_schema", [](const VerifyResult& r) {
        std::vector<std::pair<std::string, int64_t>> out;
        for (const OpTypeCount& c : r.ops_without_schema) out.emplace_back(c.type, c.count);
        return out;
      }, "(op type, count) of the ops ctp has no schema for, most first")
      .def_readonly("blocks", &VerifyResult::blocks)
      .def_readonly("vars", &VerifyResult::vars)
      .def_readonly("ops", &VerifyResult::ops)
      .def_readonly("ops_with_schema", &VerifyResult::ops_with_schema)
      .def("checked", &VerifyResult::checked, "One sentence saying what was checked");
  m.def("verify", [](const Program& p) { return verify(p); }, "program"_a,
        py::call_guard<py::gil_scoped_release>(),
        "Every structural problem of the program, each naming its place (as `ctp verify`)");
}

}  // namespace

void bind_builder(py::module_& m) {
  bind_op_builder(m);
  bind_program_builder(m);
  bind_op_roles(m);
  bind_verify(m);
}

}  // namespace ctp::python
