#include "program_ir/dot_io.h"

#include <string_view>
#include <unordered_map>
#include <vector>

#include "program_ir/block_tree.h"
#include "program_ir/name_hash.h"
#include "program_ir/op_role.h"
#include "program_ir/text_io.h"

namespace ctp {
namespace {

using NodeIds = std::unordered_map<std::string, std::string, NameHash, std::equal_to<>>;

// Node ids are generated (b0_v3, b0_op7) so that no name ever has to be an id;
// names appear only in escaped labels.
class DotWriter {
 public:
  explicit DotWriter(const Program& program) : program_(program) {
    declared_.resize(program.blocks.size());
    undeclared_.resize(program.blocks.size());
    resolved_.resize(program.blocks.size());
    for (std::size_t b = 0; b < program.blocks.size(); ++b) {
      std::size_t k = 0;
      for (const Var& var : program.blocks[b].vars())
        declared_[b].emplace(var.name, "b" + std::to_string(b) + "_v" + std::to_string(k++));
    }
    resolve_names();
  }

  std::string write() {
    out_ = "digraph program {\n  compound=true;\n  node [fontname=\"monospace\"];\n";
    for (std::size_t b = 0; b < program_.blocks.size(); ++b) write_block(b);
    out_ += edges_;
    out_ += "}\n";
    return std::move(out_);
  }

 private:
  void write_block(std::size_t b) {
    const Block& block = program_.blocks[b];
    const std::string prefix = "b" + std::to_string(b);
    out_ += "  subgraph cluster_" + std::to_string(b) + " {\n";
    out_ += "    label=\"block " + std::to_string(block.idx) + "\";\n";
    for (const Var& var : block.vars()) {
      out_ += "    " + declared_[b].find(var.name)->second + " [shape=ellipse, label=\"" +
              dot_escape(var.name) + "\"";
      if (var.persistable) out_ += ", style=filled, fillcolor=grey";
      out_ += "];\n";
    }
    std::size_t op_index = 0;
    for (const Op& op : block.ops()) {
      const std::string id = prefix + "_op" + std::to_string(op_index++);
      std::string label = dot_escape(op.type);
      if (const Attribute* role = op.attr(kOpRoleAttr))
        label += "\\nop_role=" + dot_escape(attribute_to_text(*role));
      out_ += "    " + id + " [shape=box, label=\"" + label + "\"];\n";
      for (const Slot& slot : op.inputs())
        for (const std::string& arg : slot.args) edges_ += "  " + var_node(b, arg) + " -> " + id + ";\n";
      for (const Slot& slot : op.outputs())
        for (const std::string& arg : slot.args) edges_ += "  " + id + " -> " + var_node(b, arg) + ";\n";
    }
    out_ += "  }\n";
  }

  // Which declared node each name an op of block b uses stands for: the
  // block's own var, else the innermost ancestor's. Found in one walk of the
  // block tree (block_tree.h) with a stack of declarations per visible name,
  // so deep nesting costs no walk up per name.
  void resolve_names() {
    std::unordered_map<std::string_view, std::vector<const std::string*>> visible;
    auto declare = [&](const BlockGroup& group, bool add) {
      for (std::size_t b : group)
        for (const auto& [name, id] : declared_[b]) {
          auto& ids = visible[name];
          if (add) ids.push_back(&id);
          else ids.pop_back();
        }
    };
    walk_block_tree(
        program_,
        [&](const BlockGroup& group) {
          declare(group, true);
          for (std::size_t b : group) {
            auto resolve = [&](const std::string& name) {
              if (resolved_[b].count(name)) return;
              const std::string* node = nullptr;
              if (auto own = declared_[b].find(name); own != declared_[b].end())
                node = &own->second;
              else if (auto seen = visible.find(name); seen != visible.end() && !seen->second.empty())
                node = seen->second.back();
              resolved_[b].emplace(name, node);
            };
            for (const Op& op : program_.blocks[b].ops()) {
              for (const Slot& slot : op.inputs())
                for (const std::string& arg : slot.args) resolve(arg);
              for (const Slot& slot : op.outputs())
                for (const std::string& arg : slot.args) resolve(arg);
            }
          }
        },
        [&](const BlockGroup& group) { declare(group, false); });
  }

  // The node of the var `name` as seen from block b: declared there or in an
  // ancestor, or else a dashed node of its own in block b.
  std::string var_node(std::size_t b, const std::string& name) {
    if (const std::string* declared = resolved_[b].find(name)->second) return *declared;
    auto [it, added] = undeclared_[b].emplace(name, "");
    if (added) {
      it->second = "b" + std::to_string(b) + "_u" + std::to_string(undeclared_[b].size() - 1);
      // Written now, while block b's cluster is open: DOT draws a node in the
      // subgraph that first names it, and edges come after all clusters.
      out_ += "    " + it->second + " [shape=ellipse, style=dashed, label=\"" + dot_escape(name) +
              "\"];\n";
    }
    return it->second;
  }

  const Program& program_;
  std::vector<NodeIds> declared_;
  std::vector<NodeIds> undeclared_;
  std::vector<std::unordered_map<std::string_view, const std::string*>> resolved_;
  std::string out_;
  std::string edges_;
};

}  // namespace

std::string dot_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      default:
        out += static_cast<unsigned char>(c) < 0x20 ? ' ' : c;
    }
  }
  return out;
}

std::string program_to_dot(const Program& program) { return DotWriter(program).write(); }

}  // namespace ctp
