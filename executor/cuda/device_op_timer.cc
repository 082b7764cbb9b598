#include "executor/cuda/device_op_timer.h"

#include "executor/cuda/cuda_check.h"

namespace ctp {

DeviceOpTimer::~DeviceOpTimer() {
  for (CudaEvent e : events_) cudaEventDestroy(e);
}

void DeviceOpTimer::record(std::size_t boundary) {
  context_.make_current();
  while (events_.size() <= boundary) {
    CudaEvent e = nullptr;
    CTP_CUDA_CHECK(cudaEventCreate(&e));  // with timing
    events_.push_back(e);
  }
  CTP_CUDA_CHECK(cudaEventRecord(events_[boundary], context_.compute_stream()));
}

void DeviceOpTimer::accumulate(std::size_t last_boundary, std::vector<double>& totals) {
  context_.make_current();
  CTP_CUDA_CHECK(cudaEventSynchronize(events_.at(last_boundary)));
  for (std::size_t i = 0; i < last_boundary && i < totals.size(); ++i) {
    float ms = 0;
    CTP_CUDA_CHECK(cudaEventElapsedTime(&ms, events_[i], events_[i + 1]));
    totals[i] += ms;
  }
}

}  // namespace ctp
