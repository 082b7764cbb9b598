// Reading ProgramDesc bytes into a Program, straight from the wire (no
// intermediate protobuf objects), so that errors name their place and unknown
// fields keep their exact bytes. The writer is in proto_writer.cc.
#include "program_ir/proto_io.h"

#include <memory>
#include <optional>

#include "program_ir/framework_fields.h"
#include "program_ir/op_compatible_map.h"
#include "program_ir/op_role.h"
#include "program_ir/wire_attrs.h"
#include "program_ir/wire_read.h"
#include "program_ir/wire_slots.h"

namespace ctp {
namespace {

using namespace wire_read;
namespace fl = fields;

// The parsers share one SourceLocation (wire_read.h): each sets the fields
// of the place it enters, and its caller clears them when it returns.
void leave_attr(SourceLocation& place) {
  place.attr = -1;
  place.attr_name.clear();
}

// --- VarDesc ---

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

Var parse_var(Reader r, SourceLocation& place) {
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

// --- OpDesc ---

// Where an op's attributes lie in its OpDesc: one run of fields with nothing
// between them (as every protobuf library writes them) stays as wire bytes.
struct AttrFields {
  std::size_t from = 0, to = 0;
  uint32_t count = 0;
  bool one_run = true;
  bool names_lead = true;  // WireAttrs::names_lead
  // Where the first op_role and op_role_var start (WireAttrs::op_role_at).
  uint32_t op_role_at = WireAttrs::kAbsent;
  uint32_t op_role_var_at = WireAttrs::kAbsent;
  void add(std::size_t start, std::size_t end, bool name_leads, std::string_view name) {
    if (count == 0) from = start;
    else if (start != to) one_run = false;
    to = end;
    names_lead = names_lead && name_leads;
    ++count;
    const auto at = static_cast<uint32_t>(start - from);
    if (name == kOpRoleAttr && op_role_at == WireAttrs::kAbsent) op_role_at = at;
    if (name == kOpRoleVarAttr && op_role_var_at == WireAttrs::kAbsent) op_role_var_at = at;
  }
  // Offsets fit in WireAttrs' 32 bits (an op's attributes under 4 GiB).
  bool can_note_roles() const { return to - from < WireAttrs::kAbsent; }
};

// Where the bytes being read live, when something keeps them alive: ops
// then keep views of them (their attributes, and their whole OpDesc) rather
// than copies. Without an owner every op gets copies of its attribute bytes
// and decoded slots.
struct InputOwner {
  std::shared_ptr<const void> owner;
};

// The op's attributes, checked already: kept as their bytes when they are
// one run, else decoded (`r` reads the whole OpDesc again).
void keep_attrs(Op& op, Reader r, const AttrFields& fields, const InputOwner& input) {
  if (fields.count == 0) return;
  if (fields.one_run) {
    const std::string_view bytes = r.span(fields.from, fields.to);
    WireAttrs wire = input.owner ? WireAttrs{.fields = bytes, .owner = input.owner,
                                             .count = fields.count,
                                             .names_lead = fields.names_lead}
                                 : WireAttrs::copied(bytes, fields.count, fields.names_lead);
    if (fields.can_note_roles()) {
      wire.roles_noted = true;
      wire.op_role_at = fields.op_role_at;
      wire.op_role_var_at = fields.op_role_var_at;
    }
    op.set_wire_attrs(std::move(wire));
    return;
  }
  std::vector<NamedAttribute>& attrs = op.mutable_attrs();
  attrs.reserve(fields.count);
  SourceLocation place;
  for_each_field(r, [&](const Tag& tag, std::size_t start) {
    if (tag.field != fl::op::kAttrs) {
      r.skip_field(tag, start);
      return;
    }
    attrs.push_back(parse_op_attr(nested(r, tag, start, "attrs"), place));
  });
}

Op parse_op(Reader r, SourceLocation& place, const InputOwner& input) {
  Op op;
  bool has_type = false;
  // With an owner, slots are only checked here: the op keeps its OpDesc's
  // bytes and decodes them when asked (or below, if it cannot keep them).
  const bool keep_bytes = input.owner != nullptr;
  guarded(place, [&] {
    const Reader whole = r;
    Reader scan = r;
    std::string_view type_bytes;
    std::size_t input_count = 0, output_count = 0;
    for_each_field(scan, [&](const Tag& tag, std::size_t start) {
      if (tag.field == fl::op::kType) {
        type_bytes = read_bytes_field(scan, tag, start, "type");
        op.type = type_bytes;
        place.op_type = op.type;
        has_type = true;
        return;
      }
      input_count += tag.field == fl::op::kInputs;
      output_count += tag.field == fl::op::kOutputs;
      scan.skip_field(tag, start);
    });
    if (!keep_bytes) {
      op.mutable_inputs().reserve(input_count);
      op.mutable_outputs().reserve(output_count);
    }
    long inputs = 0, outputs = 0;
    AttrFields attr_fields;
    std::size_t known = 0;
    for_each_field(r, [&](const Tag& tag, std::size_t start) {
      switch (tag.field) {
        case fl::op::kInputs:
        case fl::op::kOutputs: {
          const bool is_input = tag.field == fl::op::kInputs;
          const char* side = is_input ? "input" : "output";
          place.slot_side = side;
          place.slot = is_input ? inputs++ : outputs++;
          Slot* slot = keep_bytes ? nullptr
                                  : &(is_input ? op.mutable_inputs() : op.mutable_outputs())
                                         .emplace_back();
          read_wire_slot(nested_at(r, tag, start, side, place), place, slot);
          place.slot_side.clear();
          place.slot = -1;
          break;
        }
        case fl::op::kType: r.read_bytes(); break;
        case fl::op::kAttrs: {
          // Checked here, so that an error names its place; kept below.
          place.attr = attr_fields.count;
          const bool name_leads =
              check_op_attr(nested_at(r, tag, start, "attrs", place), place);
          attr_fields.add(start, r.position(), name_leads, place.attr_name);
          leave_attr(place);
          break;
        }
        case fl::op::kIsTarget:
          op.is_target = read_varint_field(r, tag, start, "is_target") != 0;
          op.is_target_explicit = !op.is_target;
          break;
        default: op.unknown_fields.append(known, r.skip_field(tag, start)); return;
      }
      ++known;
    });
    op.unknown_fields.close(known);
    keep_attrs(op, whole, attr_fields, input);
    if (!keep_bytes) return;
    const std::string_view bytes = whole.span(0, whole.remaining());
    if (op.unknown_fields.empty() && attr_fields.one_run) {
      op.set_wire_op(WireOp{.bytes = bytes, .owner = input.owner, .type = type_bytes,
                            .is_target = op.is_target,
                            .is_target_explicit = op.is_target_explicit});
    } else {
      decode_wire_slots(bytes, op.mutable_inputs(), op.mutable_outputs());
    }
  });
  if (!has_type) fail(place, "OpDesc has no type (field 3)");
  return op;
}

// --- BlockDesc and ProgramDesc ---

Block parse_block(Reader r, SourceLocation& place, const InputOwner& input) {
  Block block;
  bool has_idx = false, has_parent = false;
  long var_index = 0, op_index = 0;
  std::size_t known = 0;
  guarded(place, [&] {
    block.reserve_vars(count_field(r, fl::block::kVars));
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
          place.var = var_index++;
          auto [added, is_new] =
              block.emplace_var(parse_var(nested_at(r, tag, start, "vars", place), place));
          if (!is_new) {
            place.var_name = added.name;
            fail(place, "declared twice in the block");
          }
          place.var = -1;
          place.var_name.clear();
          break;
        }
        case fl::block::kOps: {
          place.op = op_index++;
          block.append_op(parse_op(nested_at(r, tag, start, "ops", place), place, input));
          place.op = -1;
          place.op_type.clear();
          break;
        }
        case fl::block::kForwardBlockIdx:
          block.forward_block_idx =
              wire::as_int32(read_varint_field(r, tag, start, "forward_block_idx"));
          block.forward_block_idx_explicit = block.forward_block_idx == -1;
          break;
        default: block.unknown_fields.append(known, r.skip_field(tag, start)); return;
      }
      ++known;
    });
    block.unknown_fields.close(known);
  });
  if (!has_idx) fail(place, "BlockDesc has no idx (field 1)");
  if (!has_parent) fail(place, "BlockDesc has no parent_idx (field 2)");
  return block;
}

// Version.version, when the message has it.
std::optional<int64_t> parse_version(Reader r, const SourceLocation& place) {
  std::optional<int64_t> version;
  guarded(place, [&] {
    for_each_field(r, [&](const Tag& tag, std::size_t start) {
      if (tag.field != fl::version::kVersion) unknown_in(r, tag, start, "Version");
      version = wire::as_int64(read_varint_field(r, tag, start, "version"));
    });
  });
  return version;
}

OpVersionEntry parse_op_version_pair(Reader r, const SourceLocation& place) {
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

void parse_op_version_map(Reader r, const SourceLocation& place, std::vector<OpVersionEntry>& out) {
  guarded(place, [&] {
    for_each_field(r, [&](const Tag& tag, std::size_t start) {
      if (tag.field != fl::op_version_map::kPair) unknown_in(r, tag, start, "OpVersionMap");
      out.push_back(parse_op_version_pair(nested(r, tag, start, "pair"), place));
    });
  });
}

Program parse_program(std::string_view bytes, const std::string& source,
                      const InputOwner& input) {
  Program program;
  SourceLocation place{.source = source};
  Reader r(bytes, 0);
  std::size_t known = 0;
  guarded(place, [&] {
    for_each_field(r, [&](const Tag& tag, std::size_t start) {
      switch (tag.field) {
        case fl::program::kBlocks: {
          place.block = static_cast<int64_t>(program.blocks.size());
          program.blocks.push_back(
              parse_block(nested_at(r, tag, start, "blocks", place), place, input));
          place.block = -1;
          break;
        }
        case fl::program::kOpCompatibleMap: {
          std::string_view map = read_bytes_field(r, tag, start, "op_compatible_map");
          SourceLocation map_place = place;
          map_place.part = "op_compatible_map";
          guarded(map_place, [&] { decode_op_compatible_map(map, r.last_payload_offset()); });
          // Messages merge; for raw bytes that is appending.
          if (!program.op_compatible_map) program.op_compatible_map.emplace();
          program.op_compatible_map->append(map);
          break;
        }
        case fl::program::kVersion: {
          place.part = "version";
          // A second Version message merges into the first.
          if (auto number = parse_version(nested(r, tag, start, "version"), place)) {
            program.version = *number;
            program.version_number_absent = false;
          } else if (!program.version) {
            program.version = 0;
            program.version_number_absent = true;
          }
          place.part.clear();
          break;
        }
        case fl::program::kOpVersionMap: {
          place.part = "op_version_map";
          if (!program.op_version_map) program.op_version_map.emplace();
          parse_op_version_map(nested(r, tag, start, "op_version_map"), place,
                               *program.op_version_map);
          place.part.clear();
          break;
        }
        default: program.unknown_fields.append(known, r.skip_field(tag, start)); return;
      }
      ++known;
    });
    program.unknown_fields.close(known);
  });
  return program;
}

}  // namespace

Program parse_program_proto(std::string_view bytes, const std::string& source) {
  return parse_program(bytes, source, InputOwner{});
}

Program parse_program_proto(std::string_view bytes, const std::string& source,
                            std::shared_ptr<const void> owner) {
  return parse_program(bytes, source, InputOwner{std::move(owner)});
}

}  // namespace ctp
