// One call for the whole rewrite: the mode's startup pass on the startup
// program, then its main pass on the main program, sharing one name generator
// (Paddle's unique_name counters) as the reference's single transpile() does.
//
//   TranspileOptions o;
//   o.collective.endpoints = {"10.0.0.1:6170", "10.0.0.2:6170"};
//   o.collective.rank = 1;
//   o.collective.current_endpoint = o.collective.endpoints[1];
//   transpile(TranspileMode::kGradAllReduce, o, startup, main);
#pragma once
#include <memory>

#include "transpilers/name_generator.h"
#include "transpilers/options.h"
#include "transpilers/pass.h"

namespace ctp {

std::unique_ptr<ProgramPass> make_startup_pass(TranspileMode mode,
                                               const TranspileOptions& options,
                                               NameGenerator& names);
std::unique_ptr<ProgramPass> make_main_pass(TranspileMode mode, const TranspileOptions& options,
                                            NameGenerator& names);

// Rewrites both programs in place. Throws ctp::Error (and leaves the programs
// untouched) when the options are invalid; an error found while rewriting
// (e.g. an undeclared var) may leave them partly rewritten.
void transpile(TranspileMode mode, const TranspileOptions& options, Program& startup,
               Program& main);

}  // namespace ctp
