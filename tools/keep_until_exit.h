// What a command has finished with but the process need not free: the
// programs it read. The process exits right after the command, and freeing
// the IR of a large program one allocation at a time is pure cost (a
// 1M-op program holds millions of strings, vectors and list nodes: seconds
// of free() before exit; issue 15). They stay reachable from here, so
// LeakSanitizer does not count them as leaks.
#pragma once
#include <list>
#include <utility>

#include "program_ir/program.h"

namespace ctp::cli {

inline void keep_until_exit(Program program) {
  // Never deleted, by design: see above. A list, so that keeping another
  // program moves none (a vector would copy them all when it grows: Program's
  // move may throw). Commands run one at a time.
  static auto* kept = new std::list<Program>();
  kept->push_back(std::move(program));
}

}  // namespace ctp::cli
