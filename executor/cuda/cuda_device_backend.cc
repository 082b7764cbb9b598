// The CUDA device backend, registered when libctp_cuda is loaded: a run's
// session on one GPU owns its DeviceContext (compute stream, ring streams,
// cuBLAS handle), moves host data to the GPU on the compute stream, waits for
// the GPU while polling its NCCL rings, and times ops with CUDA events.
#include "executor/cuda/device_context.h"
#include "executor/cuda/device_op_timer.h"
#include "executor/cuda/nccl_communicator.h"
#include "executor/runtime/device_backend.h"

namespace ctp {
namespace {

class CudaSession final : public DeviceSession {
 public:
  explicit CudaSession(int device_index) : context_(device_index) {}

  DeviceContext* context() override { return &context_; }

  void bind(Tensor& var, const Tensor& value) override {
    const bool reusable = var.initialized() && var.device() == context_.device() &&
                          var.dtype() == value.dtype() && var.shape() == value.shape();
    if (!reusable) var = Tensor(value.dtype(), value.shape(), context_.device());
    copy_bytes(value, var, context_.compute_stream());
  }

  Tensor host_tensor(DataType dtype, std::vector<int64_t> shape) override {
    const std::size_t bytes = tensor_byte_count(dtype, shape);
    return Tensor::view(cuda::allocate_pinned_host_buffer(bytes), 0, dtype, std::move(shape));
  }

  Tensor copy_to_device(const Tensor& value) override {
    Tensor out(value.dtype(), value.shape(), context_.device());
    copy_bytes(value, out, context_.compute_stream());
    return out;
  }

  void synchronize(CommunicatorManager* comms) override { synchronize_device(context_, comms); }
  Tensor to_host(const Tensor& value) override { return context_.to_host(value); }
  std::unique_ptr<OpTimer> make_op_timer() override {
    return std::make_unique<DeviceOpTimer>(context_);
  }

 private:
  DeviceContext context_;
};

class CudaDeviceBackend final : public DeviceBackend {
 public:
  std::string name() const override { return "cuda"; }
  std::unique_ptr<DeviceSession> open(Device device) override {
    return std::make_unique<CudaSession>(device.index);
  }
};

}  // namespace

CTP_REGISTER_DEVICE_BACKEND(CUDA, std::make_shared<CudaDeviceBackend>());

}  // namespace ctp
