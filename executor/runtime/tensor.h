// A dense tensor: element type, shape and a view into a reference-counted
// buffer. Several tensors may view one buffer (coalesce_tensor makes each
// gradient a view into its FusedOutput), so writes through one are seen by all.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "program_ir/error.h"
#include "program_ir/types.h"

namespace ctp {

enum class DeviceKind { CPU, CUDA };
inline constexpr int kDeviceKindCount = 2;
// "cpu", "cuda": how backends and their libraries name a device kind.
std::string_view to_string(DeviceKind kind);

struct Device {
  DeviceKind kind = DeviceKind::CPU;
  int index = 0;  // GPU ordinal for CUDA
  bool operator==(const Device&) const = default;
  std::string to_string() const;
};

// Raw memory on one device. CPU buffers are 64-byte aligned; device buffers
// come from the backend that allocated them (executor/cuda).
class Buffer {
 public:
  virtual ~Buffer() = default;
  virtual void* data() = 0;
  virtual std::size_t size() const = 0;
  virtual Device device() const = 0;
};

std::shared_ptr<Buffer> allocate_cpu_buffer(std::size_t bytes);

// The bytes of a (dtype, shape) tensor; throws ctp::Error for a negative dim
// or a size that overflows 64 bits.
std::size_t tensor_byte_count(DataType dtype, const std::vector<int64_t>& shape);

// Device memory comes from the backend of that kind of device: it registers
// its allocator when its library is loaded (executor/cuda registers CUDA's),
// so this header needs no device toolkit. The buffer is zero-filled, as CPU
// ones.
using DeviceAllocator = std::shared_ptr<Buffer> (*)(Device device, std::size_t bytes);
void register_device_allocator(DeviceKind kind, DeviceAllocator allocator);
// Loads the device's backend first when it is not loaded yet
// (executor/runtime/backend_library.h); throws ctp::Error when there is none.
std::shared_ptr<Buffer> allocate_buffer(Device device, std::size_t bytes);

class Tensor {
 public:
  Tensor() = default;
  // Allocates a zero-filled CPU tensor.
  Tensor(DataType dtype, std::vector<int64_t> shape);
  // Allocates a zero-filled tensor on `device` (see allocate_buffer).
  Tensor(DataType dtype, std::vector<int64_t> shape, Device device);
  // A view of `bytes_offset` into `buffer`; the buffer must be large enough.
  static Tensor view(std::shared_ptr<Buffer> buffer, std::size_t bytes_offset,
                     DataType dtype, std::vector<int64_t> shape);
  // A dtype and shape with no elements: what stays of a var whose elements
  // were released while later ops still read its shape (inputs an op's
  // schema declares shape-only, executor/var_release.h).
  static Tensor without_elements(DataType dtype, std::vector<int64_t> shape);

  // Whether it has elements (a buffer).
  bool initialized() const { return buffer_ != nullptr; }
  // Whether its dtype and shape are known: it has elements, or had them
  // until release_elements().
  bool has_shape() const { return buffer_ != nullptr || elements_released_; }
  // Frees its elements (drops its hold on the buffer) and keeps dtype and
  // shape; reading its data afterwards is an error saying so.
  void release_elements();
  DataType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t numel() const;
  std::size_t bytes() const { return static_cast<std::size_t>(numel()) * element_size(dtype_); }
  Device device() const;
  const std::shared_ptr<Buffer>& buffer() const { return buffer_; }
  std::size_t offset() const { return offset_; }

  void* raw_data();
  const void* raw_data() const;
  // Typed access; throws ctp::Error when T does not match the dtype.
  template <typename T>
  T* data();
  template <typename T>
  const T* data() const;

  // Changes the shape keeping the element count (throws otherwise).
  void reshape(std::vector<int64_t> shape);
  // Reallocates (on CPU) when dtype or shape differ; keeps the buffer otherwise.
  void resize(DataType dtype, std::vector<int64_t> shape);
  // The same on `device`: keeps the buffer when dtype, shape and device match.
  void resize(DataType dtype, std::vector<int64_t> shape, Device device);
  // Whether this tensor shares memory with `other`.
  bool shares_buffer_with(const Tensor& other) const { return buffer_ && buffer_ == other.buffer_; }

 private:
  DataType dtype_ = DataType::FP32;
  std::vector<int64_t> shape_;
  std::shared_ptr<Buffer> buffer_;
  std::size_t offset_ = 0;
  bool elements_released_ = false;  // shape and dtype kept without a buffer
};

// The DataType that matches a C++ element type.
template <typename T>
constexpr DataType data_type_of();
template <> constexpr DataType data_type_of<float>() { return DataType::FP32; }
template <> constexpr DataType data_type_of<double>() { return DataType::FP64; }
template <> constexpr DataType data_type_of<int32_t>() { return DataType::INT32; }
template <> constexpr DataType data_type_of<int64_t>() { return DataType::INT64; }
template <> constexpr DataType data_type_of<bool>() { return DataType::BOOL; }
template <> constexpr DataType data_type_of<uint16_t>() { return DataType::FP16; }  // raw 16-bit storage
template <> constexpr DataType data_type_of<uint8_t>() { return DataType::UINT8; }

template <typename T>
T* Tensor::data() {
  if (data_type_of<T>() != dtype_ &&
      !(sizeof(T) == 2 && (dtype_ == DataType::FP16 || dtype_ == DataType::BF16)))
    throw Error("tensor of dtype " + std::string(to_string(dtype_)) +
                " accessed as " + std::string(to_string(data_type_of<T>())));
  return static_cast<T*>(raw_data());
}

template <typename T>
const T* Tensor::data() const {
  return const_cast<Tensor*>(this)->data<T>();
}

}  // namespace ctp
