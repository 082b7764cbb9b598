// Communication ops the transpilers insert: communicator setup, collectives
// and stream synchronization ("The ops the transpilers insert" in
// ../shared/reference/PROGRAM_FORMAT.md, the reference beside the project).
#include "ops/schema/defs_common.h"
#include "ops/schema/meta_collective.h"

namespace ctp::defs {
namespace {

void infer_allgather(InferContext& ctx, meta::CollectiveSlots slots) {
  const TensorMeta x = ctx.input_meta(slots.in);
  ctx.set_output(slots.out, meta::c_allgather(ctx, x, ctx.int_attr("nranks")), x.dtype);
}

void infer_same_as_input(InferContext& ctx) { ctx.pass_through("X", "Out"); }

std::vector<AttrDef> allreduce_attrs() {
  return {attr("ring_id", Attribute(int32_t{0})), attr("use_calc_stream", Attribute(false)),
          attr("use_model_parallel", Attribute(false))};
}

}  // namespace

void add_collective_op_defs(OpRegistry& r) {
  add_def(r, {"c_gen_nccl_id",
              {},
              {one("Out")},
              {required("endpoint", AttrType::STRING), attr("other_endpoints", strings({})),
               attr("rank", Attribute(int32_t{0})), attr("ring_id", Attribute(int32_t{0}))}});
  add_def(r, {"c_comm_init",
              {one("X")},
              {},
              {required("nranks", AttrType::INT), required("rank", AttrType::INT),
               attr("device_id", Attribute(int32_t{-1})), attr("ring_id", Attribute(int32_t{0})),
               attr("endpoints", Attribute(""))}});
  add_def(r, {"c_comm_init_multitrainer",
              {one("X")},
              {},
              {required("ntrainers", AttrType::INT), required("trainer_id", AttrType::INT),
               attr("devices", ints({})), attr("ring_id", Attribute(int32_t{0}))}});
  // c_comm_init_all; Paddle 3 calls it comm_init_all.
  for (const char* type : {"c_comm_init_all", "comm_init_all"})
    add_def(r, {type, {}, {}, {attr("devices", ints({})), attr("ring_id", Attribute(int32_t{0}))}});
  // c_broadcast; Paddle 3's broadcast has slots x and out and no use_calc_stream.
  add_def(r,
          {"c_broadcast",
           {one("X")},
           {one("Out")},
           {attr("ring_id", Attribute(int32_t{0})), attr("root", Attribute(int32_t{0})),
            attr("use_calc_stream", Attribute(false))}},
          infer_same_as_input);
  add_def(r,
          {"broadcast",
           {one("x")},
           {one("out")},
           {attr("ring_id", Attribute(int32_t{0})), attr("root", Attribute(int32_t{0}))}},
          [](InferContext& ctx) { ctx.pass_through("x", "out"); });
  for (const char* type :
       {"c_allreduce_sum", "c_allreduce_max", "c_allreduce_min", "c_allreduce_prod"})
    add_def(r, {type, {one("X")}, {one("Out")}, allreduce_attrs()}, infer_same_as_input);
  add_def(r,
          {"c_allreduce_xsum",
           {many("X")},
           {many("Out")},
           {attr("ring_id", Attribute(int32_t{-1})), attr("use_calc_stream", Attribute(false))}},
          [](InferContext& ctx) {
            if (ctx.input_count("X") != ctx.output_count("Out"))
              ctx.fail("input X has " + std::to_string(ctx.input_count("X")) +
                       " vars but output Out has " + std::to_string(ctx.output_count("Out")));
            ctx.pass_through("X", "Out");
          });
  add_def(r,
          {"c_allgather",
           {one("X")},
           {one("Out")},
           {attr("ring_id", Attribute(int32_t{0})), attr("use_calc_stream", Attribute(false)),
            required("nranks", AttrType::INT)}},
          [](InferContext& ctx) { infer_allgather(ctx, meta::kLegacySlots); });
  add_def(r,
          {"all_gather",
           {one("x")},
           {one("out")},
           {attr("ring_id", Attribute(int32_t{0})), required("nranks", AttrType::INT)}},
          [](InferContext& ctx) { infer_allgather(ctx, meta::kPaddle3Slots); });
  // The sync ops only order streams; Out names the same vars as X.
  add_def(r, {"c_sync_calc_stream", {many("X")}, {many("Out")}, {}}, infer_same_as_input);
  add_def(r,
          {"c_sync_comm_stream",
           {many("X")},
           {many("Out")},
           {attr("ring_id", Attribute(int32_t{0}))}},
          infer_same_as_input);
}

CTP_REGISTER_OP_DEFS(add_collective_op_defs);

}  // namespace ctp::defs
