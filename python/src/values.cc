#include "python/src/values.h"

#include <cstdint>
#include <limits>
#include <vector>

#include <pybind11/stl.h>

namespace py = pybind11;

namespace ctp::python {
namespace {

[[noreturn]] void not_of_type(py::handle value, AttrType type) {
  throw py::type_error("an attribute of type " + std::string(to_string(type)) +
                       " cannot hold " + py::repr(value).cast<std::string>());
}

std::string text_from_python(py::handle value, AttrType type) {
  if (py::isinstance<py::bytes>(value)) return value.cast<std::string>();
  if (!py::isinstance<py::str>(value)) not_of_type(value, type);
  py::object bytes = py::reinterpret_steal<py::object>(
      PyUnicode_AsEncodedString(value.ptr(), "utf-8", "surrogateescape"));
  if (!bytes) throw py::error_already_set();
  return bytes.cast<std::string>();
}

template <typename T>
T scalar_from_python(py::handle value, AttrType type) {
  if constexpr (std::is_same_v<T, std::string>) {
    return text_from_python(value, type);
  } else {
    // A str would convert to a list of characters, a bool to 1: neither is meant.
    if (py::isinstance<py::str>(value) || py::isinstance<py::bytes>(value))
      not_of_type(value, type);
    if (!std::is_same_v<T, bool> && py::isinstance<py::bool_>(value)) not_of_type(value, type);
    try {
      return value.cast<T>();
    } catch (const py::cast_error&) {
      not_of_type(value, type);
    }
  }
}

template <typename T>
std::vector<T> list_from_python(py::handle value, AttrType type) {
  if (!py::isinstance<py::list>(value) && !py::isinstance<py::tuple>(value))
    not_of_type(value, type);
  std::vector<T> out;
  for (py::handle item : value) out.push_back(scalar_from_python<T>(item, type));
  return out;
}

bool fits_int32(py::handle value) {
  try {
    const auto v = value.cast<int64_t>();
    return v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max();
  } catch (const py::cast_error&) {
    throw py::type_error("integer attribute out of range: " + py::repr(value).cast<std::string>());
  }
}

AttrType type_of_list(py::handle list) {
  bool all_bool = true, all_int = true, all_number = true, all_str = true, int32 = true;
  if (py::len(list) == 0)
    throw py::type_error("an empty list does not say which attribute type it is: pass type=");
  for (py::handle item : list) {
    const bool is_bool = py::isinstance<py::bool_>(item);
    const bool is_int = py::isinstance<py::int_>(item) && !is_bool;
    all_bool &= is_bool;
    all_int &= is_int;
    all_number &= is_int || py::isinstance<py::float_>(item);
    all_str &= py::isinstance<py::str>(item);
    if (is_int) int32 &= fits_int32(item);
  }
  if (all_bool) return AttrType::BOOLEANS;
  if (all_int) return int32 ? AttrType::INTS : AttrType::LONGS;
  if (all_number) return AttrType::FLOATS;
  if (all_str) return AttrType::STRINGS;
  throw py::type_error("a list attribute holds bools, ints, floats or strs of one kind, not " +
                       py::repr(list).cast<std::string>());
}

AttrType type_of(py::handle value) {
  if (py::isinstance<py::bool_>(value)) return AttrType::BOOLEAN;
  if (py::isinstance<py::int_>(value)) return fits_int32(value) ? AttrType::INT : AttrType::LONG;
  if (py::isinstance<py::float_>(value)) return AttrType::FLOAT;
  if (py::isinstance<py::str>(value)) return AttrType::STRING;
  if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value))
    return type_of_list(value);
  throw py::type_error("no attribute type holds " + py::repr(value).cast<std::string>() +
                       " (bool, int, float, str or a list of one of them; or pass type=)");
}

template <typename Enum>
Enum parse_enum(const std::string& name, std::optional<Enum> found, const char* what,
                const char* examples) {
  if (!found) throw py::value_error("unknown " + std::string(what) + " '" + name + "' (e.g. " +
                                    examples + ")");
  return *found;
}

}  // namespace

py::object text_to_python(const std::string& s) {
  return py::reinterpret_steal<py::object>(
      PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "surrogateescape"));
}

py::object attribute_to_python(const Attribute& attr) {
  if (attr.type() == AttrType::SCALAR) return py::bytes(attr.get<std::string>());
  if (attr.type() == AttrType::SCALARS) {
    py::list out;
    for (const std::string& s : attr.get<std::vector<std::string>>()) out.append(py::bytes(s));
    return out;
  }
  return std::visit(
      [](const auto& v) -> py::object {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string>) {
          return text_to_python(v);
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          py::list out;
          for (const std::string& s : v) out.append(text_to_python(s));
          return out;
        } else {
          return py::cast(v);
        }
      },
      attr.value());
}

Attribute attribute_from_python(py::handle value, std::optional<AttrType> given) {
  const AttrType type = given ? *given : type_of(value);
  switch (variant_index_for(type)) {
    case 0: return {type, scalar_from_python<int32_t>(value, type)};
    case 1: return {type, scalar_from_python<float>(value, type)};
    case 2: return {type, scalar_from_python<std::string>(value, type)};
    case 3: return {type, list_from_python<int32_t>(value, type)};
    case 4: return {type, list_from_python<float>(value, type)};
    case 5: return {type, list_from_python<std::string>(value, type)};
    case 6: return {type, scalar_from_python<bool>(value, type)};
    case 7: return {type, list_from_python<bool>(value, type)};
    case 8: return {type, scalar_from_python<int64_t>(value, type)};
    case 9: return {type, list_from_python<int64_t>(value, type)};
    case 10: return {type, list_from_python<double>(value, type)};
    default: return {type, scalar_from_python<double>(value, type)};
  }
}

AttrType parse_attr_type(const std::string& name) {
  return parse_enum(name, attr_type_from_string(name), "attribute type", "INT, FLOATS, STRING");
}

VarKind parse_var_kind(const std::string& name) {
  return parse_enum(name, var_kind_from_string(name), "var type", "LOD_TENSOR, FEED_MINIBATCH");
}

DataType parse_data_type(const std::string& name) {
  std::optional<DataType> dtype;
  if (const std::optional<VarKind> kind = var_kind_from_string(name))
    dtype = element_type_from_number(static_cast<int64_t>(*kind));
  return parse_enum(name, dtype, "dtype", "FP32, INT64, FP16");
}

}  // namespace ctp::python
