// Reading ProgramDesc bytes into a Program, straight from the wire (no
// intermediate protobuf objects), so that errors name their place and unknown
// fields keep their exact bytes. The writer is in proto_writer.cc.
#include "program_ir/proto_io.h"

#include <optional>

#include "program_ir/framework_fields.h"
#include "program_ir/wire_read.h"

namespace ctp {
namespace {

using namespace wire_read;
namespace fl = fields;

// --- VarDesc ---

void parse_tensor_desc(Reader r, Var& var, const Place& place) {
  bool has_data_type = false;
  guarded(place, [&] {
    var.shape.reserve(var.shape.size() + count_field(r, fl::tensor_desc::kDims));
    for_each_field(r, [&](const Tag& tag, std::size_t start) {
      switch (tag.field) {
        case fl::tensor_desc::kDataType:
          var.dtype = data_type_of_wire_kind(read_var_kind(
              read_varint_field(r, tag, start, "data_type"), place, "TensorDesc.data_type"));
          has_data_type = true;
          break;
        case fl::tensor_desc::kDims:
          read_repeated(r, tag, start, "dims", WireType::Varint, 0, var.shape, read_int64);
          break;
        default: unknown_in(r, tag, start, "TensorDesc");
      }
    });
  });
  if (!has_data_type) fail(place, "TensorDesc has no data_type (field 1)");
}

void parse_lod_tensor_desc(Reader r, Var& var, const Place& place) {
  bool has_tensor = false;
  guarded(place, [&] {
    for_each_field(r, [&](const Tag& tag, std::size_t start) {
      switch (tag.field) {
        case fl::lod_tensor_desc::kTensor:
          parse_tensor_desc(nested(r, tag, start, "tensor"), var, place);
          has_tensor = true;
          break;
        case fl::lod_tensor_desc::kLodLevel:
          var.lod_level = wire::as_int32(read_varint_field(r, tag, start, "lod_level"));
          break;
        default: unknown_in(r, tag, start, "LoDTensorDesc");
      }
    });
  });
  if (!has_tensor) fail(place, "LoDTensorDesc has no tensor (field 1)");
}

void parse_var_type(Reader r, Var& var, const Place& place) {
  guarded(place, [&] {
    // The kind decides which tensor description is ctp's, so find it first.
    std::optional<uint64_t> kind;
    Reader scan = r;
    for_each_field(scan, [&](const Tag& tag, std::size_t start) {
      if (tag.field == fl::var_type::kType)
        kind = read_varint_field(scan, tag, start, "type");
      else
        scan.skip_field(tag, start);
    });
    if (!kind) fail(place, "VarType has no type (field 1)");
    var.type = read_var_kind(*kind, place, "VarType.Type");
    const uint32_t desc_field = fl::tensor_desc_field(var.type);
    for_each_field(r, [&](const Tag& tag, std::size_t start) {
      if (tag.field == fl::var_type::kType) {
        r.read_varint();
      } else if (desc_field != 0 && tag.field == desc_field) {
        Reader desc = nested(r, tag, start, "tensor description");
        if (var.type == VarKind::SELECTED_ROWS)
          parse_tensor_desc(desc, var, place);
        else
          parse_lod_tensor_desc(desc, var, place);
      } else {
        var.type_unknown_fields.append(r.skip_field(tag, start));
      }
    });
  });
}

VarAttr parse_var_attr(Reader r, Place place) {
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

Var parse_var(Reader r, Place place) {
  Var var;
  bool has_name = false, has_type = false;
  guarded(place, [&] {
    Reader scan = r;
    for_each_field(scan, [&](const Tag& tag, std::size_t start) {
      if (tag.field == fl::var::kName) {
        var.name = read_bytes_field(scan, tag, start, "name");
        place.var_name = var.name;
        has_name = true;
      } else {
        scan.skip_field(tag, start);
      }
    });
    long attr_index = 0;
    for_each_field(r, [&](const Tag& tag, std::size_t start) {
      switch (tag.field) {
        case fl::var::kName: r.read_bytes(); break;
        case fl::var::kType:
          parse_var_type(nested(r, tag, start, "type"), var, place);
          has_type = true;
          break;
        case fl::var::kPersistable:
          var.persistable = read_varint_field(r, tag, start, "persistable") != 0;
          break;
        case fl::var::kNeedCheckFeed:
          var.need_check_feed = read_varint_field(r, tag, start, "need_check_feed") != 0;
          break;
        case fl::var::kIsParameter:
          var.is_parameter = read_varint_field(r, tag, start, "is_parameter") != 0;
          break;
        case fl::var::kStopGradient:
          var.stop_gradient = read_varint_field(r, tag, start, "stop_gradient") != 0;
          break;
        case fl::var::kAttrs: {
          Place attr_place = place;
          attr_place.attr = attr_index++;
          VarAttr attr = parse_var_attr(nested_at(r, tag, start, "attrs", attr_place), attr_place);
          // ctp models is_distributed itself (see var.h).
          if (attr.name == "is_distributed" &&
              (attr.type == AttrType::BOOLEAN || attr.type == AttrType::INT))
            var.is_distributed = attr.i != 0;
          else
            var.attrs.push_back(std::move(attr));
          break;
        }
        default: var.unknown_fields.append(r.skip_field(tag, start));
      }
    });
  });
  if (!has_name) fail(place, "VarDesc has no name (field 1)");
  if (!has_type) fail(place, "VarDesc has no type (field 2)");
  return var;
}

// --- OpDesc ---

Slot parse_slot(Reader r, const Place& place) {
  Slot slot;
  bool has_parameter = false;
  guarded(place, [&] {
    slot.args.reserve(count_field(r, fl::op_slot::kArguments));
    for_each_field(r, [&](const Tag& tag, std::size_t start) {
      switch (tag.field) {
        case fl::op_slot::kParameter:
          slot.name = read_bytes_field(r, tag, start, "parameter");
          has_parameter = true;
          break;
        case fl::op_slot::kArguments:
          slot.args.emplace_back(read_bytes_field(r, tag, start, "arguments"));
          break;
        default: unknown_in(r, tag, start, "OpDesc.Var");
      }
    });
  });
  if (!has_parameter) fail(place, "OpDesc.Var has no parameter (field 1)");
  return slot;
}

AttrValue empty_value(AttrType type) {
  switch (variant_index_for(type)) {
    case 0: return int32_t{0};
    case 1: return 0.0f;
    case 2: return std::string();
    case 3: return std::vector<int32_t>();
    case 4: return std::vector<float>();
    case 5: return std::vector<std::string>();
    case 6: return false;
    case 7: return std::vector<bool>();
    case 8: return int64_t{0};
    case 9: return std::vector<int64_t>();
    case 10: return std::vector<double>();
    default: return 0.0;
  }
}

// Reads one occurrence of the attr's value field into `value`.
void read_attr_value(Reader& r, const Tag& tag, std::size_t start, AttrType type,
                     const fl::AttrValueField& vf, AttrValue& value) {
  using K = fl::ValueKind;
  if (!vf.repeated) {
    switch (vf.kind) {
      case K::Int32: value = wire::as_int32(read_varint_field(r, tag, start, vf.name)); return;
      case K::Int64: value = wire::as_int64(read_varint_field(r, tag, start, vf.name)); return;
      case K::Bool: value = read_varint_field(r, tag, start, vf.name) != 0; return;
      case K::Float:
        expect_wire(r, tag, WireType::Fixed32, start, vf.name);
        value = read_float(r);
        return;
      case K::Double:
        expect_wire(r, tag, WireType::Fixed64, start, vf.name);
        value = read_double(r);
        return;
      case K::Bytes: {
        std::string_view bytes = read_bytes_field(r, tag, start, vf.name);
        // A repeated message field merges, which for raw bytes is appending.
        if (type == AttrType::SCALAR)
          std::get<std::string>(value).append(bytes);
        else
          value = std::string(bytes);
        return;
      }
    }
  }
  switch (vf.kind) {
    case K::Int32:
      read_repeated(r, tag, start, vf.name, WireType::Varint, 0,
                    std::get<std::vector<int32_t>>(value), read_int32);
      return;
    case K::Int64:
      read_repeated(r, tag, start, vf.name, WireType::Varint, 0,
                    std::get<std::vector<int64_t>>(value), read_int64);
      return;
    case K::Bool:
      read_repeated(r, tag, start, vf.name, WireType::Varint, 0,
                    std::get<std::vector<bool>>(value), read_bool);
      return;
    case K::Float:
      read_repeated(r, tag, start, vf.name, WireType::Fixed32, 4,
                    std::get<std::vector<float>>(value), read_float);
      return;
    case K::Double:
      read_repeated(r, tag, start, vf.name, WireType::Fixed64, 8,
                    std::get<std::vector<double>>(value), read_double);
      return;
    case K::Bytes:
      std::get<std::vector<std::string>>(value).emplace_back(
          read_bytes_field(r, tag, start, vf.name));
      return;
  }
}

NamedAttribute parse_op_attr(Reader r, Place place) {
  std::string_view name;
  bool has_name = false;
  std::optional<uint64_t> raw_type;
  return guarded(place, [&] {
    Reader scan = r;
    for_each_field(scan, [&](const Tag& tag, std::size_t start) {
      if (tag.field == fl::op_attr::kName) {
        name = read_bytes_field(scan, tag, start, "name");
        place.attr_name = name;
        has_name = true;
      } else if (tag.field == fl::op_attr::kType) {
        raw_type = read_varint_field(scan, tag, start, "type");
      } else {
        scan.skip_field(tag, start);
      }
    });
    if (!has_name) fail(place, "OpDesc.Attr has no name (field 1)");
    if (!raw_type) fail(place, "OpDesc.Attr has no type (field 2)");
    const AttrType type = read_attr_type(*raw_type, place);
    const fl::AttrValueField vf = fl::attr_value_field(type);
    AttrValue value = empty_value(type);
    bool has_value = false;
    for_each_field(r, [&](const Tag& tag, std::size_t start) {
      if (tag.field == fl::op_attr::kName || tag.field == fl::op_attr::kType) {
        r.skip_field(tag, start);
      } else if (tag.field == vf.field) {
        read_attr_value(r, tag, start, type, vf, value);
        has_value = true;
      } else if (fl::is_attr_value_field(tag.field)) {
        throw WireFault(r.offset_at(start),
                        "attr of type " + std::string(to_string(type)) + " also sets field " +
                            std::to_string(tag.field) + " (a value of another type)");
      } else {
        unknown_in(r, tag, start, "OpDesc.Attr");
      }
    });
    if (!has_value && !vf.repeated)
      fail(place, "attr of type " + std::string(to_string(type)) + " has no value (field " +
                      vf.name + " = " + std::to_string(vf.field) + ")");
    return NamedAttribute{std::string(name), Attribute(type, std::move(value))};
  });
}

Op parse_op(Reader r, Place place) {
  Op op;
  bool has_type = false;
  guarded(place, [&] {
    Reader scan = r;
    std::size_t input_count = 0, output_count = 0, attr_count = 0;
    for_each_field(scan, [&](const Tag& tag, std::size_t start) {
      if (tag.field == fl::op::kType) {
        op.type = read_bytes_field(scan, tag, start, "type");
        place.op_type = op.type;
        has_type = true;
        return;
      }
      input_count += tag.field == fl::op::kInputs;
      output_count += tag.field == fl::op::kOutputs;
      attr_count += tag.field == fl::op::kAttrs;
      scan.skip_field(tag, start);
    });
    op.inputs.reserve(input_count);
    op.outputs.reserve(output_count);
    op.attrs.reserve(attr_count);
    long inputs = 0, outputs = 0, attrs = 0;
    for_each_field(r, [&](const Tag& tag, std::size_t start) {
      switch (tag.field) {
        case fl::op::kInputs:
        case fl::op::kOutputs: {
          const bool is_input = tag.field == fl::op::kInputs;
          Place slot_place = place;
          slot_place.slot_side = is_input ? "input" : "output";
          slot_place.slot = is_input ? inputs++ : outputs++;
          Slot slot =
              parse_slot(nested_at(r, tag, start, slot_place.slot_side, slot_place), slot_place);
          (is_input ? op.inputs : op.outputs).push_back(std::move(slot));
          break;
        }
        case fl::op::kType: r.read_bytes(); break;
        case fl::op::kAttrs: {
          Place attr_place = place;
          attr_place.attr = attrs++;
          op.attrs.push_back(
              parse_op_attr(nested_at(r, tag, start, "attrs", attr_place), attr_place));
          break;
        }
        case fl::op::kIsTarget:
          op.is_target = read_varint_field(r, tag, start, "is_target") != 0;
          break;
        default: op.unknown_fields.append(r.skip_field(tag, start));
      }
    });
  });
  if (!has_type) fail(place, "OpDesc has no type (field 3)");
  return op;
}

// --- BlockDesc and ProgramDesc ---

Block parse_block(Reader r, Place place) {
  Block block;
  bool has_idx = false, has_parent = false;
  long var_index = 0, op_index = 0;
  guarded(place, [&] {
    for_each_field(r, [&](const Tag& tag, std::size_t start) {
      switch (tag.field) {
        case fl::block::kIdx:
          block.idx = wire::as_int32(read_varint_field(r, tag, start, "idx"));
          has_idx = true;
          break;
        case fl::block::kParentIdx:
          block.parent_idx = wire::as_int32(read_varint_field(r, tag, start, "parent_idx"));
          has_parent = true;
          break;
        case fl::block::kVars: {
          Place var_place = place;
          var_place.var = var_index++;
          Var var = parse_var(nested_at(r, tag, start, "vars", var_place), var_place);
          const std::size_t before = block.var_count();
          const Var& added = block.get_or_add_var(std::move(var));
          if (block.var_count() == before) {
            var_place.var_name = added.name;
            fail(var_place, "declared twice in the block");
          }
          break;
        }
        case fl::block::kOps: {
          Place op_place = place;
          op_place.op = op_index++;
          block.append_op(parse_op(nested_at(r, tag, start, "ops", op_place), op_place));
          break;
        }
        case fl::block::kForwardBlockIdx:
          block.forward_block_idx =
              wire::as_int32(read_varint_field(r, tag, start, "forward_block_idx"));
          break;
        default: block.unknown_fields.append(r.skip_field(tag, start));
      }
    });
  });
  if (!has_idx) fail(place, "BlockDesc has no idx (field 1)");
  if (!has_parent) fail(place, "BlockDesc has no parent_idx (field 2)");
  return block;
}

int64_t parse_version(Reader r, const Place& place) {
  int64_t version = 0;
  guarded(place, [&] {
    for_each_field(r, [&](const Tag& tag, std::size_t start) {
      if (tag.field != fl::version::kVersion) unknown_in(r, tag, start, "Version");
      version = wire::as_int64(read_varint_field(r, tag, start, "version"));
    });
  });
  return version;
}

OpVersionEntry parse_op_version_pair(Reader r, const Place& place) {
  OpVersionEntry entry;
  bool has_name = false, has_version = false;
  guarded(place, [&] {
    for_each_field(r, [&](const Tag& tag, std::size_t start) {
      if (tag.field == fl::op_version_map::kPairOpName) {
        entry.op_name = read_bytes_field(r, tag, start, "op_name");
        has_name = true;
      } else if (tag.field == fl::op_version_map::kPairOpVersion) {
        Reader version = nested(r, tag, start, "op_version");
        bool has_number = false;
        for_each_field(version, [&](const Tag& inner, std::size_t inner_start) {
          if (inner.field != fl::op_version_map::kOpVersionVersion)
            unknown_in(version, inner, inner_start, "OpVersion");
          entry.version =
              wire::as_int32(read_varint_field(version, inner, inner_start, "version"));
          has_number = true;
        });
        if (!has_number) fail(place, "OpVersion has no version (field 1)");
        has_version = true;
      } else {
        unknown_in(r, tag, start, "OpVersionPair");
      }
    });
  });
  if (!has_name) fail(place, "OpVersionPair has no op_name (field 1)");
  if (!has_version) fail(place, "OpVersionPair '" + printable(entry.op_name) + "' has no op_version (field 2)");
  return entry;
}

void parse_op_version_map(Reader r, const Place& place, std::vector<OpVersionEntry>& out) {
  guarded(place, [&] {
    for_each_field(r, [&](const Tag& tag, std::size_t start) {
      if (tag.field != fl::op_version_map::kPair) unknown_in(r, tag, start, "OpVersionMap");
      out.push_back(parse_op_version_pair(nested(r, tag, start, "pair"), place));
    });
  });
}

}  // namespace

Program parse_program_proto(std::string_view bytes, const std::string& source) {
  Program program;
  Place place{source};
  Reader r(bytes, 0);
  guarded(place, [&] {
    for_each_field(r, [&](const Tag& tag, std::size_t start) {
      switch (tag.field) {
        case fl::program::kBlocks: {
          Place block_place = place;
          block_place.block = static_cast<long>(program.blocks.size());
          program.blocks.push_back(
              parse_block(nested_at(r, tag, start, "blocks", block_place), block_place));
          break;
        }
        case fl::program::kOpCompatibleMap: {
          std::string_view map = read_bytes_field(r, tag, start, "op_compatible_map");
          // Messages merge; for raw bytes that is appending.
          if (!program.op_compatible_map) program.op_compatible_map.emplace();
          program.op_compatible_map->append(map);
          break;
        }
        case fl::program::kVersion: {
          Place version_place = place;
          version_place.part = "version";
          program.version = parse_version(nested(r, tag, start, "version"), version_place);
          break;
        }
        case fl::program::kOpVersionMap: {
          Place map_place = place;
          map_place.part = "op_version_map";
          if (!program.op_version_map) program.op_version_map.emplace();
          parse_op_version_map(nested(r, tag, start, "op_version_map"), map_place,
                               *program.op_version_map);
          break;
        }
        default: program.unknown_fields.append(r.skip_field(tag, start));
      }
    });
  });
  return program;
}

}  // namespace ctp
