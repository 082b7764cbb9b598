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

void write_tensor_desc(Writer& w, const Var& var) {
  w.int32_field(fl::tensor_desc::kDataType, static_cast<int32_t>(var.dtype));
  for (int64_t d : var.shape) w.int64_field(fl::tensor_desc::kDims, d);
}

void write_var_type(Writer& w, const Var& var) {
  std::size_t body = w.begin_message(fl::var::kType);
  w.int32_field(fl::var_type::kType, static_cast<int32_t>(var.type));
  if (uint32_t field = fl::tensor_desc_field(var.type)) {
    std::size_t desc = w.begin_message(field);
    if (var.type == VarKind::SELECTED_ROWS) {
      write_tensor_desc(w, var);
    } else {
      std::size_t tensor = w.begin_message(fl::lod_tensor_desc::kTensor);
      write_tensor_desc(w, var);
      w.end_message(tensor);
      if (var.lod_level != 0) w.int32_field(fl::lod_tensor_desc::kLodLevel, var.lod_level);
    }
    w.end_message(desc);
  }
  w.raw(var.type_unknown_fields);
  w.end_message(body);
}

void write_var_attr(Writer& w, const VarAttr& attr) {
  std::size_t body = w.begin_message(fl::var::kAttrs);
  w.bytes_field(fl::var_attr::kName, attr.name);
  w.int32_field(fl::var_attr::kType, static_cast<int32_t>(attr.type));
  if (attr.type == AttrType::INT || attr.type == AttrType::BOOLEAN || attr.i != 0)
    w.int32_field(fl::var_attr::kI, attr.i);
  if (attr.type == AttrType::STRING || !attr.s.empty()) w.bytes_field(fl::var_attr::kS, attr.s);
  for (int32_t v : attr.ints) w.int32_field(fl::var_attr::kInts, v);
  w.end_message(body);
}

void write_var(Writer& w, const Var& var) {
  std::size_t body = w.begin_message(fl::block::kVars);
  w.bytes_field(fl::var::kName, var.name);
  write_var_type(w, var);
  if (var.persistable) w.bool_field(fl::var::kPersistable, true);
  if (var.need_check_feed) w.bool_field(fl::var::kNeedCheckFeed, true);
  if (var.is_parameter) w.bool_field(fl::var::kIsParameter, true);
  if (var.stop_gradient) w.bool_field(fl::var::kStopGradient, true);
  for (const VarAttr& attr : var.attrs) write_var_attr(w, attr);
  if (var.is_distributed)
    write_var_attr(w, VarAttr{.name = "is_distributed", .type = AttrType::BOOLEAN, .i = 1});
  w.raw(var.unknown_fields);
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
  for (const Slot& slot : op.inputs) write_slot(w, fl::op::kInputs, slot);
  for (const Slot& slot : op.outputs) write_slot(w, fl::op::kOutputs, slot);
  w.bytes_field(fl::op::kType, op.type);
  for (const NamedAttribute& attr : op.attrs) {
    std::size_t attr_body = w.begin_message(fl::op::kAttrs);
    w.bytes_field(fl::op_attr::kName, attr.name);
    w.int32_field(fl::op_attr::kType, static_cast<int32_t>(attr.value.type()));
    write_attr_value(w, attr.value);
    w.end_message(attr_body);
  }
  if (op.is_target) w.bool_field(fl::op::kIsTarget, true);
  w.raw(op.unknown_fields);
  w.end_message(body);
}

void write_block(Writer& w, const Block& block) {
  std::size_t body = w.begin_message(fl::program::kBlocks);
  w.int32_field(fl::block::kIdx, block.idx);
  w.int32_field(fl::block::kParentIdx, block.parent_idx);
  for (const Var& var : block.vars()) write_var(w, var);
  for (const Op& op : block.ops()) write_op(w, op);
  if (block.forward_block_idx != -1)
    w.int32_field(fl::block::kForwardBlockIdx, block.forward_block_idx);
  w.raw(block.unknown_fields);
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
  for (const Block& block : program.blocks) write_block(w, block);
  if (program.op_compatible_map)
    w.bytes_field(fl::program::kOpCompatibleMap, *program.op_compatible_map);
  if (program.version) {
    std::size_t body = w.begin_message(fl::program::kVersion);
    w.int64_field(fl::version::kVersion, *program.version);
    w.end_message(body);
  }
  if (program.op_version_map) {
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
  w.raw(program.unknown_fields);
  return out;
}

}  // namespace ctp
