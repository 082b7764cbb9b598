#include "executor/runtime/tensor.h"

#include <unistd.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

#include "executor/runtime/backend_library.h"
#include "executor/runtime/memory_stats.h"

namespace ctp {
namespace {

class CpuBuffer final : public Buffer {
 public:
  explicit CpuBuffer(std::size_t bytes) : size_(bytes) {
    // aligned_alloc needs a size that is a multiple of the alignment.
    std::size_t rounded = (bytes + 63) / 64 * 64;
    data_ = rounded ? std::aligned_alloc(64, rounded) : nullptr;
    if (rounded && !data_) throw std::bad_alloc();
    if (data_) std::memset(data_, 0, rounded);
    note_buffer_made(DeviceKind::CPU, bytes);
  }
  ~CpuBuffer() override {
    std::free(data_);
    note_buffer_freed(DeviceKind::CPU, size_);
  }
  void* data() override { return data_; }
  std::size_t size() const override { return size_; }
  Device device() const override { return Device{}; }

 private:
  void* data_ = nullptr;
  std::size_t size_;
};

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// The element count, checked: a shape read from a file may hold any int64.
int64_t count(const std::vector<int64_t>& shape) {
  for (int64_t d : shape) {
    if (d < 0)
      throw Error("tensor shape " + shape_text(shape) + " has an unknown (negative) dimension");
    if (d == 0) return 0;
  }
  int64_t n = 1;
  for (int64_t d : shape) {
    if (n > std::numeric_limits<int64_t>::max() / d)
      throw Error("tensor shape " + shape_text(shape) + " has more than 2^63 elements");
    n *= d;
  }
  return n;
}

// Requests below this skip the physical-memory check.
constexpr std::size_t kCheckedAllocation = std::size_t{1} << 30;

std::size_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return std::numeric_limits<std::size_t>::max();
  return static_cast<std::size_t>(pages) * static_cast<std::size_t>(page_size);
}

}  // namespace

std::size_t tensor_byte_count(DataType dtype, const std::vector<int64_t>& shape) {
  const auto n = static_cast<uint64_t>(count(shape));
  const std::size_t size = element_size(dtype);
  if (size != 0 && n > std::numeric_limits<std::size_t>::max() / size)
    throw Error("a " + std::string(to_string(dtype)) + " tensor of shape " + shape_text(shape) +
                " has more bytes than fit in 64 bits");
  return static_cast<std::size_t>(n) * size;
}

std::string_view to_string(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::CPU: return "cpu";
    case DeviceKind::CUDA: return "cuda";
  }
  return "?";
}

std::string Device::to_string() const {
  return kind == DeviceKind::CPU ? "cpu" : "gpu:" + std::to_string(index);
}

// A request larger than the machine's memory fails here, with a message,
// rather than succeeding on overcommit and getting the process OOM-killed
// when the zero-fill touches the pages.
std::shared_ptr<Buffer> allocate_cpu_buffer(std::size_t bytes) {
  if (bytes >= kCheckedAllocation) {
    const std::size_t memory = physical_memory_bytes();
    if (bytes > memory)
      throw Error("cannot allocate " + std::to_string(bytes) + " bytes: more than this machine's " +
                  std::to_string(memory) + " bytes of memory");
  }
  try {
    return std::make_shared<CpuBuffer>(bytes);
  } catch (const std::bad_alloc&) {
    throw Error("cannot allocate " + std::to_string(bytes) + " bytes: out of memory");
  }
}

namespace {
std::array<DeviceAllocator, kDeviceKindCount>& allocators() {
  static std::array<DeviceAllocator, kDeviceKindCount> table{};
  return table;
}
}  // namespace

void register_device_allocator(DeviceKind kind, DeviceAllocator allocator) {
  if (kind == DeviceKind::CPU) throw Error("the CPU allocator is built in and cannot be replaced");
  allocators()[static_cast<std::size_t>(kind)] = allocator;
}

std::shared_ptr<Buffer> allocate_buffer(Device device, std::size_t bytes) {
  if (device.kind == DeviceKind::CPU) return allocate_cpu_buffer(bytes);
  DeviceAllocator allocator = allocators()[static_cast<std::size_t>(device.kind)];
  if (!allocator) {
    try {
      load_device_backend(device.kind);
    } catch (const Error& e) {
      throw Error("cannot allocate " + std::to_string(bytes) + " bytes on " + device.to_string() +
                  ": " + e.what());
    }
    allocator = allocators()[static_cast<std::size_t>(device.kind)];
    if (!allocator)
      throw Error("cannot allocate " + std::to_string(bytes) + " bytes on " +
                  device.to_string() + ": its backend registered no allocator");
  }
  return allocator(device, bytes);
}

Tensor::Tensor(DataType dtype, std::vector<int64_t> shape, Device device)
    : dtype_(dtype), shape_(std::move(shape)) {
  buffer_ = allocate_buffer(device, tensor_byte_count(dtype_, shape_));
}

Tensor::Tensor(DataType dtype, std::vector<int64_t> shape)
    : dtype_(dtype), shape_(std::move(shape)) {
  const std::size_t bytes = tensor_byte_count(dtype_, shape_);
  try {
    buffer_ = allocate_cpu_buffer(bytes);
  } catch (const Error& e) {
    throw Error("a " + std::string(to_string(dtype_)) + " tensor of shape " + shape_text(shape_) +
                ": " + e.what());
  }
}

Tensor Tensor::view(std::shared_ptr<Buffer> buffer, std::size_t bytes_offset,
                    DataType dtype, std::vector<int64_t> shape) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  const std::size_t bytes = tensor_byte_count(dtype, t.shape_);
  if (bytes > buffer->size() || bytes_offset > buffer->size() - bytes)
    throw Error("tensor view of " + std::to_string(t.bytes()) + " bytes at offset " +
                std::to_string(bytes_offset) + " overruns a buffer of " +
                std::to_string(buffer->size()) + " bytes");
  t.buffer_ = std::move(buffer);
  t.offset_ = bytes_offset;
  return t;
}

Tensor Tensor::without_elements(DataType dtype, std::vector<int64_t> shape) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.elements_released_ = true;
  return t;
}

void Tensor::release_elements() {
  if (!has_shape()) return;
  buffer_.reset();
  offset_ = 0;
  elements_released_ = true;
}

int64_t Tensor::numel() const { return count(shape_); }

Device Tensor::device() const { return buffer_ ? buffer_->device() : Device{}; }

void* Tensor::raw_data() {
  if (!buffer_)
    throw Error(elements_released_ ? "the elements of this " + std::string(to_string(dtype_)) +
                                         shape_text(shape_) +
                                         " tensor were released after their last read; only its "
                                         "dtype and shape remain (for ops that read only those)"
                                   : std::string("tensor is not initialized"));
  return static_cast<char*>(buffer_->data()) + offset_;
}

const void* Tensor::raw_data() const { return const_cast<Tensor*>(this)->raw_data(); }

void Tensor::reshape(std::vector<int64_t> shape) {
  if (count(shape) != numel())
    throw Error("cannot reshape a tensor of " + std::to_string(numel()) +
                " elements to " + std::to_string(count(shape)));
  shape_ = std::move(shape);
}

void Tensor::resize(DataType dtype, std::vector<int64_t> shape) {
  if (buffer_ && dtype == dtype_ && shape == shape_) return;
  *this = Tensor(dtype, std::move(shape));
}

void Tensor::resize(DataType dtype, std::vector<int64_t> shape, Device device) {
  if (buffer_ && dtype == dtype_ && shape == shape_ && this->device() == device) return;
  *this = Tensor(dtype, std::move(shape), device);
}

}  // namespace ctp
