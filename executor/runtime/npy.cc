#include "executor/runtime/npy.h"

#include <cstdint>
#include <cstring>
#include <limits>
#include <regex>

#include "program_ir/atomic_file.h"

namespace ctp {
namespace {

constexpr std::size_t kMaxHeaderBytes = 10000;

struct NpyType {
  const char* descr;
  DataType dtype;
};

constexpr NpyType kTypes[] = {
    {"<f2", DataType::FP16}, {"<f4", DataType::FP32}, {"<f8", DataType::FP64},
    {"<i4", DataType::INT32}, {"<i8", DataType::INT64}, {"|b1", DataType::BOOL},
    {"|u1", DataType::UINT8}, {"|i1", DataType::INT8},  {"<i2", DataType::INT16},
};

std::string header_value(const std::string& header, const std::string& key,
                         const std::string& origin) {
  // The header is a Python dict literal; its values are a quoted string, a
  // bool or a tuple of integers.
  const std::regex pattern("['\"]" + key + "['\"]\\s*:\\s*('[^']*'|\"[^\"]*\"|True|False|\\([^)]*\\))");
  std::smatch match;
  if (!std::regex_search(header, match, pattern))
    throw Error(origin + ": .npy header has no '" + key + "': " + header);
  return match[1].str();
}

}  // namespace

Tensor tensor_from_npy(const std::string& bytes, const std::string& origin) {
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0)
    throw Error(origin + ": not a .npy file (bad magic)");
  const auto major = static_cast<unsigned char>(bytes[6]);
  std::size_t header_len = 0, header_start = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) |
                 static_cast<std::size_t>(static_cast<unsigned char>(bytes[9])) << 8;
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) throw Error(origin + ": truncated .npy header");
    for (int i = 3; i >= 0; --i)
      header_len = header_len << 8 | static_cast<unsigned char>(bytes[8 + static_cast<std::size_t>(i)]);
    header_start = 12;
  } else {
    throw Error(origin + ": unsupported .npy version " + std::to_string(major));
  }
  if (header_start + header_len > bytes.size()) throw Error(origin + ": truncated .npy header");
  // numpy's own reader refuses longer headers (max_header_size); the
  // header is matched with std::regex, whose matcher recurses per character.
  if (header_len > kMaxHeaderBytes)
    throw Error(origin + ": .npy header of " + std::to_string(header_len) +
                " bytes is longer than the " + std::to_string(kMaxHeaderBytes) + " numpy reads");
  const std::string header = bytes.substr(header_start, header_len);

  std::string descr = header_value(header, "descr", origin);
  descr = descr.substr(1, descr.size() - 2);
  if (descr.size() == 3 && descr[0] == '=') descr[0] = '<';  // native order on little-endian hosts
  const NpyType* type = nullptr;
  for (const NpyType& t : kTypes)
    if (descr == t.descr) type = &t;
  if (!type) throw Error(origin + ": unsupported .npy dtype '" + descr + "'");
  if (header_value(header, "fortran_order", origin) != "False")
    throw Error(origin + ": Fortran-ordered arrays are not supported (save with C order)");

  std::vector<int64_t> shape;
  const std::string dims = header_value(header, "shape", origin);
  static const std::regex number("\\d+");
  for (auto it = std::sregex_iterator(dims.begin(), dims.end(), number);
       it != std::sregex_iterator(); ++it) {
    int64_t dim = 0;  // saturating: any dimension that large fails the size check below
    for (char c : it->str())
      dim = dim > (std::numeric_limits<int64_t>::max() - (c - '0')) / 10
                ? std::numeric_limits<int64_t>::max()
                : dim * 10 + (c - '0');
    shape.push_back(dim);
  }
  // The data must all be there before the tensor is allocated: the header
  // alone could otherwise ask for any amount of memory.
  constexpr uint64_t kHuge = std::numeric_limits<uint64_t>::max();
  uint64_t needed = element_size(type->dtype);
  for (int64_t d : shape)
    if (d == 0) needed = 0;
  for (int64_t d : shape)
    if (d != 0) needed = needed > kHuge / static_cast<uint64_t>(d) ? kHuge : needed * static_cast<uint64_t>(d);
  const std::size_t data_start = header_start + header_len;
  if (bytes.size() - data_start != needed)
    throw Error(origin + ": .npy data has " + std::to_string(bytes.size() - data_start) +
                " bytes, shape " + dims + " of '" + descr + "' needs " +
                (needed == kHuge ? "more than 2^64" : std::to_string(needed)));
  Tensor tensor(type->dtype, shape);
  if (tensor.bytes()) std::memcpy(tensor.raw_data(), bytes.data() + data_start, tensor.bytes());
  return tensor;
}

Tensor read_npy_file(const std::string& path) { return tensor_from_npy(read_file(path), path); }

std::string tensor_to_npy(const Tensor& tensor) {
  const NpyType* type = nullptr;
  for (const NpyType& t : kTypes)
    if (t.dtype == tensor.dtype()) type = &t;
  if (!type)
    throw Error("tensors of dtype " + std::string(to_string(tensor.dtype())) +
                " have no .npy equivalent");
  std::string shape = "(";
  for (std::size_t i = 0; i < tensor.shape().size(); ++i)
    shape += (i ? ", " : "") + std::to_string(tensor.shape()[i]);
  shape += tensor.shape().size() == 1 ? ",)" : ")";  // Python's one-element tuple
  std::string header = std::string("{'descr': '") + type->descr +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad with spaces so that the data starts on a 64-byte boundary.
  const std::size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  if (tensor.bytes())
    out.append(static_cast<const char*>(tensor.raw_data()), tensor.bytes());
  return out;
}

}  // namespace ctp
