#include "program_ir/builder.h"

namespace ctp {

OpBuilder& OpBuilder::in(const std::string& slot, std::vector<std::string> args) {
  op_.set_input(slot, std::move(args));
  return *this;
}

OpBuilder& OpBuilder::out(const std::string& slot, std::vector<std::string> args) {
  op_.set_output(slot, std::move(args));
  return *this;
}

ProgramBuilder& ProgramBuilder::in_block(int32_t idx) {
  program_.block(idx);  // throws when absent
  current_ = idx;
  return *this;
}

Var& ProgramBuilder::data(const std::string& name, std::vector<int64_t> shape,
                          DataType dtype) {
  Var v;
  v.name = name;
  v.dtype = dtype;
  v.shape = std::move(shape);
  v.stop_gradient = true;
  v.need_check_feed = true;
  return block().add_var(std::move(v));
}

Var& ProgramBuilder::param(const std::string& name, std::vector<int64_t> shape,
                           DataType dtype, bool is_distributed) {
  Var v;
  v.name = name;
  v.dtype = dtype;
  v.shape = std::move(shape);
  v.persistable = true;
  v.is_parameter = true;
  v.is_distributed = is_distributed;
  return block().add_var(std::move(v));
}

Var& ProgramBuilder::persistable(const std::string& name, std::vector<int64_t> shape,
                                 DataType dtype) {
  Var v;
  v.name = name;
  v.dtype = dtype;
  v.shape = std::move(shape);
  v.persistable = true;
  v.stop_gradient = true;
  return block().add_var(std::move(v));
}

Var& ProgramBuilder::tmp(const std::string& name, std::vector<int64_t> shape,
                         DataType dtype) {
  Var v;
  v.name = name;
  v.dtype = dtype;
  v.shape = std::move(shape);
  return block().add_var(std::move(v));
}

OpBuilder ProgramBuilder::op(const std::string& type) {
  Block::OpHandle h = block().append_op(Op(type));
  return OpBuilder(*h);
}

}  // namespace ctp
