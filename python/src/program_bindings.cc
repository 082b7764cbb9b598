// Program, Block, Var and Op as Python classes, and programs from and to
// files and bytes (protobuf or JSON, told apart by content).
//
// Blocks, vars and ops a program hands out are views into it (they keep it
// alive): editing them edits the program. Nothing here removes a block, var
// or op, so a view never outlives what it shows. Var and Op made in Python
// are values; adding one to a block copies it there.
#include <optional>
#include <string>
#include <vector>

#include <pybind11/operators.h>
#include <pybind11/stl.h>

#include "program_ir/atomic_file.h"
#include "program_ir/persistables.h"
#include "program_ir/program_io.h"
#include "program_ir/text_io.h"
#include "python/src/bindings.h"
#include "python/src/values.h"

namespace py = pybind11;
using namespace py::literals;

namespace ctp::python {
namespace {

constexpr auto kView = py::return_value_policy::reference_internal;

ProgramFormat parse_format(const std::string& name) {
  if (name == "proto") return ProgramFormat::Proto;
  if (name == "json") return ProgramFormat::Json;
  throw py::value_error("format must be 'proto' or 'json', not '" + name + "'");
}

// save()'s format when none is given: JSON for a .json path, else protobuf.
ProgramFormat format_for_path(const std::string& path) {
  const std::string json = ".json";
  return path.size() >= json.size() && path.compare(path.size() - json.size(), json.size(), json) == 0
             ? ProgramFormat::Json
             : ProgramFormat::Proto;
}

// Views of every element of a container owned by `owner`'s C++ object.
template <typename Container>
py::list views(Container& items, py::handle owner) {
  py::list out;
  for (auto& item : items) out.append(py::cast(&item, kView, owner));
  return out;
}

// The op at `index`; with `end_allowed`, op_count() is the position after the last.
Block::OpHandle op_at(Block& block, std::size_t index, bool end_allowed) {
  if (index > block.op_count() || (index == block.op_count() && !end_allowed))
    throw py::index_error("block " + std::to_string(block.idx) + " has " +
                          std::to_string(block.op_count()) + " ops, no position " +
                          std::to_string(index));
  return std::next(block.ops().begin(), static_cast<std::ptrdiff_t>(index));
}

py::dict slots_to_python(const std::vector<Slot>& slots) {
  py::dict out;
  for (const Slot& s : slots) out[py::str(s.name)] = py::cast(s.args);
  return out;
}

std::vector<Slot> slots_from_python(const py::dict& slots) {
  std::vector<Slot> out;
  for (auto [name, args] : slots)
    out.push_back({name.cast<std::string>(), args.cast<std::vector<std::string>>()});
  return out;
}

py::dict attrs_to_python(const Op& op) {
  py::dict out;
  for (const NamedAttribute& a : op.attrs()) out[py::str(a.name)] = attribute_to_python(a.value);
  return out;
}

// set_attr's type: the one given, else the attribute's present type (so
// that op.set_attr("op_role", 2) stays INT), else the value's own.
std::optional<AttrType> attr_type_for(const Op& op, const std::string& name,
                                      const std::optional<std::string>& type) {
  if (type) return parse_attr_type(*type);
  if (const Attribute* present = op.attr(name)) return present->type();
  return std::nullopt;
}

Op make_op(const std::string& type, const py::dict& inputs, const py::dict& outputs,
           const py::dict& attrs) {
  Op op(type, slots_from_python(inputs), slots_from_python(outputs));
  for (auto [name, value] : attrs)
    op.set_attr(name.cast<std::string>(), attribute_from_python(value, std::nullopt));
  return op;
}

std::string op_repr(const Op& op) { return "<ctp.Op " + op_to_text(op) + ">"; }

std::string var_repr(const Var& v) {
  std::string shape;
  for (int64_t d : v.shape) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
  return "<ctp.Var '" + v.name + "' " + std::string(to_string(v.type)) + " " +
         std::string(to_string(v.dtype)) + " [" + shape + "]" +
         (v.persistable ? " persistable" : "") + ">";
}

void bind_var(py::module_& m) {
  py::class_<Var>(m, "Var", "A variable (VarDesc). Its name is fixed: blocks find vars by it.")
      .def(py::init([](const std::string& name, std::vector<int64_t> shape,
                       const std::string& dtype, const std::string& type, bool persistable,
                       bool is_parameter, bool stop_gradient, int32_t lod_level) {
             Var v;
             v.name = name;
             v.shape = std::move(shape);
             v.dtype = parse_data_type(dtype);
             v.type = parse_var_kind(type);
             v.persistable = persistable;
             v.is_parameter = is_parameter;
             v.stop_gradient = stop_gradient;
             v.lod_level = lod_level;
             return v;
           }),
           "name"_a, "shape"_a = std::vector<int64_t>{}, "dtype"_a = "FP32",
           "type"_a = "LOD_TENSOR", "persistable"_a = false, "is_parameter"_a = false,
           "stop_gradient"_a = false, "lod_level"_a = 0)
      .def_readonly("name", &Var::name)
      .def_property(
          "type", [](const Var& v) { return std::string(to_string(v.type)); },
          [](Var& v, const std::string& t) { v.type = parse_var_kind(t); })
      .def_property(
          "dtype", [](const Var& v) { return std::string(to_string(v.dtype)); },
          [](Var& v, const std::string& t) { v.dtype = parse_data_type(t); })
      .def_readwrite("shape", &Var::shape)
      .def_readwrite("lod_level", &Var::lod_level)
      .def_readwrite("persistable", &Var::persistable)
      .def_readwrite("need_check_feed", &Var::need_check_feed)
      .def_readwrite("is_parameter", &Var::is_parameter)
      .def_readwrite("stop_gradient", &Var::stop_gradient)
      .def_readwrite("is_distributed", &Var::is_distributed)
      .def_property_readonly("numel", &Var::numel)
      .def(py::self == py::self)
      .def("__repr__", &var_repr);
}

void bind_op(py::module_& m) {
  py::class_<Op>(m, "Op",
                 "An operator (OpDesc): type, input and output slots (name -> list of var "
                 "names) and typed attributes. inputs, outputs and attrs are copies: change "
                 "them with set_input, set_output and set_attr.")
      .def(py::init(&make_op), "type"_a, "inputs"_a = py::dict(), "outputs"_a = py::dict(),
           "attrs"_a = py::dict())
      .def_readwrite("type", &Op::type)
      .def_readwrite("is_target", &Op::is_target)
      .def_property_readonly("inputs", [](const Op& op) { return slots_to_python(op.inputs()); })
      .def_property_readonly("outputs", [](const Op& op) { return slots_to_python(op.outputs()); })
      .def_property_readonly("attrs", &attrs_to_python)
      .def_property_readonly("attr_types",
                             [](const Op& op) {
                               py::dict out;
                               for (const NamedAttribute& a : op.attrs())
                                 out[py::str(a.name)] = std::string(to_string(a.value.type()));
                               return out;
                             })
      .def("input", [](const Op& op, std::string_view slot) {
             const auto* args = op.input(slot);
             return args ? py::cast(*args) : py::none();
           }, "slot"_a, "The slot's var names, or None when the op has no such slot")
      .def("output", [](const Op& op, std::string_view slot) {
             const auto* args = op.output(slot);
             return args ? py::cast(*args) : py::none();
           }, "slot"_a)
      .def("set_input", &Op::set_input, "slot"_a, "args"_a)
      .def("set_output", &Op::set_output, "slot"_a, "args"_a)
      .def("input_arg_names", &Op::input_arg_names)
      .def("output_arg_names", &Op::output_arg_names)
      .def("has_attr", &Op::has_attr, "name"_a)
      .def("attr", [](const Op& op, std::string_view name) {
             const Attribute* a = op.attr(name);
             if (!a) throw py::key_error("op '" + op.type + "' has no attribute '" +
                                         std::string(name) + "'");
             return attribute_to_python(*a);
           }, "name"_a)
      .def("attr_type", [](const Op& op, std::string_view name) {
             const Attribute* a = op.attr(name);
             return a ? py::cast(std::string(to_string(a->type()))) : py::none();
           }, "name"_a)
      .def("set_attr", [](Op& op, const std::string& name, py::handle value,
                          const std::optional<std::string>& type) {
             op.set_attr(name, attribute_from_python(value, attr_type_for(op, name, type)));
           }, "name"_a, "value"_a, "type"_a = py::none(),
           "Sets (or adds) an attribute. type: an AttrType name ('INT', 'LONGS', 'BLOCK'...); "
           "default: the attribute's present type, else the value's")
      .def("remove_attr", &Op::remove_attr, "name"_a)
      .def(py::self == py::self)
      .def("__repr__", &op_repr);
}

void bind_block(py::module_& m) {
  py::class_<Block>(m, "Block", "A block of a program: its vars and its ops, in order")
      .def_readonly("idx", &Block::idx)
      .def_readwrite("parent_idx", &Block::parent_idx)
      .def_readwrite("forward_block_idx", &Block::forward_block_idx)
      .def_property_readonly("vars", [](py::object self) {
        return views(self.cast<Block&>().mutable_vars(), self);
      })
      .def_property_readonly("ops", [](py::object self) {
        return views(self.cast<Block&>().ops(), self);
      })
      .def("var", py::overload_cast<std::string_view>(&Block::var), "name"_a, kView)
      .def("has_var", &Block::has_var, "name"_a)
      .def("add_var", &Block::add_var, "var"_a, kView,
           "Adds a copy of the var; raises ctp.Error when the block declares the name")
      .def("get_or_add_var", &Block::get_or_add_var, "var"_a, kView)
      .def("op", [](Block& b, std::size_t i) -> Op& { return *op_at(b, i, false); }, "index"_a,
           kView)
      .def("append_op", [](Block& b, const Op& op) -> Op& { return *b.append_op(op); },
           "op"_a, kView, "Appends a copy of the op")
      .def("insert_op", [](Block& b, std::size_t index, const Op& op) -> Op& {
             return *b.insert_op(op_at(b, index, true), op);
           }, "index"_a, "op"_a, kView, "Inserts a copy of the op before position index")
      .def_property_readonly("op_count", &Block::op_count)
      .def_property_readonly("var_count", &Block::var_count)
      .def(py::self == py::self)
      .def("__repr__", [](const Block& b) {
        return "<ctp.Block " + std::to_string(b.idx) + ": " + std::to_string(b.var_count()) +
               " vars, " + std::to_string(b.op_count()) + " ops>";
      });
}

Program parse_bytes(const py::bytes& data, const std::string& source) {
  std::string bytes = data;
  py::gil_scoped_release unlocked;
  return parse_program(bytes, source);
}

py::bytes program_bytes(const Program& p, const std::string& format) {
  const ProgramFormat f = parse_format(format);
  std::string bytes;
  {
    py::gil_scoped_release unlocked;
    bytes = serialize_program(p, f);
  }
  return py::bytes(bytes);
}

void bind_program_class(py::module_& m) {
  py::class_<Program>(m, "Program",
                      "A program (ProgramDesc): its blocks and Paddle's version information")
      .def(py::init([] { return Program::with_global_block(); }),
           "A program with one empty global block")
      .def_static("from_bytes", &parse_bytes, "data"_a, "source"_a = "<bytes>",
                  "Parses protobuf or JSON bytes (told apart by content); source names them "
                  "in errors")
      .def_static("load", &load_program_file, "path"_a, py::call_guard<py::gil_scoped_release>())
      .def("to_bytes", &program_bytes, "format"_a = "proto", "'proto' or 'json'")
      .def("save", [](const Program& p, const std::string& path,
                      const std::optional<std::string>& format) {
             const ProgramFormat f = format ? parse_format(*format) : format_for_path(path);
             py::gil_scoped_release unlocked;
             write_file_atomically(path, serialize_program(p, f));
           }, "path"_a, "format"_a = py::none(),
           "Writes the program (all or nothing); format: 'proto' or 'json', default by the "
           "path's extension (.json: JSON, else protobuf)")
      .def("to_text", &program_to_text, "One op per line (docs/text-format.md)")
      .def_property_readonly("blocks", [](py::object self) {
        return views(self.cast<Program&>().blocks, self);
      })
      .def("block", py::overload_cast<int32_t>(&Program::block), "idx"_a, kView)
      .def_property_readonly("global_block", py::overload_cast<>(&Program::global_block), kView)
      .def("add_block", &Program::add_block, "parent_idx"_a, kView)
      .def_readwrite("version", &Program::version)
      .def_property_readonly("op_count", &Program::op_count)
      .def("copy", [](const Program& p) { return Program(p); })
      .def("__copy__", [](const Program& p) { return Program(p); })
      .def("__deepcopy__", [](const Program& p, py::dict) { return Program(p); }, "memo"_a)
      .def(py::self == py::self)
      .def("__repr__", [](const Program& p) {
        return "<ctp.Program: " + std::to_string(p.blocks.size()) + " blocks, " +
               std::to_string(p.op_count()) + " ops>";
      });
}

}  // namespace

void bind_program(py::module_& m) {
  bind_var(m);
  bind_op(m);
  bind_block(m);
  bind_program_class(m);
  m.def("load", &load_program_file, "path"_a, py::call_guard<py::gil_scoped_release>(),
        "Reads a program file, protobuf or JSON (same as Program.load)");
  m.def("loads", &parse_bytes, "data"_a, "source"_a = "<bytes>",
        "Parses protobuf or JSON bytes (same as Program.from_bytes)");
  m.def("persistable_tensor_names", &persistable_tensor_names, "program"_a,
        "The persistable LOD_TENSOR vars of the global block, sorted (the order of a combined "
        "parameter file)");
  m.def(
      "load_persistables_program",
      [](const Program& main, std::optional<std::string> dir, std::optional<std::string> file) {
        if (dir.has_value() == file.has_value())
          throw py::value_error("give one of dir (Paddle's per-var files) or file (one combined "
                                "file)");
        return load_persistables_program(main, {dir.value_or(""), file});
      },
      "main"_a, py::kw_only(), "dir"_a = py::none(), "file"_a = py::none(),
      "A program of load ops (one load_combine with file=) that reads main's persistable "
      "tensors from Paddle's saved parameter files (ctp run --load-params / --load-params-file)");
  m.def(
      "random_persistables_program",
      [](const Program& main, float min, float max, int32_t first_seed) {
        return random_persistables_program(main, {min, max, first_seed});
      },
      "main"_a, py::kw_only(), "min"_a = -0.1f, "max"_a = 0.1f, "first_seed"_a = 1,
      "A startup program that gives every persistable tensor main reads seeded uniform values "
      "(batch_norm's variances 1): to run a model whose saved values are not at hand (ctp run "
      "--random-params)");
  m.def("detect_format", [](const py::bytes& data) {
    return detect_program_format(std::string(data)) == ProgramFormat::Json ? "json" : "proto";
  }, "data"_a);
}

}  // namespace ctp::python
