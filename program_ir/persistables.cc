#include "program_ir/persistables.h"

#include <algorithm>
#include <set>

#include "program_ir/builder.h"
#include "program_ir/error.h"

namespace ctp {

std::vector<std::string> persistable_tensor_names(const Program& program) {
  std::vector<std::string> names;
  for (const Var& v : program.global_block().vars()) {
    if (!v.persistable) continue;
    if (v.type == VarKind::FEED_MINIBATCH || v.type == VarKind::FETCH_LIST ||
        v.type == VarKind::READER)
      continue;
    if (v.type != VarKind::LOD_TENSOR)
      throw Error("persistable var '" + v.name + "' is a " + std::string(to_string(v.type)) +
                  ": ctp loads persistable LOD_TENSOR vars only");
    names.push_back(v.name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

Program load_persistables_program(const Program& main, const LoadPersistablesOptions& options) {
  const std::vector<std::string> names = persistable_tensor_names(main);
  ProgramBuilder pb;
  for (const std::string& name : names) pb.block().add_var(*main.global_block().find_var(name));
  if (options.combined_file) {
    if (!names.empty())
      pb.op("load_combine").out("Out", names).attr("file_path", Attribute(*options.combined_file));
  } else {
    for (const std::string& name : names)
      pb.op("load").out("Out", name).attr("file_path", Attribute(options.dir + "/" + name));
  }
  return pb.build();
}

Program random_persistables_program(const Program& main,
                                    const RandomPersistablesOptions& options) {
  std::set<std::string> read, variances;
  for (const Op& op : main.global_block().ops()) {
    for (const Slot& slot : op.inputs())
      for (const std::string& name : slot.args) read.insert(name);
    if (const auto* names = op.input("Variance"); names && op.type == "batch_norm")
      variances.insert(names->begin(), names->end());
  }
  ProgramBuilder pb;
  int32_t seed = options.first_seed;
  for (const Var& v : main.global_block().vars()) {
    if (!v.persistable || v.type != VarKind::LOD_TENSOR || !read.count(v.name)) continue;
    pb.persistable(v.name, v.shape, v.dtype);
    const auto shape = Attribute(v.shape);
    const auto dtype = Attribute(static_cast<int32_t>(v.dtype));
    if (variances.count(v.name)) {
      pb.op("fill_constant").out("Out", v.name).attr("shape", shape).attr("dtype", dtype)
          .attr("value", Attribute(1.0f));
    } else {
      pb.op("uniform_random").out("Out", v.name).attr("shape", shape).attr("dtype", dtype)
          .attr("min", Attribute(options.min)).attr("max", Attribute(options.max))
          .attr("seed", Attribute(seed++));
    }
  }
  return pb.build();
}

}  // namespace ctp
