// NumPy .npy files (format versions 1.0 to 3.0, C order, little-endian) as
// tensors: what `ctp run --feed NAME=FILE.npy` reads.
#pragma once
#include <string>

#include "executor/runtime/tensor.h"

namespace ctp {

// Parses .npy bytes; `origin` names the source in errors. Supported dtypes:
// <f2 (FP16), <f4, <f8, <i4, <i8, |b1, |u1, |i1 and <i2.
Tensor tensor_from_npy(const std::string& bytes, const std::string& origin);
Tensor read_npy_file(const std::string& path);
// The .npy (version 1.0) bytes of a tensor; BF16 has no NumPy dtype and is
// an error.
std::string tensor_to_npy(const Tensor& tensor);

}  // namespace ctp
