// What the CPU and CUDA kernels of save / save_combine / load / load_combine
// share: the op's attributes and Paddle's tensor files
// (ops/common/paddle_tensor_file.h). A save writes its whole file or nothing
// (program_ir/atomic_file.h); a load reads the whole file first and fails,
// naming the file and the var, on anything malformed, short or left over.
#pragma once
#include <vector>

#include "executor/runtime/kernel.h"

namespace ctp {

// Writes the op's X tensors (host copies, in slot order) to its file_path:
// FP32 ones as FP16 when save_as_fp16; missing directories are created, as
// Paddle's save op does; overwrite false refuses an existing file.
void save_tensors(KernelContext& ctx, const std::vector<Tensor>& host_inputs);

// The tensors of the op's file_path, one per var of its Out slot (host
// tensors; FP32 ones as FP16 when load_as_fp16).
std::vector<Tensor> load_tensors(KernelContext& ctx);

}  // namespace ctp
