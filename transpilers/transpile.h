// One call for the whole rewrite with the built-in transpilers, a thin
// convenience over the transpiler classes (transpiler.h) and the registry:
//
//   TranspileOptions o;
//   o.collective.endpoints = {"10.0.0.1:6170", "10.0.0.2:6170"};
//   o.collective.rank = 1;
//   o.collective.current_endpoint = o.collective.endpoints[1];
//   transpile(TranspileMode::kGradAllReduce, o, startup, main);
//
// By name, with settings as the CLI spells them:
//   transpile("multi_thread", o.collective, {{"trans-mode", "all_gather"}}, startup, main);
#pragma once
#include <memory>
#include <string_view>

#include "transpilers/options.h"
#include "transpilers/transpiler.h"
#include "transpilers/transpiler_registry.h"

namespace ctp {

// The transpiler of `mode` with its part of `options`. Throws ctp::Error when
// options.grad_allreduce asks for buckets in another mode.
std::unique_ptr<Transpiler> make_transpiler(TranspileMode mode, const TranspileOptions& options);

// Rewrites both programs in place (Transpiler::run) and says which vars it
// took as parameters. Throws ctp::Error (and leaves the programs untouched)
// when the options are invalid; an error found while rewriting (e.g. an
// undeclared var) may leave them partly rewritten.
TranspileReport transpile(TranspileMode mode, const TranspileOptions& options, Program& startup,
                          Program& main);
TranspileReport transpile(std::string_view name, const CollectiveOptions& collective,
                          const TranspilerSettings& settings, Program& startup, Program& main);

}  // namespace ctp
