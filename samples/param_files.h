// The sample trainer's parameter files: --save-params writes each worker's
// trainable parameters as DIR/worker<i>/<name>.npy (every file of a worker or
// none), --init-params reads DIR/<name>.npy into every worker after the
// startup program (Paddle's names, the layout --save-params writes one
// worker's), so ctp and another framework can start from the same weights.
#pragma once
#include <string>
#include <vector>

#include "executor/runtime/device_runtime.h"
#include "executor/runtime/scope.h"

namespace ctp {
class CommunicatorManager;
}

namespace ctp::samples {

// DIR/<name>.npy of every name, from `scope` (copied to the host), all or none.
void save_parameters(const std::string& dir, const std::vector<std::string>& names,
                     DeviceRuntime& runtime, Scope& scope, CommunicatorManager* comms);

// Sets every named var of `scope` from DIR/<name>.npy. Throws ctp::Error
// naming the file when one is missing, unreadable, or of another dtype or
// shape than the var; nothing is set then.
void load_parameters(const std::string& dir, const std::vector<std::string>& names,
                     DeviceRuntime& runtime, Scope& scope);

}  // namespace ctp::samples
