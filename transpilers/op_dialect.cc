#include "transpilers/op_dialect.h"

#include <string>

#include "program_ir/error.h"

namespace ctp {

std::string_view to_string(OpDialect dialect) {
  switch (dialect) {
    case OpDialect::kLegacy: return "legacy";
    case OpDialect::kPaddle3: return "paddle3";
  }
  return "unknown";
}

OpDialect parse_op_dialect(std::string_view name) {
  for (OpDialect d : {OpDialect::kLegacy, OpDialect::kPaddle3})
    if (to_string(d) == name) return d;
  throw Error("unknown op dialect '" + std::string(name) + "' (expected legacy or paddle3)");
}

OpSpelling spell(OpDialect dialect, std::string_view legacy_type) {
  if (dialect == OpDialect::kPaddle3) {
    if (legacy_type == "c_broadcast") return {"broadcast", "x", "out"};
    if (legacy_type == "c_allgather") return {"all_gather", "x", "out"};
    if (legacy_type == "c_comm_init_all") return {"comm_init_all", "", ""};
  }
  return {legacy_type, "X", "Out"};
}

}  // namespace ctp
