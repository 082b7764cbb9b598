// The kernels of the ops that set rings up, written once for every device
// kind. Each asks the communicator backend registry
// (executor/runtime/comm_backend.h) for the backend of its run's device kind
// and never names one:
//
//   c_gen_nccl_id             rank 0 has the backend of rings across processes
//                             make the ring's unique id and sends it to the
//                             others over the registered id exchange; Out (a
//                             RAW var) holds it as a UINT8 host tensor
//   c_comm_init               joins a ring across processes, one rank per process
//   c_comm_init_multitrainer  joins a ring across processes and their device
//                             threads, ranked trainer-major as Paddle's NCCL
//                             multi-trainer communicators are
//   c_comm_init_all           joins a ring among the device threads of this
//                             process
//
// Each checks the program's own rank and rank count (c_gen_nccl_id's `rank`
// and endpoints, c_comm_init's `rank` and `nranks`, the multi-trainer op's
// `trainer_id` and `ntrainers`) against the process's CommOptions::rank and
// world_size when those are known, before any exchange: a program
// transpiled for another rank, or for another number of ranks, stops at
// once instead of running as another rank or waiting out the timeout. (Rings
// across processes span every process of the job: ctp makes no others.)
//
// With several device threads in a process, local rank 0 fetches or makes
// the id and hands it to the others; when one thread fails, the thread group
// is aborted so that the others stop waiting for it. Each device's kernel
// folder registers these for its kind (ops/cpu/collective_init.cc,
// ops/cuda/collective_init_cuda.cc).
#pragma once
#include "executor/runtime/kernel.h"

namespace ctp::collective {

void gen_unique_id_kernel(KernelContext& ctx);          // c_gen_nccl_id
void comm_init_kernel(KernelContext& ctx);              // c_comm_init
void comm_init_multitrainer_kernel(KernelContext& ctx); // c_comm_init_multitrainer
void comm_init_all_kernel(KernelContext& ctx);          // c_comm_init_all

}  // namespace ctp::collective
