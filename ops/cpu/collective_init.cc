// The CPU kernels of the ops that set rings up: the device-neutral ones of
// ops/common/collective_init.h, which get Gloo (across processes) and the
// in-process thread group (among device threads) from the communicator
// backend registry.
#include "ops/common/collective_init.h"

namespace ctp {

CTP_REGISTER_KERNEL(c_gen_nccl_id, CPU, collective::gen_unique_id_kernel);
CTP_REGISTER_KERNEL(c_comm_init, CPU, collective::comm_init_kernel);
CTP_REGISTER_KERNEL(c_comm_init_multitrainer, CPU, collective::comm_init_multitrainer_kernel);
CTP_REGISTER_KERNEL(c_comm_init_all, CPU, collective::comm_init_all_kernel);
CTP_REGISTER_KERNEL(comm_init_all, CPU, collective::comm_init_all_kernel);  // Paddle 3's name

}  // namespace ctp
