// Writing a Program as ProgramDesc bytes. The rules that make the output
// deterministic are listed in proto_io.h.
#include "program_ir/framework_fields.h"
#include "program_ir/proto_io.h"
#include "program_ir/wire_format.h"

namespace ctp {
namespace {

using wire::WireType;
using wire::Writer;
namespace fl = fields;

// Writes a message's unknown fields at their places (unknown_fields.h).
struct RawSink {
  Writer& w;
  void operator()(std::string_view bytes) const { w.raw(bytes); }
};
using Unknowns = UnknownFieldsCursor<const RawSink>;

void write_tensor_desc(Writer& w, DataType dtype, const std::vector<int64_t>& shape) {
  w.int32_field(fl::tensor_desc::kDataType, static_cast<int32_t>(dtype));
  for (int64_t d : shape) w.int64_field(fl::tensor_desc::kDims, d);
}

void write_lod_tensor_desc(Writer& w, uint32_t field, DataType dtype,
                           const std::vector<int64_t>& shape,
                           const std::optional<int32_t>& lod_level) {
  std::size_t desc = w.begin_message(field);
  std::size_t tensor = w.begin_message(fl::lod_tensor_desc::kTensor);
  write_tensor_desc(w, dtype, shape);
  w.end_message(tensor);
  if (lod_level) w.int32_field(fl::lod_tensor_desc::kLodLevel, *lod_level);
  w.end_message(desc);
}

void write_var_tensor_desc(Writer& w, uint32_t field, const Var& var) {
  if (kind_has_lod_level(var.type)) {
    write_lod_tensor_desc(w, field, var.dtype, var.shape, var.lod_level);
  } else {
    std::size_t desc = w.begin_message(field);
    write_tensor_desc(w, var.dtype, var.shape);
    w.end_message(desc);
  }
}

void write_var_type(Writer& w, const Var& var) {
  std::size_t body = w.begin_message(fl::var::kType);
  const RawSink sink{w};
  Unknowns unknown(var.type_unknown_fields, sink);
  unknown.before_known();
  w.int32_field(fl::var_type::kType, static_cast<int32_t>(var.type));
  // Fields in number order: the kind's description sits before reader (5)
  // for the older kinds and after tuple (7) for the newer ones.
  const uint32_t desc_field = var.has_tensor_desc() ? fl::tensor_desc_field(var.type) : 0;
  auto desc_if = [&](bool before_reader) {
    if (desc_field == 0 || (desc_field < fl::var_type::kReader) != before_reader) return;
    unknown.before_known();
    write_var_tensor_desc(w, desc_field, var);
  };
  desc_if(true);
  if (var.reader) {
    unknown.before_known();
    std::size_t reader = w.begin_message(fl::var_type::kReader);
    for (const ReaderTensorDesc& d : *var.reader)
      write_lod_tensor_desc(w, fl::reader_desc::kLodTensor, d.dtype, d.shape, d.lod_level);
    w.end_message(reader);
  }
  if (var.tuple) {
    unknown.before_known();
    std::size_t tuple = w.begin_message(fl::var_type::kTuple);
    for (VarKind kind : *var.tuple)
      w.int32_field(fl::tuple::kElementType, static_cast<int32_t>(kind));
    w.end_message(tuple);
  }
  desc_if(false);
  unknown.finish();
  w.end_message(body);
}

void write_var_attr(Writer& w, const VarAttr& attr) {
  std::size_t body = w.begin_message(fl::var::kAttrs);
  w.bytes_field(fl::var_attr::kName, attr.name);
  w.int32_field(fl::var_attr::kType, static_cast<int32_t>(attr.type));
  if (attr.i) w.int32_field(fl::var_attr::kI, *attr.i);
  if (attr.s) w.bytes_field(fl::var_attr::kS, *attr.s);
  for (int32_t v : attr.ints) w.int32_field(fl::var_attr::kInts, v);
  w.end_message(body);
}

void write_var(Writer& w, const Var& var) {
  std::size_t body = w.begin_message(fl::block::kVars);
  const RawSink sink{w};
  Unknowns unknown(var.unknown_fields, sink);
  unknown.before_known();
  w.bytes_field(fl::var::kName, var.name);
  unknown.before_known();
  write_var_type(w, var);
  const Var::ExplicitDefaults& explicit_defaults = var.explicit_defaults;
  auto flag = [&](uint32_t field, bool value, bool explicit_default) {
    if (!value && !explicit_default) return;
    unknown.before_known();
    w.bool_field(field, value);
  };
  flag(fl::var::kPersistable, var.persistable, explicit_defaults.persistable);
  flag(fl::var::kNeedCheckFeed, var.need_check_feed, explicit_defaults.need_check_feed);
  flag(fl::var::kIsParameter, var.is_parameter, explicit_defaults.is_parameter);
  flag(fl::var::kStopGradient, var.stop_gradient, explicit_defaults.stop_gradient);
  for (const VarAttr& attr : var.written_attrs()) {
    unknown.before_known();
    write_var_attr(w, attr);
  }
  unknown.finish();
  w.end_message(body);
}

void write_slot(Writer& w, uint32_t field, const Slot& slot) {
  std::size_t body = w.begin_message(field);
  w.bytes_field(fl::op_slot::kParameter, slot.name);
  for (const std::string& arg : slot.args) w.bytes_field(fl::op_slot::kArguments, arg);
  w.end_message(body);
}

void write_attr_value(Writer& w, const Attribute& attr) {
  const fl::AttrValueField vf = fl::attr_value_field(attr.type());
  const uint32_t f = vf.field;
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

void write_op(Writer& w, const Op& op) {
  std::size_t body = w.begin_message(fl::block::kOps);
  const RawSink sink{w};
  Unknowns unknown(op.unknown_fields, sink);
  for (const Slot& slot : op.inputs) {
    unknown.before_known();
    write_slot(w, fl::op::kInputs, slot);
  }
  for (const Slot& slot : op.outputs) {
    unknown.before_known();
    write_slot(w, fl::op::kOutputs, slot);
  }
  unknown.before_known();
  w.bytes_field(fl::op::kType, op.type);
  for (const NamedAttribute& attr : op.attrs) {
    unknown.before_known();
    std::size_t attr_body = w.begin_message(fl::op::kAttrs);
    w.bytes_field(fl::op_attr::kName, attr.name);
    w.int32_field(fl::op_attr::kType, static_cast<int32_t>(attr.value.type()));
    write_attr_value(w, attr.value);
    w.end_message(attr_body);
  }
  if (op.is_target || op.is_target_explicit) {
    unknown.before_known();
    w.bool_field(fl::op::kIsTarget, op.is_target);
  }
  unknown.finish();
  w.end_message(body);
}

void write_block(Writer& w, const Block& block) {
  std::size_t body = w.begin_message(fl::program::kBlocks);
  const RawSink sink{w};
  Unknowns unknown(block.unknown_fields, sink);
  unknown.before_known();
  w.int32_field(fl::block::kIdx, block.idx);
  unknown.before_known();
  w.int32_field(fl::block::kParentIdx, block.parent_idx);
  for (const Var& var : block.vars()) {
    unknown.before_known();
    write_var(w, var);
  }
  for (const Op& op : block.ops()) {
    unknown.before_known();
    write_op(w, op);
  }
  if (block.forward_block_idx != -1 || block.forward_block_idx_explicit) {
    unknown.before_known();
    w.int32_field(fl::block::kForwardBlockIdx, block.forward_block_idx);
  }
  unknown.finish();
  w.end_message(body);
}

}  // namespace

std::string serialize_program_proto(const Program& program) {
  // As in program_to_json: reserve rather than grow (~240 bytes per op in
  // a typical training program).
  std::size_t ops = 0, vars = 0;
  for (const Block& b : program.blocks) {
    ops += b.op_count();
    vars += b.var_count();
  }
  std::string out;
  out.reserve(1024 + ops * 384 + vars * 128);
  Writer w(out);
  const RawSink sink{w};
  Unknowns unknown(program.unknown_fields, sink);
  for (const Block& block : program.blocks) {
    unknown.before_known();
    write_block(w, block);
  }
  if (program.op_compatible_map) {
    unknown.before_known();
    w.bytes_field(fl::program::kOpCompatibleMap, *program.op_compatible_map);
  }
  if (program.version) {
    unknown.before_known();
    std::size_t body = w.begin_message(fl::program::kVersion);
    if (*program.version != 0 || !program.version_number_absent)
      w.int64_field(fl::version::kVersion, *program.version);
    w.end_message(body);
  }
  if (program.op_version_map) {
    unknown.before_known();
    std::size_t map = w.begin_message(fl::program::kOpVersionMap);
    for (const OpVersionEntry& entry : *program.op_version_map) {
      std::size_t pair = w.begin_message(fl::op_version_map::kPair);
      w.bytes_field(fl::op_version_map::kPairOpName, entry.op_name);
      std::size_t version = w.begin_message(fl::op_version_map::kPairOpVersion);
      w.int32_field(fl::op_version_map::kOpVersionVersion, entry.version);
      w.end_message(version);
      w.end_message(pair);
    }
    w.end_message(map);
  }
  unknown.finish();
  return out;
}

}  // namespace ctp
