// Kernels: the code that runs one op on one kind of device. A kernel sees the
// op, the scope and the run's services through a KernelContext, so op
// semantics do not depend on the backend (CPU/Gloo or CUDA/NCCL).
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "executor/runtime/scope.h"
#include "ops/schema/op_context.h"
#include "program_ir/block.h"

namespace ctp {

class CommunicatorManager;  // executor/runtime/communicator.h
class DeviceContext;        // per-device streams; CPU runs need none
class DeviceSession;        // executor/runtime/device_backend.h
class OpProfile;            // executor/op_profile.h

// The tensors a caller binds to `feed` ops and receives from `fetch` ops, by
// their `col` attribute (Paddle's feed/fetch holder lists).
struct FeedFetchLists {
  std::vector<Tensor> feed;
  std::vector<Tensor> fetch;
};

// What kernels report about their own work, so tests and tools can see it
// (e.g. that coalesce_tensor stops copying once gradients live in its buffer).
struct RunCounters {
  uint64_t coalesce_layouts = 0;       // times coalesce_tensor (re)built its views
  uint64_t coalesce_bytes_copied = 0;  // bytes it copied from Input into FusedOutput
};

// What every kernel of a run shares: its rank's identity and services.
struct RunServices {
  Device device;
  CommunicatorManager* comms = nullptr;  // null when the run uses no collectives
  DeviceContext* device_context = nullptr;
  // The device's session (device_backend.h), for host copies of device
  // values (check_finite); null on the CPU or when the caller has none.
  DeviceSession* device_session = nullptr;
  // Random initializers whose `seed` attribute is 0 derive their seed from
  // this, the op's first output name and `step`; give ranks different seeds
  // to make them initialise differently.
  uint64_t seed = 0;
  uint64_t step = 0;  // steps this executor has completed; the executor advances it
  FeedFetchLists* feed_fetch = nullptr;  // null: feed/fetch ops are an error
  // In its first step, before its first communicating op that can use a
  // ring (a main program's first collective; in a startup program, the op
  // after its first ring's set-up), an executor checks with its peers that
  // they run the same ring set-ups and collectives on the same vars in the
  // same order from there (a mismatch is an error on every rank, not a hang,
  // an abort in Gloo or silently different parameters); see
  // executor/communicator_schedule.h.
  bool verify_collective_schedule = true;
  RunCounters counters;
  // When set, the executor times every op of every step into it (see
  // executor/op_profile.h); the caller owns it.
  OpProfile* profile = nullptr;
  // Runs of independent ops of one type with a batch kernel go to it as one
  // call (executor/op_batching.h); off, every op runs alone. Same results.
  bool batch_ops = true;
  // After every op, its floating-point outputs are checked for NaN and Inf
  // (Paddle's FLAGS_check_nan_inf); the first op that wrote one is an error
  // naming the step, the op, the output and the element. Off by default: it
  // reads every output (on a GPU, copies it to the host).
  bool check_finite = false;
};

// A kernel's view of its op: the op's slots, attributes and place (the
// OpContext its rules in ops/schema/ also take), the scope's tensors and the
// run's services.
class KernelContext : public OpContext {
 public:
  // `op_index` (the op's position in its block, -1 when unknown) only serves
  // error messages.
  KernelContext(const Op& op, const Block& block, Scope& scope, RunServices& services,
                int64_t op_index = -1)
      : OpContext(op, block, op_index), scope_(scope), services_(services) {}

  Scope& scope() { return scope_; }
  RunServices& services() { return services_; }

  // The i-th input tensor, to read its elements (it must have them). An
  // input the op's schema declares shape-only is an error naming the op and
  // the slot: its elements may be gone (read it with shape_input).
  Tensor& input(std::string_view slot, std::size_t i = 0);
  // The i-th input tensor, to read only its dtype and shape: it may have no
  // elements (released after their last read, executor/var_release.h).
  const Tensor& shape_input(std::string_view slot, std::size_t i = 0);
  // The i-th output tensor (created on demand).
  Tensor& output(std::string_view slot, std::size_t i = 0);

 private:
  Tensor* find_input(std::string_view slot, std::size_t i);

  Scope& scope_;
  RunServices& services_;
};

// What an op's rules see of a tensor.
inline TensorMeta meta_of(const Tensor& t) { return {t.shape(), t.dtype()}; }

using KernelFn = std::function<void(KernelContext&)>;
// Runs several ops of one type at once, e.g. one multi-tensor launch for a
// run of optimizer updates instead of a launch each. The executor passes
// consecutive ops of the block (in order) of which none reads or writes a
// var that an earlier one writes, nor writes one that an earlier one reads
// (executor/op_batching.h), so any order of their work gives the one
// result; a batch kernel must give exactly the bits of its single kernel.
using BatchKernelFn = std::function<void(std::vector<KernelContext>& ops)>;

class KernelRegistry {
 public:
  static KernelRegistry& global();
  void add(std::string op_type, DeviceKind device, KernelFn fn);  // throws on duplicates
  const KernelFn* find(std::string_view op_type, DeviceKind device) const;
  std::vector<std::string> op_types(DeviceKind device) const;
  // An op type's batch kernel on a device, beside its single kernel.
  void add_batch(std::string op_type, DeviceKind device, BatchKernelFn fn);  // throws on duplicates
  const BatchKernelFn* find_batch(std::string_view op_type, DeviceKind device) const;

 private:
  std::unordered_map<std::string, KernelFn> cpu_;
  std::unordered_map<std::string, KernelFn> cuda_;
  std::unordered_map<std::string, BatchKernelFn> cpu_batch_;
  std::unordered_map<std::string, BatchKernelFn> cuda_batch_;
};

// Registers a kernel at load time: CTP_REGISTER_KERNEL(mul, CPU, mul_cpu);
#define CTP_KERNEL_CONCAT2(a, b) a##b
#define CTP_KERNEL_CONCAT(a, b) CTP_KERNEL_CONCAT2(a, b)
#define CTP_REGISTER_KERNEL(op_type, device_kind, fn)                                 \
  static const bool CTP_KERNEL_CONCAT(ctp_kernel_registered_, __LINE__) = [] {         \
    ::ctp::KernelRegistry::global().add(#op_type, ::ctp::DeviceKind::device_kind, fn); \
    return true;                                                                      \
  }()
#define CTP_REGISTER_BATCH_KERNEL(op_type, device_kind, fn)                                 \
  static const bool CTP_KERNEL_CONCAT(ctp_batch_kernel_registered_, __LINE__) = [] {         \
    ::ctp::KernelRegistry::global().add_batch(#op_type, ::ctp::DeviceKind::device_kind, fn); \
    return true;                                                                            \
  }()

}  // namespace ctp
