#include "transpilers/found_infinite_sync.h"

#include <string>

#include "program_ir/op_role.h"
#include "transpilers/rewrite_support.h"

namespace ctp {
namespace {

Op cast_op(const std::string& from, DataType from_type, const std::string& to, DataType to_type) {
  return make_op("cast", {{"X", {from}}}, {{"Out", {to}}},
                 {{"in_dtype", Attribute(static_cast<int32_t>(from_type))},
                  {"out_dtype", Attribute(static_cast<int32_t>(to_type))},
                  {kOpRoleAttr, Attribute(op_role::kOptimize)}});
}

}  // namespace

int insert_found_infinite_allreduce(Block& block, const std::vector<Block::OpHandle>& checks,
                                    std::string_view pass) {
  int synced = 0;
  const Attribute optimize(op_role::kOptimize);
  for (const Block::OpHandle it : checks) {
    const std::vector<std::string>* found = it->output("FoundInfinite");
    if (!found || found->size() != 1) continue;
    const std::string& flag = found->front();
    std::string wide = flag + ".int32";
    for (int i = 1; block.has_var(wide); ++i) wide = flag + ".int32_" + std::to_string(i);
    create_var(block,
               VarRequest{.name = wide, .shape = std::vector<int64_t>{1},
                          .dtype = DataType::INT32, .persistable = false, .stop_gradient = true},
               pass);
    auto at = block.insert_op_after(it, cast_op(flag, DataType::BOOL, wide, DataType::INT32));
    at = block.insert_op_after(at, make_in_place_op("c_sync_calc_stream", wide, {{kOpRoleAttr, optimize}}));
    at = block.insert_op_after(
        at, make_in_place_op("c_allreduce_max", wide,
                             {{"ring_id", Attribute(int32_t{0})}, {kOpRoleAttr, optimize}}));
    at = block.insert_op_after(
        at, make_in_place_op("c_sync_comm_stream", wide,
                             {{"ring_id", Attribute(int32_t{0})}, {kOpRoleAttr, optimize}}));
    block.insert_op_after(at, cast_op(wide, DataType::INT32, flag, DataType::BOOL));
    ++synced;
  }
  return synced;
}

}  // namespace ctp
