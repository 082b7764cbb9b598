// The CUDA kernels of the ops that set rings up: the device-neutral ones of
// ops/common/collective_init.h, which get NCCL (both across processes and
// among device threads) from the communicator backend registry.
#include "ops/common/collective_init.h"

namespace ctp {

CTP_REGISTER_KERNEL(c_gen_nccl_id, CUDA, collective::gen_unique_id_kernel);
CTP_REGISTER_KERNEL(c_comm_init, CUDA, collective::comm_init_kernel);
CTP_REGISTER_KERNEL(c_comm_init_multitrainer, CUDA, collective::comm_init_multitrainer_kernel);
CTP_REGISTER_KERNEL(c_comm_init_all, CUDA, collective::comm_init_all_kernel);
CTP_REGISTER_KERNEL(comm_init_all, CUDA, collective::comm_init_all_kernel);  // Paddle 3's name

}  // namespace ctp
