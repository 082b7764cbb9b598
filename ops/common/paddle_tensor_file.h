// Paddle's tensor file format: what its save / save_combine ops write and
// load / load_combine read (fluid.io.save_persistables, save_inference_model's
// parameter files, paddle.static.save). One tensor is
//   uint32  version of the LoDTensor, 0
//   uint64  LoD levels, then per level: uint64 byte size and that many bytes
//           of size_t offsets
//   uint32  version of the tensor, 0
//   int32   byte size of the TensorDesc message, then the message
//           (framework.proto: data_type = 1, repeated int64 dims = 2)
//   the elements, little-endian, dims' product times the element size
// and a combined file is such tensors one after another, in the order of the
// op's var list. All integers are little-endian (Paddle writes its host's
// order; every platform it runs on is little-endian).
#pragma once
#include <string>
#include <string_view>

#include "executor/runtime/tensor.h"

namespace ctp::paddle_file {

// Appends `tensor` (a host tensor) to `out`, with no LoD.
void append_tensor(std::string& out, const Tensor& tensor);

// Reads the tensor at `pos` of `bytes` (a file's whole contents) into a new
// host tensor and moves `pos` past it. LoD levels are read and dropped (ctp's
// tensors carry none). Malformed or truncated bytes throw ctp::Error naming
// `where` (the file and var) and the byte offset.
Tensor read_tensor(std::string_view bytes, std::size_t& pos, const std::string& where);

}  // namespace ctp::paddle_file
