// Paddle's persistence ops: save / load (one var per file) and save_combine /
// load_combine (several vars, one file), as Paddle's save_persistables,
// save_inference_model and load_* write them into programs. Their files are
// Paddle's tensor format (ops/common/paddle_tensor_file.h). No shape rules:
// what a load gives is what its file holds.
#include "ops/schema/defs_common.h"

namespace ctp::defs {
namespace {

std::vector<AttrDef> save_attrs() {
  return {attr("overwrite", Attribute(true)), attr("save_as_fp16", Attribute(false)),
          attr("file_path", Attribute(std::string())),
          attr("save_to_memory", Attribute(false))};
}

void add_io_op_defs(OpRegistry& r) {
  add_def(r, {"save", {one("X")}, {optional_one("Y")}, save_attrs()}, {}, GradMaker::none());
  add_def(r, {"save_combine", {many("X")}, {optional_one("Y")}, save_attrs()}, {},
          GradMaker::none());
  add_def(r,
          {"load",
           {},
           {one("Out")},
           {attr("load_as_fp16", Attribute(false)), attr("file_path", Attribute(std::string())),
            attr("seek", Attribute(int64_t{-1})), attr("shape", longs({}))}},
          {}, GradMaker::none());
  add_def(r,
          {"load_combine",
           {},
           {many("Out")},
           {attr("load_as_fp16", Attribute(false)), attr("file_path", Attribute(std::string())),
            attr("model_from_memory", Attribute(false))}},
          {}, GradMaker::none());
}

}  // namespace

CTP_REGISTER_OP_DEFS(add_io_op_defs);

}  // namespace ctp::defs
