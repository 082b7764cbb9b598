// The CPU kernels register themselves when libctp_kernels is loaded
// (CTP_REGISTER_KERNEL) and nothing calls them by name, so a linker run with
// --as-needed would drop that library from libctp_executor and no CPU kernel
// would exist. The executor calls this empty function to make the dependency
// a real one.
#pragma once

namespace ctp {

void link_cpu_kernels();

}  // namespace ctp
