#include "executor/device_runtime.h"

#include <cstring>

#include "program_ir/error.h"

#ifdef CTP_HAVE_CUDA
#include "executor/cuda/nccl_communicator.h"
#endif

namespace ctp {
namespace {

Tensor host_copy(const Tensor& value) {
  Tensor out(value.dtype(), value.shape());
  if (value.bytes()) std::memcpy(out.raw_data(), value.raw_data(), value.bytes());
  return out;
}

}  // namespace

DeviceRuntime::DeviceRuntime(Device device) : device_(device) {
  if (device.kind != DeviceKind::CUDA) return;
#ifdef CTP_HAVE_CUDA
  context_ = new DeviceContext(device.index);
#else
  throw Error("cannot run on " + device.to_string() +
              ": this build of ctp has no CUDA backend (configure with -DCTP_WITH_CUDA=ON "
              "where CUDA and NCCL are installed)");
#endif
}

DeviceRuntime::~DeviceRuntime() {
#ifdef CTP_HAVE_CUDA
  delete context_;
#endif
}

void DeviceRuntime::bind(Scope& scope, const std::string& name, const Tensor& value) {
  Tensor& var = scope.var(name);
#ifdef CTP_HAVE_CUDA
  if (context_) {
    const bool reusable = var.initialized() && var.device() == device_ &&
                          var.dtype() == value.dtype() && var.shape() == value.shape();
    if (!reusable) var = Tensor(value.dtype(), value.shape(), device_);
    copy_bytes(value, var, context_->compute_stream());
    return;
  }
#endif
  var = value;
}

Tensor DeviceRuntime::host_tensor(DataType dtype, std::vector<int64_t> shape) const {
#ifdef CTP_HAVE_CUDA
  if (context_) {
    const std::size_t bytes = tensor_byte_count(dtype, shape);
    return Tensor::view(cuda::allocate_pinned_host_buffer(bytes), 0, dtype, std::move(shape));
  }
#endif
  return Tensor(dtype, std::move(shape));
}

Tensor DeviceRuntime::copy_to_device(const Tensor& value) {
#ifdef CTP_HAVE_CUDA
  if (context_) {
    Tensor out(value.dtype(), value.shape(), device_);
    copy_bytes(value, out, context_->compute_stream());
    return out;
  }
#endif
  return host_copy(value);
}

void DeviceRuntime::synchronize(CommunicatorManager* comms) {
#ifdef CTP_HAVE_CUDA
  if (context_) synchronize_device(*context_, comms);
#else
  (void)comms;
#endif
}

Tensor DeviceRuntime::to_host(const Tensor& value, CommunicatorManager* comms) {
  if (value.device().kind == DeviceKind::CPU) return value;
#ifdef CTP_HAVE_CUDA
  if (context_) {
    synchronize(comms);
    return context_->to_host(value);
  }
#endif
  throw Error("a tensor on " + value.device().to_string() + " cannot be read by a run on " +
              device_.to_string());
}

}  // namespace ctp
