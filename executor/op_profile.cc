#include "executor/op_profile.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <ostream>

#include "executor/runtime/device_backend.h"
#include "program_ir/program.h"

namespace ctp {
namespace {

double now_ms() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string first_output(const Op& op) {
  for (const Slot& slot : op.outputs())
    if (!slot.args.empty()) return slot.args[0];
  return "";
}

}  // namespace

OpProfile::OpProfile(std::unique_ptr<OpTimer> device_timer) : timer_(std::move(device_timer)) {}

OpProfile::~OpProfile() = default;

void OpProfile::begin_step(const Block& block, const std::vector<std::size_t>& order) {
  const std::size_t n = block.op_count();
  if (block_ != &block || (!order.empty() && order != order_)) {
    block_ = &block;
    steps_seen_ = counted_ = 0;
    host_total_ms_.assign(n, 0.0);
    device_total_ms_.assign(n, 0.0);
    batches_.clear();
    in_batch_.assign(n, false);
    order_ = order;
    if (order_.size() != n) {
      order_.resize(n);
      for (std::size_t i = 0; i < n; ++i) order_[i] = i;
    }
    position_of_.assign(n, 0);
    for (std::size_t p = 0; p < n; ++p) position_of_[order_[p]] = p;
  }
  counting_ = steps_seen_ > 0;
  if (timer_ && counting_) timer_->record(0);
}

void OpProfile::before_op(std::size_t index) {
  if (counting_ && index < host_total_ms_.size()) op_start_ms_ = now_ms();
}

// Boundary p + 1 follows the op run p-th (boundary 0 starts the step).
void OpProfile::after_op(std::size_t index) {
  if (!counting_ || index >= host_total_ms_.size()) return;
  host_total_ms_[index] += now_ms() - op_start_ms_;
  if (timer_) timer_->record(position_of_[index] + 1);
}

void OpProfile::after_ops(const std::size_t* indices, std::size_t count) {
  if (count == 0 || !counting_) return;
  for (std::size_t k = 0; k < count; ++k)
    if (indices[k] >= host_total_ms_.size()) return;
  if (!in_batch_[indices[0]]) {
    batches_.emplace_back(indices, indices + count);
    for (std::size_t k = 0; k < count; ++k) in_batch_[indices[k]] = true;
  }
  const double share = (now_ms() - op_start_ms_) / static_cast<double>(count);
  for (std::size_t k = 0; k < count; ++k) host_total_ms_[indices[k]] += share;
  // The batch's time lands on its first op; rows() shares it out.
  if (timer_)
    for (std::size_t k = 0; k < count; ++k) timer_->record(position_of_[indices[k]] + 1);
}

void OpProfile::end_step() {
  if (counting_) {
    if (timer_) {
      step_ms_.assign(order_.size(), 0.0);
      timer_->accumulate(step_ms_.size(), step_ms_);
      for (std::size_t p = 0; p < order_.size(); ++p) device_total_ms_[order_[p]] += step_ms_[p];
    }
    ++counted_;
  }
  ++steps_seen_;
  counting_ = false;
}

std::vector<OpProfile::Row> OpProfile::rows() const {
  std::vector<Row> out;
  if (!block_) return out;
  const double steps = counted_ ? static_cast<double>(counted_) : 1.0;
  std::size_t i = 0;
  for (const Op& op : block_->ops()) {
    if (i >= host_total_ms_.size()) break;
    Row r;
    r.index = i;
    r.type = op.type;
    r.output = first_output(op);
    r.host_ms = host_total_ms_[i] / steps;
    r.device_ms = device_total_ms_[i] / steps;
    out.push_back(std::move(r));
    ++i;
  }
  for (const std::vector<std::size_t>& batch : batches_) {
    if (batch.size() < 2) continue;
    double total = 0;
    for (std::size_t i : batch) total += i < out.size() ? out[i].device_ms : 0.0;
    for (std::size_t i : batch)
      if (i < out.size()) {
        out[i].device_ms = total / static_cast<double>(batch.size());
        out[i].batch = batch.size();
      }
  }
  return out;
}

void OpProfile::print(std::ostream& out, std::size_t top) const {
  std::vector<Row> all = rows();
  const bool gpu = on_gpu();
  const auto cost = [gpu](const Row& r) { return gpu ? r.device_ms : r.host_ms; };
  double host_sum = 0, device_sum = 0;
  std::size_t batched = 0, batches = 0;
  std::map<std::string, double> by_type;
  for (const Row& r : all) {
    host_sum += r.host_ms;
    device_sum += r.device_ms;
    by_type[r.type] += cost(r);
    if (r.batch > 1) ++batched;
  }
  for (const std::vector<std::size_t>& batch : batches_) batches += batch.size() > 1;
  const double total = gpu ? device_sum : host_sum;
  char line[256];
  std::snprintf(line, sizeof line,
                "profile: %lld step(s) after the first, %zu ops; per step: %.3f ms host",
                static_cast<long long>(counted_), all.size(), host_sum);
  out << line;
  if (gpu) {
    std::snprintf(line, sizeof line, ", %.3f ms on the compute stream", device_sum);
    out << line;
  }
  out << "\n";
  if (batches)
    out << batched << " ops ran in " << batches << (batches == 1 ? " batch" : " batches")
        << " (one call each; every op shows an even share of its batch)\n";
  std::vector<Row> sorted = all;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [&](const Row& a, const Row& b) { return cost(a) > cost(b); });
  if (sorted.size() > top) sorted.resize(top);
  const char* columns = "   op  type                        first output                ";
  out << columns << (gpu ? "   device ms   host ms   share\n" : "     host ms   share\n");
  for (const Row& r : sorted) {
    const double share = total > 0 ? 100.0 * cost(r) / total : 0.0;
    if (gpu)
      std::snprintf(line, sizeof line, "%5zu  %-26.26s  %-28.28s %10.3f %9.3f %6.1f%%\n", r.index,
                    r.type.c_str(), r.output.c_str(), r.device_ms, r.host_ms, share);
    else
      std::snprintf(line, sizeof line, "%5zu  %-26.26s  %-28.28s %11.3f %6.1f%%\n", r.index,
                    r.type.c_str(), r.output.c_str(), r.host_ms, share);
    out << line;
  }
  std::vector<std::pair<std::string, double>> types(by_type.begin(), by_type.end());
  std::stable_sort(types.begin(), types.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  out << "by op type (" << (gpu ? "device" : "host") << " ms per step):";
  for (const auto& [type, ms] : types) {
    std::snprintf(line, sizeof line, " %s %.3f;", type.c_str(), ms);
    out << line;
  }
  out << "\n";
  memory_.print(out);
}

}  // namespace ctp
