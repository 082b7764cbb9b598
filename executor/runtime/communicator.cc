#include "executor/runtime/communicator.h"

#include <cstring>

#include "program_ir/error.h"

namespace ctp {

std::string_view to_string(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Max: return "max";
    case ReduceOp::Min: return "min";
    case ReduceOp::Prod: return "prod";
  }
  return "?";
}

SourceLocation Communicator::place(std::string_view op, const Tensor* tensor) const {
  SourceLocation at{.rank = rank(), .nranks = size(), .ring = ring_id(), .backend = backend()};
  at.collective = std::string(op);
  if (tensor && tensor->initialized())
    at.collective += " " + std::string(ctp::to_string(tensor->dtype())) + "[" +
                     std::to_string(tensor->numel()) + "]";
  return at;
}

void Communicator::check_all_gather_output(const Tensor& in, const Tensor& out) const {
  if (out.dtype() != in.dtype() || out.numel() != in.numel() * size())
    throw Error(place("all_gather", &in),
                "the output must hold " + std::to_string(size()) + " x " +
                    std::to_string(in.numel()) + " elements of " +
                    std::string(ctp::to_string(in.dtype())));
}

void Communicator::all_reduce_many(const std::vector<Tensor*>& tensors, ReduceOp op) {
  if (tensors.empty()) return;
  DataType dtype = tensors[0]->dtype();
  int64_t total = 0;
  bool contiguous = true;
  const char* expected = static_cast<const char*>(tensors[0]->raw_data());
  for (Tensor* t : tensors) {
    if (t->dtype() != dtype)
      throw Error(place("all_reduce_many"), "tensors of different dtypes (" +
                  std::string(ctp::to_string(dtype)) + " and " +
                  std::string(ctp::to_string(t->dtype())) + ") cannot be fused");
    contiguous = contiguous && t->shares_buffer_with(*tensors[0]) &&
                 static_cast<const char*>(t->raw_data()) == expected;
    expected = static_cast<const char*>(t->raw_data()) + t->bytes();
    total += t->numel();
  }
  if (contiguous) {
    // Views laid out back to back in one buffer: reduce them in place.
    Tensor whole = Tensor::view(tensors[0]->buffer(), tensors[0]->offset(), dtype, {total});
    all_reduce(whole, op);
    return;
  }
  Tensor packed(dtype, {total});
  char* p = static_cast<char*>(packed.raw_data());
  for (Tensor* t : tensors) {
    std::memcpy(p, t->raw_data(), t->bytes());
    p += t->bytes();
  }
  all_reduce(packed, op);
  p = static_cast<char*>(packed.raw_data());
  for (Tensor* t : tensors) {
    std::memcpy(t->raw_data(), p, t->bytes());
    p += t->bytes();
  }
}

CommunicatorManager::~CommunicatorManager() {
  // Communicators first: they may still talk to the stores kept alive here.
  std::lock_guard<std::mutex> lock(mu_);
  rings_.clear();
  kept_.clear();
}

void CommunicatorManager::install(int ring_id, std::unique_ptr<Communicator> comm) {
  std::lock_guard<std::mutex> lock(mu_);
  rings_[ring_id] = std::move(comm);
}

Communicator& CommunicatorManager::get(int ring_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = rings_.find(ring_id);
  if (it == rings_.end())
    throw Error("ring " + std::to_string(ring_id) +
                " is not initialized (run c_comm_init for it first)");
  return *it->second;
}

bool CommunicatorManager::has(int ring_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  return rings_.count(ring_id) != 0;
}

std::vector<int> CommunicatorManager::ring_ids() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<int> out;
  for (const auto& [ring, comm] : rings_) out.push_back(ring);
  return out;
}

void CommunicatorManager::abort_all(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [ring, comm] : rings_) comm->abort(reason);
}

Error Communicator::no_device_streams(std::string_view op) const {
  return Error(place(op), "a " + backend() +
               " ring has no device streams: GPU kernels need rings made by the GPU kernels of "
               "c_comm_init / c_comm_init_all");
}

void Communicator::queue_all_reduce(const Tensor&, Tensor&, ReduceOp, DeviceStream) {
  throw no_device_streams("all_reduce");
}

void Communicator::queue_all_reduce_many(const std::vector<Tensor*>&, ReduceOp, DeviceStream) {
  throw no_device_streams("all_reduce_many");
}

void Communicator::queue_broadcast(const Tensor&, Tensor&, int, DeviceStream) {
  throw no_device_streams("broadcast");
}

void Communicator::queue_all_gather(const Tensor&, Tensor&, DeviceStream) {
  throw no_device_streams("all_gather");
}

void CommunicatorManager::join_thread_group(std::shared_ptr<LocalGroup> group, int local_rank) {
  if (group && (local_rank < 0 || local_rank >= group->size()))
    throw Error("local rank " + std::to_string(local_rank) + " is outside a thread group of " +
                std::to_string(group->size()));
  group_ = std::move(group);
  local_rank_ = local_rank;
}

int CommunicatorManager::local_size() const { return group_ ? group_->size() : 1; }

void CommunicatorManager::abort_thread_group(const std::string& reason) {
  if (group_) group_->abort(reason);
}

void CommunicatorManager::keep_alive(std::shared_ptr<void> resource) {
  std::lock_guard<std::mutex> lock(mu_);
  kept_.push_back(std::move(resource));
}

}  // namespace ctp
