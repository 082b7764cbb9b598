// The CPU's device backend, built into the runtime: host memory is the
// device, so binding is sharing, copies are plain copies, and there is
// nothing to wait for or to time beyond the host's clock.
#include <cstring>

#include "executor/runtime/device_backend.h"
#include "program_ir/error.h"

namespace ctp {
namespace {

class CpuSession final : public DeviceSession {
 public:
  DeviceContext* context() override { return nullptr; }
  void bind(Tensor& var, const Tensor& value) override { var = value; }
  Tensor host_tensor(DataType dtype, std::vector<int64_t> shape) override {
    return Tensor(dtype, std::move(shape));
  }
  Tensor copy_to_device(const Tensor& value) override {
    Tensor out(value.dtype(), value.shape());
    if (value.bytes()) std::memcpy(out.raw_data(), value.raw_data(), value.bytes());
    return out;
  }
  void synchronize(CommunicatorManager*) override {}
  Tensor to_host(const Tensor& value) override {
    throw Error("a tensor on " + value.device().to_string() + " cannot be read by a run on cpu");
  }
  std::unique_ptr<OpTimer> make_op_timer() override { return nullptr; }
};

class CpuDeviceBackend final : public DeviceBackend {
 public:
  std::string name() const override { return "cpu"; }
  std::unique_ptr<DeviceSession> open(Device) override { return std::make_unique<CpuSession>(); }
};

}  // namespace

CTP_REGISTER_DEVICE_BACKEND(CPU, std::make_shared<CpuDeviceBackend>());

}  // namespace ctp
