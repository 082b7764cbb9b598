#include "transpilers/collective_choices.h"

#include <cstddef>
#include <string>

#include "program_ir/error.h"

namespace ctp {

CollectiveOptions collective_options(const CollectiveChoices& choices) {
  CollectiveOptions c;
  c.nrings = choices.nrings;
  c.rank = choices.rank;
  c.endpoints = choices.endpoints;
  c.wait_port = choices.wait_port;
  c.params = parse_param_source(choices.params);
  c.dialect = parse_op_dialect(choices.op_dialect);
  if (choices.current_endpoint) {
    c.current_endpoint = *choices.current_endpoint;
  } else if (c.rank >= 0 && static_cast<std::size_t>(c.rank) < c.endpoints.size()) {
    // The rank's own entry, as Paddle's launcher sets PADDLE_CURRENT_ENDPOINT.
    c.current_endpoint = c.endpoints[static_cast<std::size_t>(c.rank)];
  } else if (c.rank >= 0) {
    throw Error("rank " + std::to_string(c.rank) + " has no entry in the endpoints (" +
                std::to_string(c.endpoints.size()) + " given): name the current endpoint");
  }
  return c;
}

}  // namespace ctp
