// libFuzzer target, built once per transpile mode (CTP_FUZZ_MODE): options
// from the input's first bytes, then a startup and a main program
// (fuzz_support.h gives the layout), both passes run. A program that
// verified cleanly must still verify cleanly after a successful rewrite,
// and the rewrite must serialize and load back.
#include "fuzz/fuzz_support.h"
#include "program_ir/program_io.h"
#include "program_ir/verify.h"
#include "transpilers/transpile.h"

#ifndef CTP_FUZZ_MODE
#error "CTP_FUZZ_MODE must name a ctp::TranspileMode enumerator"
#endif

namespace {

ctp::Program load_or_empty(std::string_view bytes, const char* source) {
  if (bytes.empty()) return ctp::Program::with_global_block();
  return ctp::parse_program(bytes, source);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace ctp;
  fuzz::TranspileInput in;
  if (!fuzz::cut_transpile_input(fuzz::as_view(data, size), in)) return 0;
  constexpr TranspileMode kMode = TranspileMode::CTP_FUZZ_MODE;
  if constexpr (kMode != TranspileMode::kGradAllReduce) in.options.grad_allreduce.bucket_bytes = 0;
  Program startup, main;
  try {
    startup = load_or_empty(in.startup, "fuzz-startup");
    main = load_or_empty(in.main, "fuzz-main");
  } catch (const Error&) {
    return 0;
  }
  const bool was_clean =
      !has_errors(verify_program(startup)) && !has_errors(verify_program(main));
  try {
    transpile(kMode, in.options, startup, main);
  } catch (const Error&) {
    return 0;
  }
  for (const Program* p : {&startup, &main}) {
    if (was_clean) {
      for (const Diagnostic& d : verify_program(*p))
        if (d.severity == Diagnostic::Error) {
          std::fprintf(stderr, "after transpile: %s\n", d.to_string().c_str());
          fuzz::broken_property("a clean program does not verify after transpiling");
        }
    }
    fuzz::check_round_trips(*p);
  }
  return 0;
}
