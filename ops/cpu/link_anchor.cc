#include "ops/cpu/link_anchor.h"

namespace ctp {

void link_cpu_kernels() {}

}  // namespace ctp
