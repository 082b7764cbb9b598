// CTP_HOST_DEVICE marks the inline functions of ops/common that the CPU
// kernels and the CUDA kernels (nvcc) both call: __host__ __device__ under
// nvcc, nothing for the host compiler.
#pragma once

#if defined(__CUDACC__)
#define CTP_HOST_DEVICE __host__ __device__
#else
#define CTP_HOST_DEVICE
#endif
