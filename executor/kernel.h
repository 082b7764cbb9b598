// Kernels: the code that runs one op on one kind of device. A kernel sees the
// op, the scope and the run's services through a KernelContext, so op
// semantics do not depend on the backend (CPU/Gloo or CUDA/NCCL).
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "executor/scope.h"
#include "program_ir/block.h"

namespace ctp {

class CommunicatorManager;  // executor/communicator.h
class DeviceContext;        // per-device streams; CPU runs need none

// What every kernel of a run shares: its rank's identity and services.
struct RunServices {
  Device device;
  CommunicatorManager* comms = nullptr;  // null when the run uses no collectives
  DeviceContext* device_context = nullptr;
  uint64_t seed = 0;  // base seed for random initializers
};

class KernelContext {
 public:
  KernelContext(const Op& op, const Block& block, Scope& scope, RunServices& services)
      : op_(op), block_(block), scope_(scope), services_(services) {}

  const Op& op() const { return op_; }
  const Block& block() const { return block_; }
  Scope& scope() { return scope_; }
  RunServices& services() { return services_; }

  // Argument names of a slot; empty when the slot is absent.
  const std::vector<std::string>& input_names(std::string_view slot) const;
  const std::vector<std::string>& output_names(std::string_view slot) const;
  // The i-th input tensor (must be initialized) / output tensor (created on demand).
  Tensor& input(std::string_view slot, std::size_t i = 0);
  Tensor& output(std::string_view slot, std::size_t i = 0);
  bool has_input(std::string_view slot) const { return !input_names(slot).empty(); }
  bool has_output(std::string_view slot) const { return !output_names(slot).empty(); }

  // The attribute's value, or the registry's default when the op omits it.
  // Throws ctp::Error naming the op and attribute when neither exists.
  const Attribute& attr(std::string_view name) const;
  template <typename T>
  const T& attr_as(std::string_view name) const { return attr(name).get<T>(); }

  // An error message prefix naming this op: "op 'mul' (block 0): ".
  std::string where() const;

 private:
  const Op& op_;
  const Block& block_;
  Scope& scope_;
  RunServices& services_;
};

using KernelFn = std::function<void(KernelContext&)>;

class KernelRegistry {
 public:
  static KernelRegistry& global();
  void add(std::string op_type, DeviceKind device, KernelFn fn);  // throws on duplicates
  const KernelFn* find(std::string_view op_type, DeviceKind device) const;
  std::vector<std::string> op_types(DeviceKind device) const;

 private:
  std::unordered_map<std::string, KernelFn> cpu_;
  std::unordered_map<std::string, KernelFn> cuda_;
};

// Registers a kernel at load time: CTP_REGISTER_KERNEL(mul, CPU, mul_cpu);
#define CTP_KERNEL_CONCAT2(a, b) a##b
#define CTP_KERNEL_CONCAT(a, b) CTP_KERNEL_CONCAT2(a, b)
#define CTP_REGISTER_KERNEL(op_type, device_kind, fn)                                 \
  static const bool CTP_KERNEL_CONCAT(ctp_kernel_registered_, __LINE__) = [] {         \
    ::ctp::KernelRegistry::global().add(#op_type, ::ctp::DeviceKind::device_kind, fn); \
    return true;                                                                      \
  }()

}  // namespace ctp
