#include "executor/memory_peak.h"

#include <algorithm>
#include <cstdio>
#include <ostream>
#include <unordered_map>

#include "executor/runtime/memory_stats.h"
#include "ops/schema/shape_rules.h"
#include "program_ir/program.h"

namespace ctp {
namespace {

double mib(int64_t bytes) { return static_cast<double>(bytes) / (1 << 20); }
double gib(int64_t bytes) { return static_cast<double>(bytes) / (1 << 30); }


// After which op each var of `after_op` goes.
std::unordered_map<std::string, std::size_t> by_var(
    const std::vector<std::vector<std::string>>& after_op) {
  std::unordered_map<std::string, std::size_t> out;
  for (std::size_t i = 0; i < after_op.size(); ++i)
    for (const std::string& name : after_op[i]) out[name] = i;
  return out;
}

std::optional<std::size_t> find_index(const std::unordered_map<std::string, std::size_t>& map,
                                      const std::string& name) {
  auto it = map.find(name);
  return it == map.end() ? std::nullopt : std::optional<std::size_t>(it->second);
}

}  // namespace

void MemoryPeak::begin_step(const Block& block, DeviceKind device, const VarReleasePlan* release) {
  if (block_ != &block) {
    block_ = &block;
    uses_ = block_var_uses(block);
    op_types_.clear();
    for (const Op& op : block.ops()) op_types_.push_back(op.type);
    best_bytes_ = -1;
    target_op_.reset();
    snapshot_.reset();
  }
  device_ = device;
  release_ = release;
}

void MemoryPeak::after_op(std::size_t index, const Scope& scope) {
  if (!block_) return;
  const int64_t held = memory_stats(device_).current_bytes;
  if (target_op_ && *target_op_ == index && (!snapshot_ || snapshot_->op != index ||
                                             snapshot_->held_bytes < held))
    snapshot_ = take_snapshot(index, held, scope);
  if (held > best_bytes_) {
    best_bytes_ = held;
    best_op_ = index;
  }
}

void MemoryPeak::end_step() {
  if (best_bytes_ >= 0) target_op_ = best_op_;
}

std::optional<std::pair<std::size_t, int64_t>> MemoryPeak::peak_op() const {
  if (best_bytes_ < 0) return std::nullopt;
  return std::make_pair(best_op_, best_bytes_);
}

std::string MemoryPeak::op_text(std::size_t index) const {
  return "op " + std::to_string(index) + " '" + op_types_.at(index) + "'";
}

MemoryPeak::HeldTensor MemoryPeak::describe(const std::string& name, const Tensor& t,
                                             const FreedAfter& freed) const {
  HeldTensor h;
  h.name = name;
  h.dtype = t.dtype();
  h.shape = t.shape();
  h.bytes = static_cast<int64_t>(t.buffer()->size());
  const Var* var = block_->find_var(name);
  h.persistable = var && var->persistable;
  if (auto u = uses_.by_name.find(name); u != uses_.by_name.end())
    h.made_by = u->second.first_write;
  h.freed_after = find_index(freed.vars, name);
  h.elements_freed_after = find_index(freed.elements, name);
  return h;
}

MemoryPeak::Snapshot MemoryPeak::take_snapshot(std::size_t index, int64_t held,
                                               const Scope& scope) const {
  // The vars on this device by buffer: views of one buffer (coalesce_tensor's)
  // count once, named by the widest (the fused buffer's own var).
  std::unordered_map<const Buffer*, std::vector<std::pair<std::string, const Tensor*>>> buffers;
  for (const std::string& name : scope.names()) {
    const Tensor* t = scope.find(name);
    if (t && t->initialized() && t->device().kind == device_)
      buffers[t->buffer().get()].emplace_back(name, t);
  }
  FreedAfter freed;
  if (release_) {
    freed.vars = by_var(release_->after_op);
    freed.elements = by_var(release_->elements_after_op);
  }
  Snapshot s;
  s.op = index;
  s.held_bytes = held;
  for (const auto& [buffer, vars] : buffers) {
    const auto widest =
        std::max_element(vars.begin(), vars.end(), [](const auto& a, const auto& b) {
          return a.second->bytes() < b.second->bytes();
        });
    HeldTensor h = describe(widest->first, *widest->second, freed);
    h.views = vars.size() - 1;
    s.scope_bytes += h.bytes;
    if (h.persistable) s.persistable_bytes += h.bytes;
    else if (h.freed_after) s.intermediate_bytes += h.bytes;
    else s.kept_bytes += h.bytes;
    s.largest.push_back(std::move(h));
  }
  s.scope_tensors = s.largest.size();
  std::sort(s.largest.begin(), s.largest.end(), [](const HeldTensor& a, const HeldTensor& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.name < b.name;
  });
  return s;
}

void MemoryPeak::print(std::ostream& out, std::size_t top) const {
  const auto peak = peak_op();
  if (!peak || !block_) return;
  const std::string device(to_string(device_));
  char line[512];
  std::snprintf(line, sizeof line,
                "memory: the most tensor bytes held on %s after an op: %.2f GiB, after %s\n",
                device.c_str(), gib(peak->second), op_text(peak->first).c_str());
  out << line;
  if (!snapshot_ || snapshot_->op != peak->first) {
    out << "  (the tensors held then are listed when a later step reaches that op: run 2 or "
           "more steps)\n";
    return;
  }
  const Snapshot& s = *snapshot_;
  std::snprintf(line, sizeof line,
                "  %.2f GiB of it in this scope's %zu tensors: persistable %.2f, freed later in "
                "the step %.2f, kept past the step %.2f\n",
                gib(s.scope_bytes), s.scope_tensors, gib(s.persistable_bytes),
                gib(s.intermediate_bytes), gib(s.kept_bytes));
  out << line;
  out << "  the largest held then (MiB, dtype[shape], var; the op that made it and after which "
         "the step frees it):\n";
  for (std::size_t i = 0; i < s.largest.size() && i < top; ++i) {
    const HeldTensor& h = s.largest[i];
    const std::string made = h.made_by ? "made by " + op_text(*h.made_by)
                             : h.persistable ? std::string("persistable")
                                             : std::string("bound before the step");
    std::string freed = h.freed_after ? "freed after " + op_text(*h.freed_after)
                                      : std::string("kept past the step");
    if (h.elements_freed_after)
      freed = "its elements freed after " + op_text(*h.elements_freed_after) +
              ", the rest after " + op_text(*h.freed_after);
    const std::string views = h.views ? " (+" + std::to_string(h.views) + " views)" : "";
    const std::string type = std::string(to_string(h.dtype)) + shape_to_string(h.shape);
    std::snprintf(line, sizeof line, "  %9.1f  %-24s  %s%s\n", mib(h.bytes), type.c_str(),
                  h.name.c_str(), views.c_str());
    out << line << "             " << made << "; " << freed << "\n";
  }
}

}  // namespace ctp
