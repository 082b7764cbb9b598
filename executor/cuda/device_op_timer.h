// CUDA events around every op of a step on one compute stream: the CUDA
// device backend's OpTimer, for OpProfile.
#pragma once
#include <cstddef>
#include <vector>

#include "executor/cuda/device_context.h"
#include "executor/runtime/device_backend.h"

namespace ctp {

class DeviceOpTimer final : public OpTimer {
 public:
  explicit DeviceOpTimer(DeviceContext& context) : context_(context) {}
  ~DeviceOpTimer() override;
  DeviceOpTimer(const DeviceOpTimer&) = delete;
  DeviceOpTimer& operator=(const DeviceOpTimer&) = delete;

  // Event `boundary` (0 .. op count) marks the start of op `boundary` and
  // the end of the op before it.
  void record(std::size_t boundary) override;
  // Waits for event `last_boundary` and adds each op's time (ms) between its
  // two events to `totals` (sized to the op count).
  void accumulate(std::size_t last_boundary, std::vector<double>& totals) override;

 private:
  DeviceContext& context_;
  std::vector<CudaEvent> events_;
};

}  // namespace ctp
