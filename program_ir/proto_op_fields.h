// The OpDesc fields that the protobuf writer (proto_writer.cc) and
// packed_op (op_packing.cc) both encode, written once so that an op packed
// by a rewrite has exactly the bytes the writer would give it.
#pragma once
#include <cstdint>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "program_ir/attribute.h"
#include "program_ir/framework_fields.h"
#include "program_ir/op.h"

namespace ctp::proto_write {

// One OpDesc.Var (an input or output slot) as `field`.
template <class Out>
void write_slot(Out& w, uint32_t field, const Slot& slot) {
  auto body = w.begin_message(field);
  w.bytes_field(fields::op_slot::kParameter, slot.name);
  for (const std::string& arg : slot.args) w.bytes_field(fields::op_slot::kArguments, arg);
  w.end_message(body);
}

template <class Out>
void write_attr_value(Out& w, const Attribute& attr) {
  const uint32_t f = fields::attr_value_field(attr.type()).field;
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int32_t>) {
          w.int32_field(f, v);
        } else if constexpr (std::is_same_v<T, int64_t>) {
          w.int64_field(f, v);
        } else if constexpr (std::is_same_v<T, bool>) {
          w.bool_field(f, v);
        } else if constexpr (std::is_same_v<T, float>) {
          w.float_field(f, v);
        } else if constexpr (std::is_same_v<T, double>) {
          w.double_field(f, v);
        } else if constexpr (std::is_same_v<T, std::string>) {
          w.bytes_field(f, v);
        } else if constexpr (std::is_same_v<T, std::vector<int32_t>>) {
          for (int32_t x : v) w.int32_field(f, x);
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          for (int64_t x : v) w.int64_field(f, x);
        } else if constexpr (std::is_same_v<T, std::vector<bool>>) {
          for (bool x : v) w.bool_field(f, x);
        } else if constexpr (std::is_same_v<T, std::vector<float>>) {
          for (float x : v) w.float_field(f, x);
        } else if constexpr (std::is_same_v<T, std::vector<double>>) {
          for (double x : v) w.double_field(f, x);
        } else {
          static_assert(std::is_same_v<T, std::vector<std::string>>);
          for (const std::string& x : v) w.bytes_field(f, x);
        }
      },
      attr.value());
}

// One OpDesc.Attr: its name first (WireAttrs::names_lead), then its type
// and value.
template <class Out>
void write_op_attr(Out& w, const NamedAttribute& attr) {
  auto body = w.begin_message(fields::op::kAttrs);
  w.bytes_field(fields::op_attr::kName, attr.name);
  w.int32_field(fields::op_attr::kType, static_cast<int32_t>(attr.value.type()));
  write_attr_value(w, attr.value);
  w.end_message(body);
}

}  // namespace ctp::proto_write
