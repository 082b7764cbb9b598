// Real Paddle programs (../shared/realworld/programs; skipped, visibly,
// when absent) against ctp's op schemas: no op that has a schema fails
// `verify` on its slots or attribute types. A schema that disagrees with
// what Paddle writes (softmax's is_test, an INT in Paddle 1.x programs)
// turns a real program's `ctp verify` into an error and fails here.
#include <gtest/gtest.h>

#include "ops/schema/op_def.h"
#include "program_ir/program_io.h"
#include "program_ir/verify.h"
#include "tests/realworld_files.h"

namespace ctp {
namespace {

TEST(RealWorldVerify, OpsWithASchemaMatchWhatPaddleWrote) {
  const test::RealWorld world = test::find_realworld();
  if (world.files.empty()) GTEST_SKIP() << world.skip_reason;
  std::size_t checked = 0;
  for (const test::RealWorldFile& file : world.files) {
    // The mutated/ files are broken on purpose; the undecodable ones are
    // RealWorldPrograms' concern.
    if (!file.decodable || file.path.find("/programs/") == std::string::npos) continue;
    Program program;
    try {
      program = load_program_file(file.path);
    } catch (const Error&) {
      continue;
    }
    ++checked;
    for (const Diagnostic& d : verify(program).diagnostics)
      if (d.severity == Diagnostic::Error && !d.place.op_type.empty() &&
          OpRegistry::global().find(d.place.op_type))
        ADD_FAILURE() << file.path << ": " << d.to_string();
  }
  EXPECT_GT(checked, 10u) << "the programs folder holds more than that";
}

}  // namespace
}  // namespace ctp
