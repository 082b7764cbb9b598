#include "program_ir/persistables.h"

#include <algorithm>

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

}  // namespace ctp
