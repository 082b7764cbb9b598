// The job's collective options as a user spells them: `ctp transpile`'s flags
// and ctp.transpile's keywords are the same choices, and they become
// CollectiveOptions here, once, with the same defaults and checks.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "transpilers/collective_options.h"

namespace ctp {

struct CollectiveChoices {
  int rank = 0;
  std::vector<std::string> endpoints;
  std::optional<std::string> current_endpoint;  // unset: endpoints[rank]
  std::optional<int> nrings;
  bool wait_port = false;
  std::string params = "auto";        // parse_param_source's names
  std::string op_dialect = "legacy";  // parse_op_dialect's names
};

// Throws ctp::Error for an unknown params or op_dialect name, and when no
// current endpoint is given and a rank >= 0 has no entry in the endpoints (a
// current endpoint given with such a rank is kept, as Paddle accepts it). A
// negative rank is left for the transpiler to report, as the reference does.
CollectiveOptions collective_options(const CollectiveChoices& choices);

}  // namespace ctp
