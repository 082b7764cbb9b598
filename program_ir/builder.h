// A small fluent API for writing programs in a few lines (tests, samples):
//
//   ProgramBuilder pb;
//   pb.data("x", {-1, 784});
//   pb.param("fc_0.w_0", {784, 10});
//   pb.tmp("fc_0.tmp_0", {-1, 10});
//   pb.op("mul").in("X", "x").in("Y", "fc_0.w_0").out("Out", "fc_0.tmp_0")
//       .role(op_role::kForward);
//   Program p = pb.build();
#pragma once
#include <initializer_list>
#include <string>
#include <vector>

#include "program_ir/op_role.h"
#include "program_ir/program.h"

namespace ctp {

// Edits an op already placed in its block; its handle stays valid.
class OpBuilder {
 public:
  explicit OpBuilder(Op& op) : op_(op) {}
  OpBuilder& in(const std::string& slot, std::vector<std::string> args);
  OpBuilder& in(const std::string& slot, const std::string& arg) {
    return in(slot, std::vector<std::string>{arg});
  }
  OpBuilder& out(const std::string& slot, std::vector<std::string> args);
  OpBuilder& out(const std::string& slot, const std::string& arg) {
    return out(slot, std::vector<std::string>{arg});
  }
  OpBuilder& attr(const std::string& name, Attribute value) {
    op_.set_attr(name, std::move(value));
    return *this;
  }
  OpBuilder& role(int32_t role_bits) { return attr(kOpRoleAttr, Attribute(role_bits)); }
  OpBuilder& role_var(std::vector<std::string> pairs) {
    return attr(kOpRoleVarAttr, Attribute(std::move(pairs)));
  }
  Op& op() { return op_; }

 private:
  Op& op_;
};

class ProgramBuilder {
 public:
  ProgramBuilder() : program_(Program::with_global_block()) {}
  explicit ProgramBuilder(Program program) : program_(std::move(program)) {}

  // Which block the next calls add to (default: the global block).
  ProgramBuilder& in_block(int32_t idx);
  Block& block() { return program_.block(current_); }

  // A feed var (not persistable, stop_gradient).
  Var& data(const std::string& name, std::vector<int64_t> shape,
            DataType dtype = DataType::FP32);
  // A trainable parameter (persistable, is_parameter).
  Var& param(const std::string& name, std::vector<int64_t> shape,
             DataType dtype = DataType::FP32, bool is_distributed = false);
  // A persistable non-parameter (learning rate, optimizer state).
  Var& persistable(const std::string& name, std::vector<int64_t> shape,
                   DataType dtype = DataType::FP32);
  // A temporary.
  Var& tmp(const std::string& name, std::vector<int64_t> shape,
           DataType dtype = DataType::FP32);
  Var& var(Var v) { return block().add_var(std::move(v)); }

  OpBuilder op(const std::string& type);

  Program& program() { return program_; }
  Program build() { return std::move(program_); }

 private:
  Program program_;
  int32_t current_ = 0;
};

}  // namespace ctp
