#include "program_ir/verify.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "program_ir/block_tree.h"
#include "program_ir/op_role.h"

namespace ctp {
namespace {

// Paddle's name for "no var here" (framework::kEmptyVarName) in grad ops.
constexpr std::string_view kEmptyVarName = "@EMPTY@";

std::string quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

std::string accepted_types(const AttrDef& def) {
  std::string s(to_string(def.type));
  for (AttrType t : def.also_accepted) s += " or " + std::string(to_string(t));
  return s;
}

class Verifier {
 public:
  Verifier(const Program& program, const OpRegistry& registry)
      : program_(program), registry_(registry), block_count_(program.blocks.size()) {}

  VerifyResult run() {
    check_blocks();
    check_all_ops();
    VerifyResult result;
    result.diagnostics = std::move(diagnostics_);
    result.blocks = static_cast<int64_t>(block_count_);
    for (const Block& block : program_.blocks) {
      result.ops += static_cast<int64_t>(block.op_count());
      result.vars += static_cast<int64_t>(block.vars().size());
    }
    result.ops_with_schema = ops_with_schema_;
    for (const auto& [type, count] : unknown_types_)
      result.ops_without_schema.push_back(OpTypeCount{type, count});
    std::sort(result.ops_without_schema.begin(), result.ops_without_schema.end(),
              [](const OpTypeCount& a, const OpTypeCount& b) {
                return a.count != b.count ? a.count > b.count : a.type < b.type;
              });
    return result;
  }

 private:
  struct OpPlace {
    int32_t block;
    int64_t index;
    const Op& op;
  };
  // What of the op a finding is about.
  enum Subject { kOp, kVar, kAttr, kInput, kOutput };

  void report(Diagnostic::Severity severity, int32_t block, std::string message) {
    diagnostics_.push_back(
        Diagnostic{severity, SourceLocation{.block = block}, std::move(message)});
  }
  void report(const OpPlace& at, Subject subject, std::string_view name, std::string message,
              Diagnostic::Severity severity = Diagnostic::Error) {
    SourceLocation place{.block = at.block, .op = at.index, .op_type = at.op.type};
    switch (subject) {
      case kOp: break;
      case kVar: place.var_name = name; break;
      case kAttr: place.attr_name = name; break;
      case kInput: case kOutput:
        place.slot_side = subject == kInput ? "input" : "output";
        place.slot_name = name;
        break;
    }
    sink_->push_back(Diagnostic{severity, std::move(place), std::move(message)});
  }

  bool is_block(int64_t idx) const {
    return idx >= 0 && static_cast<std::size_t>(idx) < block_count_;
  }

  void check_blocks() {
    if (block_count_ == 0)
      report(Diagnostic::Error, 0, "the program has no blocks; it needs at least the global block");
    for (std::size_t b = 0; b < block_count_; ++b) {
      const Block& block = program_.blocks[b];
      const auto pos = static_cast<int32_t>(b);
      if (block.idx != pos)
        report(Diagnostic::Error, pos,
               "idx is " + std::to_string(block.idx) + ", expected its position " +
                   std::to_string(pos));
      if (b == 0) {
        if (block.parent_idx != -1)
          report(Diagnostic::Error, pos,
                 "parent_idx is " + std::to_string(block.parent_idx) +
                     ", but the global block's must be -1");
      } else if (block.parent_idx == -1) {
        report(Diagnostic::Error, pos, "parent_idx is -1, but only the global block has no parent");
      } else if (block.parent_idx == pos) {
        report(Diagnostic::Error, pos, "parent_idx names the block itself");
      } else if (!is_block(block.parent_idx)) {
        report(Diagnostic::Error, pos,
               "parent_idx " + std::to_string(block.parent_idx) + " names no block (program has " +
                   std::to_string(block_count_) + ")");
      }
      if (block.forward_block_idx != -1 && !is_block(block.forward_block_idx))
        report(Diagnostic::Error, pos,
               "forward_block_idx " + std::to_string(block.forward_block_idx) + " names no block");
    }
    find_parent_cycles();
  }

  // Each block is visited once: a walk stops at a block whose fate is known.
  void find_parent_cycles() {
    enum State : char { Unvisited, OnPath, Done };
    std::vector<State> state(block_count_, Unvisited);
    std::vector<std::size_t> path;
    for (std::size_t start = 0; start < block_count_; ++start) {
      path.clear();
      std::size_t b = start;
      while (state[b] == Unvisited) {
        state[b] = OnPath;
        path.push_back(b);
        const int32_t parent = program_.blocks[b].parent_idx;
        if (!is_block(parent) || parent == static_cast<int32_t>(b)) break;
        b = static_cast<std::size_t>(parent);
      }
      if (state[b] == OnPath && !path.empty() &&
          is_block(program_.blocks[path.back()].parent_idx) &&
          program_.blocks[path.back()].parent_idx != static_cast<int32_t>(path.back())) {
        // The walk came back to b: the blocks from b to the end of the path loop.
        std::size_t first = 0;
        while (path[first] != b) ++first;
        std::size_t smallest = b;
        std::string loop;
        for (std::size_t i = first; i < path.size(); ++i) {
          loop += std::to_string(path[i]) + " -> ";
          smallest = std::min(smallest, path[i]);
        }
        loop += std::to_string(b);
        report(Diagnostic::Error, static_cast<int32_t>(smallest),
               "parent_idx chain loops: " + loop);
      }
      for (std::size_t p : path) state[p] = Done;
    }
  }

  // Ops are checked in a walk of the block tree (block_tree.h) that keeps
  // the vars declared on the current path counted in `visible_`; op
  // diagnostics are gathered per block and reported in block order.
  void check_all_ops() {
    std::vector<std::vector<Diagnostic>> per_block(block_count_);
    auto count_vars = [&](const BlockGroup& group, bool add) {
      for (std::size_t b : group)
        for (const Var& var : program_.blocks[b].vars()) {
          if (add) ++visible_[var.name];
          else if (auto it = visible_.find(var.name); --it->second == 0) visible_.erase(it);
        }
    };
    walk_block_tree(
        program_,
        [&](const BlockGroup& group) {
          count_vars(group, true);
          for (std::size_t b : group) {
            sink_ = &per_block[b];
            check_ops(b);
          }
        },
        [&](const BlockGroup& group) { count_vars(group, false); });
    sink_ = &diagnostics_;
    for (std::vector<Diagnostic>& block : per_block)
      for (Diagnostic& d : block) diagnostics_.push_back(std::move(d));
  }

  bool is_declared(std::string_view name) const { return visible_.count(name) != 0; }

  std::string not_declared(std::size_t b) const {
    return b == 0 ? "not declared in block 0"
                  : "not declared in block " + std::to_string(b) + " or its ancestors";
  }

  void check_var(std::size_t b, const OpPlace& at, const std::string& name, std::string_view role) {
    if (name == kEmptyVarName) return;
    if (name.empty()) {
      report(at, kOp, "", std::string(role) + " names a var with an empty name");
      return;
    }
    if (!is_declared(name)) report(at, kVar, name, not_declared(b));
  }

  void check_slots(std::size_t b, const OpPlace& at, const OpDef* def, bool inputs) {
    const std::vector<Slot>& slots = inputs ? at.op.inputs() : at.op.outputs();
    const char* side = inputs ? "input" : "output";
    const Subject subject = inputs ? kInput : kOutput;
    for (const Slot& slot : slots) {
      for (const std::string& arg : slot.args) check_var(b, at, arg, side);
      if (!def) continue;
      const SlotDef* slot_def = inputs ? def->find_input(slot.name) : def->find_output(slot.name);
      if (!slot_def) {
        report(at, subject, slot.name, "slot is not declared by " + quoted(def->type));
      } else if (!slot_def->duplicable && slot.args.size() > 1) {
        report(at, subject, slot.name, "slot takes one var, has " + std::to_string(slot.args.size()));
      }
    }
    if (!def) return;
    for (const SlotDef& slot_def : inputs ? def->inputs : def->outputs) {
      if (slot_def.dispensable) continue;
      const auto* args = inputs ? at.op.input(slot_def.name) : at.op.output(slot_def.name);
      if (!args || args->empty())
        report(at, subject, slot_def.name,
               std::string("required slot is ") + (args ? "empty" : "missing"));
    }
  }

  void check_block_refs(const OpPlace& at, const NamedAttribute& attr) {
    auto check = [&](int32_t target) {
      if (!is_block(target))
        report(at, kAttr, attr.name,
               "names block " + std::to_string(target) + ", which does not exist");
      else if (target == at.block)
        report(at, kAttr, attr.name, "names the op's own block " + std::to_string(target));
    };
    if (attr.value.type() == AttrType::BLOCK) check(attr.value.get<int32_t>());
    if (attr.value.type() == AttrType::BLOCKS)
      for (int32_t target : attr.value.get<std::vector<int32_t>>()) check(target);
  }

  void check_var_refs(std::size_t b, const OpPlace& at, const NamedAttribute& attr) {
    std::string role = "attr " + quoted(attr.name);
    if (attr.value.type() == AttrType::VAR) check_var(b, at, attr.value.get<std::string>(), role);
    if (attr.value.type() == AttrType::VARS)
      for (const std::string& name : attr.value.get<std::vector<std::string>>())
        check_var(b, at, name, role);
  }

  void check_op_role_var(std::size_t b, const OpPlace& at, const Attribute& attr) {
    if (attr.type() != AttrType::STRINGS) return;  // the type check reports it
    const auto& names = attr.get<std::vector<std::string>>();
    if (names.size() % 2 != 0)
      report(at, kAttr, kOpRoleVarAttr,
             "has " + std::to_string(names.size()) +
                 " names; it lists [param, grad] pairs, so the count must be even");
    for (const std::string& name : names)
      if (!is_declared(name))
        report(at, kVar, name, "named by op_role_var is " + not_declared(b));
  }

  void check_attrs(std::size_t b, const OpPlace& at, const OpDef* def) {
    for (const NamedAttribute& attr : at.op.attrs()) {
      const AttrDef* attr_def = def ? def->find_attr(attr.name) : nullptr;
      if (!attr_def) attr_def = OpRegistry::common_attr(attr.name);
      if (attr_def && !attr_def->accepts(attr.value.type())) {
        report(at, kAttr, attr.name,
               "has type " + std::string(to_string(attr.value.type())) + ", expected " +
                   accepted_types(*attr_def));
      } else if (!attr_def && def) {
        report(at, kAttr, attr.name, "is not declared by " + quoted(def->type),
               Diagnostic::Warning);
      }
      check_block_refs(at, attr);
      check_var_refs(b, at, attr);
      if (attr.name == kOpRoleVarAttr) check_op_role_var(b, at, attr.value);
    }
    if (!def) return;
    for (const AttrDef& attr_def : def->attrs)
      if (!attr_def.default_value && !at.op.has_attr(attr_def.name))
        report(at, kAttr, attr_def.name,
               "required attribute of type " + std::string(to_string(attr_def.type)) +
                   " is missing");
  }

  void check_ops(std::size_t b) {
    int64_t index = 0;
    for (const Op& op : program_.blocks[b].ops()) {
      const OpPlace at{static_cast<int32_t>(b), index++, op};
      const OpDef* def = registry_.find(op.type);
      if (def)
        ++ops_with_schema_;
      else
        ++unknown_types_[op.type];
      check_slots(b, at, def, /*inputs=*/true);
      check_slots(b, at, def, /*inputs=*/false);
      check_attrs(b, at, def);
    }
  }

  const Program& program_;
  const OpRegistry& registry_;
  const std::size_t block_count_;
  std::vector<Diagnostic> diagnostics_;
  std::vector<Diagnostic>* sink_ = &diagnostics_;  // where op diagnostics go
  int64_t ops_with_schema_ = 0;
  std::map<std::string, int64_t> unknown_types_;  // op type -> ops of it without a schema
  // Declarations visible from the block being checked, by name.
  std::unordered_map<std::string_view, std::size_t> visible_;
};

}  // namespace

std::string Diagnostic::to_string() const {
  return (severity == Warning ? "warning: " : "") + place.to_string() + ": " + message;
}

VerifyResult verify(const Program& program, const OpRegistry& registry) {
  return Verifier(program, registry).run();
}

std::vector<Diagnostic> verify_program(const Program& program, const OpRegistry& registry) {
  return verify(program, registry).diagnostics;
}

std::string VerifyResult::checked() const {
  std::string s = std::to_string(blocks) + " block(s), " + std::to_string(vars) + " var(s), " +
                  std::to_string(ops) + " op(s): block structure; that every var an op, an "
                  "attribute or op_role_var names is declared; op_role_var pairs; common "
                  "attribute types";
  s += "; and against the op's schema (slots, attribute types, required attributes) for " +
       std::to_string(ops_with_schema) + " of the " + std::to_string(ops) + " op(s)";
  return s;
}

bool has_errors(const std::vector<Diagnostic>& diagnostics) {
  for (const Diagnostic& d : diagnostics)
    if (d.severity == Diagnostic::Error) return true;
  return false;
}

}  // namespace ctp
