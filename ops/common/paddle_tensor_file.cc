#include "ops/common/paddle_tensor_file.h"

#include <cstring>

#include "program_ir/error.h"
#include "program_ir/wire_format.h"

namespace ctp::paddle_file {
namespace {

constexpr uint32_t kTensorDescDataType = 1;
constexpr uint32_t kTensorDescDims = 2;

template <typename T>
void append_le(std::string& out, T value) {
  char buf[sizeof(T)];
  std::memcpy(buf, &value, sizeof(T));  // little-endian hosts only (see the header)
  out.append(buf, sizeof(T));
}

// A bounds-checked cursor over the file's bytes.
class Cursor {
 public:
  Cursor(std::string_view bytes, std::size_t& pos, const std::string& where)
      : bytes_(bytes), pos_(pos), where_(where) {}

  template <typename T>
  T read(const char* what) {
    T value;
    std::memcpy(&value, take(sizeof(T), what).data(), sizeof(T));
    return value;
  }
  std::string_view take(uint64_t n, const char* what) {
    if (n > bytes_.size() - pos_)
      fail(std::string("the file ends inside the ") + what + " (" + std::to_string(n) +
           " bytes wanted, " + std::to_string(bytes_.size() - pos_) + " left)");
    const std::string_view s = bytes_.substr(pos_, static_cast<std::size_t>(n));
    pos_ += static_cast<std::size_t>(n);
    return s;
  }
  std::size_t position() const { return pos_; }
  [[noreturn]] void fail(const std::string& reason) const {
    throw Error(where_ + ", byte " + std::to_string(pos_) + ": " + reason +
                " (not a tensor as Paddle's save ops write it)");
  }

 private:
  std::string_view bytes_;
  std::size_t& pos_;
  const std::string& where_;
};

struct Desc {
  DataType dtype = DataType::FP32;
  bool has_dtype = false;
  std::vector<int64_t> dims;
};

Desc parse_desc(std::string_view message, const Cursor& cursor) {
  Desc desc;
  try {
    wire::Reader r(message, cursor.position() - message.size());
    while (!r.done()) {
      const std::size_t tag_start = r.position();
      const wire::Tag tag = r.read_tag();
      if (tag.field == kTensorDescDataType && tag.type == wire::WireType::Varint) {
        desc.dtype = static_cast<DataType>(wire::as_int32(r.read_varint()));
        desc.has_dtype = true;
      } else if (tag.field == kTensorDescDims && tag.type == wire::WireType::Varint) {
        desc.dims.push_back(wire::as_int64(r.read_varint()));
      } else if (tag.field == kTensorDescDims && tag.type == wire::WireType::LengthDelimited) {
        wire::Reader packed(r.read_bytes(), r.last_payload_offset());
        while (!packed.done()) desc.dims.push_back(wire::as_int64(packed.read_varint()));
      } else {
        r.skip_field(tag, tag_start);  // a newer field: not ours to judge
      }
    }
  } catch (const wire::WireFault& e) {
    cursor.fail(std::string("malformed TensorDesc at byte ") + std::to_string(e.offset()) +
                ": " + e.what());
  }
  if (!desc.has_dtype) cursor.fail("the TensorDesc has no data_type");
  if (element_size(desc.dtype) == 0)
    cursor.fail("the TensorDesc's data_type " + std::to_string(static_cast<int>(desc.dtype)) +
                " is not a fixed-size element type");
  for (int64_t d : desc.dims)
    if (d < 0) cursor.fail("the TensorDesc has a negative dim " + std::to_string(d));
  return desc;
}

}  // namespace

void append_tensor(std::string& out, const Tensor& tensor) {
  append_le<uint32_t>(out, 0);  // LoDTensor version
  append_le<uint64_t>(out, 0);  // no LoD levels
  append_le<uint32_t>(out, 0);  // tensor version
  std::string desc;
  wire::Writer w(desc);
  w.tag(kTensorDescDataType, wire::WireType::Varint);
  w.varint(static_cast<uint64_t>(static_cast<int64_t>(tensor.dtype())));
  for (int64_t d : tensor.shape()) {
    w.tag(kTensorDescDims, wire::WireType::Varint);
    w.varint(static_cast<uint64_t>(d));
  }
  append_le<int32_t>(out, static_cast<int32_t>(desc.size()));
  out += desc;
  out.append(static_cast<const char*>(tensor.raw_data()), tensor.bytes());
}

Tensor read_tensor(std::string_view bytes, std::size_t& pos, const std::string& where) {
  Cursor c(bytes, pos, where);
  if (const auto version = c.read<uint32_t>("LoDTensor version"); version != 0)
    c.fail("LoDTensor version " + std::to_string(version) + ", expected 0");
  const auto levels = c.read<uint64_t>("LoD level count");
  if (levels > 64) c.fail(std::to_string(levels) + " LoD levels");
  for (uint64_t i = 0; i < levels; ++i) c.take(c.read<uint64_t>("LoD level size"), "LoD level");
  if (const auto version = c.read<uint32_t>("tensor version"); version != 0)
    c.fail("tensor version " + std::to_string(version) + ", expected 0");
  const auto desc_size = c.read<int32_t>("TensorDesc size");
  if (desc_size < 0) c.fail("negative TensorDesc size " + std::to_string(desc_size));
  const Desc desc = parse_desc(c.take(static_cast<uint64_t>(desc_size), "TensorDesc"), c);
  uint64_t count = 1;
  for (int64_t d : desc.dims) {
    if (d != 0 && count > (uint64_t{1} << 40) / static_cast<uint64_t>(d))
      c.fail("the TensorDesc's dims hold more than 2^40 elements");
    count *= static_cast<uint64_t>(d);
  }
  const std::string_view data = c.take(count * element_size(desc.dtype), "tensor data");
  Tensor tensor(desc.dtype, desc.dims);
  if (!data.empty()) std::memcpy(tensor.raw_data(), data.data(), data.size());
  return tensor;
}

}  // namespace ctp::paddle_file
