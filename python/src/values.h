// Conversions between ctp's IR values and Python values: attributes as
// Python's int, float, bool, str, bytes and lists of them; enums (VarKind,
// DataType, AttrType) as their names ("LOD_TENSOR", "FP32", "INTS").
#pragma once
#include <optional>
#include <string>

#include <pybind11/pybind11.h>

#include "program_ir/attribute.h"
#include "program_ir/types.h"

namespace ctp::python {

// Text from a program (a name, a string attribute) as a Python str, decoded as
// UTF-8 with surrogateescape so that bytes that are not UTF-8 survive.
pybind11::object text_to_python(const std::string& text);

// The attribute's value as a Python value. Strings are decoded as UTF-8 with
// surrogateescape, so that bytes that are not UTF-8 survive a round trip;
// SCALAR and SCALARS (serialized messages) are bytes.
pybind11::object attribute_to_python(const Attribute& attr);

// A Python value as an attribute of `type`, or, when no type is given, of the
// type its value maps to: bool BOOLEAN, int INT (LONG beyond 32 bits), float
// FLOAT, str STRING, and lists of one of them (INTS, LONGS, FLOATS,
// STRINGS, BOOLEANS). Raises TypeError when the value does not fit.
Attribute attribute_from_python(pybind11::handle value, std::optional<AttrType> type);

// Names and back; the parsers raise ValueError listing what is accepted.
AttrType parse_attr_type(const std::string& name);
VarKind parse_var_kind(const std::string& name);
DataType parse_data_type(const std::string& name);

}  // namespace ctp::python
