// Reading VarDesc messages (proto_read_parts.h): the var's kind and tensor
// description, reader and tuple descriptions, flags with their proto2
// presence, attrs, and unknown fields at their places.
#include <optional>

#include "program_ir/framework_fields.h"
#include "program_ir/proto_read_parts.h"
#include "program_ir/wire_read.h"

namespace ctp::proto_read {
namespace {

using namespace wire_read;
namespace fl = fields;

// TensorDesc, merged into dtype and shape (a second occurrence of the
// message overwrites data_type and appends dims, as protobuf merges).
void parse_tensor_desc(Reader r, DataType& dtype, std::vector<int64_t>& shape,
                       const SourceLocation& place) {
  bool has_data_type = false;
  guarded(place, [&] {
    shape.reserve(shape.size() + count_field(r, fl::tensor_desc::kDims));
    for_each_field(r, [&](const Tag& tag, std::size_t start) {
      switch (tag.field) {
        case fl::tensor_desc::kDataType:
          dtype = data_type_of_wire_kind(read_var_kind(
              read_varint_field(r, tag, start, "data_type"), place, "TensorDesc.data_type"));
          has_data_type = true;
          break;
        case fl::tensor_desc::kDims:
          read_repeated(r, tag, start, "dims", WireType::Varint, 0, shape, read_int64);
          break;
        default: unknown_in(r, tag, start, "TensorDesc");
      }
    });
  });
  if (!has_data_type) fail(place, "TensorDesc has no data_type (field 1)");
}

// LoDTensorDesc (and LoDTensorArrayDesc, the same fields).
void parse_lod_tensor_desc(Reader r, DataType& dtype, std::vector<int64_t>& shape,
                           std::optional<int32_t>& lod_level, const SourceLocation& place) {
  bool has_tensor = false;
  guarded(place, [&] {
    for_each_field(r, [&](const Tag& tag, std::size_t start) {
      switch (tag.field) {
        case fl::lod_tensor_desc::kTensor:
          parse_tensor_desc(nested(r, tag, start, "tensor"), dtype, shape, place);
          has_tensor = true;
          break;
        case fl::lod_tensor_desc::kLodLevel:
          lod_level = wire::as_int32(read_varint_field(r, tag, start, "lod_level"));
          break;
        default: unknown_in(r, tag, start, "LoDTensorDesc");
      }
    });
  });
  if (!has_tensor) fail(place, "LoDTensorDesc has no tensor (field 1)");
}

void parse_reader_desc(Reader r, std::vector<ReaderTensorDesc>& out, const SourceLocation& place) {
  guarded(place, [&] {
    for_each_field(r, [&](const Tag& tag, std::size_t start) {
      if (tag.field != fl::reader_desc::kLodTensor) unknown_in(r, tag, start, "ReaderDesc");
      ReaderTensorDesc& desc = out.emplace_back();
      parse_lod_tensor_desc(nested(r, tag, start, "lod_tensor"), desc.dtype, desc.shape,
                            desc.lod_level, place);
    });
  });
}

void parse_tuple(Reader r, std::vector<VarKind>& out, const SourceLocation& place) {
  guarded(place, [&] {
    for_each_field(r, [&](const Tag& tag, std::size_t start) {
      if (tag.field != fl::tuple::kElementType) unknown_in(r, tag, start, "Tuple");
      std::vector<int64_t> raw;
      read_repeated(r, tag, start, "element_type", WireType::Varint, 0, raw, read_int64);
      for (int64_t value : raw)
        out.push_back(read_var_kind(static_cast<uint64_t>(value), place, "Tuple.element_type"));
    });
  });
}

// The var's own tensor description, in the VarType field of its kind.
void parse_var_tensor_desc(Reader desc, Var& var, const SourceLocation& place) {
  if (kind_has_lod_level(var.type))
    parse_lod_tensor_desc(desc, var.dtype, var.shape, var.lod_level, place);
  else
    parse_tensor_desc(desc, var.dtype, var.shape, place);
}

// The tensor description of another kind than the var's (a LOD_TENSOR var's
// selected_rows): no description of this var, so it stays as bytes among the
// unknown fields, but it must be a well-formed one, required fields included,
// as libprotobuf requires. `r` is a copy: the caller still skips the field.
void check_foreign_description(Reader r, const Tag& tag, std::size_t start, const SourceLocation& place) {
  DataType dtype{};
  std::vector<int64_t> shape;
  std::optional<int32_t> lod_level;
  switch (tag.field) {
    case fl::var_type::kLodTensor:
    case fl::var_type::kTensorArray:
      parse_lod_tensor_desc(nested(r, tag, start, "tensor description"), dtype, shape, lod_level,
                            place);
      break;
    case fl::var_type::kSelectedRows:
    case fl::var_type::kString:
    case fl::var_type::kStrings:
    case fl::var_type::kVocab:
    case fl::var_type::kSparseCoo:
    case fl::var_type::kSparseCsr:
      parse_tensor_desc(nested(r, tag, start, "tensor description"), dtype, shape, place);
      break;
    default: break;  // a field framework.proto does not know
  }
}

void parse_var_type(Reader r, Var& var, const SourceLocation& place) {
  guarded(place, [&] {
    // The kind decides which tensor description is ctp's, so find it first.
    // Every occurrence is checked, not only the last, which wins: protobuf
    // would keep an invalid earlier one as an unknown field, ctp refuses it.
    std::optional<VarKind> kind;
    Reader scan = r;
    for_each_field(scan, [&](const Tag& tag, std::size_t start) {
      if (tag.field == fl::var_type::kType)
        kind = read_var_kind(read_varint_field(scan, tag, start, "type"), place, "VarType.Type");
      else
        scan.skip_field(tag, start);
    });
    if (!kind) fail(place, "VarType has no type (field 1)");
    var.type = *kind;
    const uint32_t desc_field = fl::tensor_desc_field(var.type);
    bool has_desc = false;
    std::size_t known = 0;
    for_each_field(r, [&](const Tag& tag, std::size_t start) {
      if (tag.field == fl::var_type::kType) {
        r.read_varint();
      } else if (desc_field != 0 && tag.field == desc_field) {
        parse_var_tensor_desc(nested(r, tag, start, "tensor description"), var, place);
        has_desc = true;
      } else if (tag.field == fl::var_type::kReader) {
        if (!var.reader) var.reader.emplace();
        parse_reader_desc(nested(r, tag, start, "reader"), *var.reader, place);
      } else if (tag.field == fl::var_type::kTuple) {
        if (!var.tuple) var.tuple.emplace();
        parse_tuple(nested(r, tag, start, "tuple"), *var.tuple, place);
      } else {
        if (tag.type == WireType::LengthDelimited) check_foreign_description(r, tag, start, place);
        var.type_unknown_fields.append(known, r.skip_field(tag, start));
        return;
      }
      ++known;
    });
    var.type_unknown_fields.close(known);
    var.tensor_desc_absent = desc_field != 0 && !has_desc;
  });
}

VarAttr parse_var_attr(Reader r, SourceLocation& place) {
  VarAttr attr;
  bool has_name = false;
  std::optional<uint64_t> type;
  guarded(place, [&] {
    for_each_field(r, [&](const Tag& tag, std::size_t start) {
      switch (tag.field) {
        case fl::var_attr::kName:
          attr.name = read_bytes_field(r, tag, start, "name");
          has_name = true;
          break;
        case fl::var_attr::kType: type = read_varint_field(r, tag, start, "type"); break;
        case fl::var_attr::kI: attr.i = wire::as_int32(read_varint_field(r, tag, start, "i")); break;
        case fl::var_attr::kS: attr.s = read_bytes_field(r, tag, start, "s"); break;
        case fl::var_attr::kInts:
          read_repeated(r, tag, start, "ints", WireType::Varint, 0, attr.ints, read_int32);
          break;
        default: unknown_in(r, tag, start, "VarDesc.Attr");
      }
    });
  });
  if (!has_name) fail(place, "VarDesc.Attr has no name (field 1)");
  place.attr_name = attr.name;
  if (!type) fail(place, "VarDesc.Attr has no type (field 2)");
  attr.type = read_attr_type(*type, place);
  return attr;
}

// One of VarDesc's optional bools: its value, and whether the file wrote it
// although it is false.
void read_flag(Reader& r, const Tag& tag, std::size_t start, const char* name, bool& value,
               bool& explicit_default) {
  value = read_varint_field(r, tag, start, name) != 0;
  explicit_default = !value;
}

}  // namespace

Var parse_var(Reader r, SourceLocation& place, std::string_view* name_bytes) {
  Var var;
  bool has_name = false, has_type = false;
  guarded(place, [&] {
    Reader scan = r;
    for_each_field(scan, [&](const Tag& tag, std::size_t start) {
      if (tag.field == fl::var::kName) {
        const std::string_view name = read_bytes_field(scan, tag, start, "name");
        if (name_bytes) *name_bytes = name;
        var.name = name;
        place.var_name = var.name;
        has_name = true;
      } else {
        scan.skip_field(tag, start);
      }
    });
    long attr_index = 0;
    std::size_t known = 0;
    Var::ExplicitDefaults& explicit_defaults = var.explicit_defaults;
    for_each_field(r, [&](const Tag& tag, std::size_t start) {
      switch (tag.field) {
        case fl::var::kName: r.read_bytes(); break;
        case fl::var::kType:
          parse_var_type(nested(r, tag, start, "type"), var, place);
          has_type = true;
          break;
        case fl::var::kPersistable:
          read_flag(r, tag, start, "persistable", var.persistable, explicit_defaults.persistable);
          break;
        case fl::var::kNeedCheckFeed:
          read_flag(r, tag, start, "need_check_feed", var.need_check_feed,
                    explicit_defaults.need_check_feed);
          break;
        case fl::var::kIsParameter:
          read_flag(r, tag, start, "is_parameter", var.is_parameter,
                    explicit_defaults.is_parameter);
          break;
        case fl::var::kStopGradient:
          read_flag(r, tag, start, "stop_gradient", var.stop_gradient,
                    explicit_defaults.stop_gradient);
          break;
        case fl::var::kAttrs: {
          place.attr = attr_index++;
          var.attrs.push_back(parse_var_attr(nested_at(r, tag, start, "attrs", place), place));
          leave_attr(place);
          break;
        }
        default: var.unknown_fields.append(known, r.skip_field(tag, start)); return;
      }
      ++known;
    });
    var.unknown_fields.close(known);
  });
  if (!has_name) fail(place, "VarDesc has no name (field 1)");
  if (!has_type) fail(place, "VarDesc has no type (field 2)");
  read_is_distributed(var);  // ctp models is_distributed itself (var.h)
  return var;
}

}  // namespace ctp::proto_read
