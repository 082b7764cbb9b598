// The `ctp` command line: ctp <subcommand> ...; see `ctp --help`.
#include <cerrno>
#include <cstring>
#include <iostream>

#include "executor/runtime/backend_library.h"
#include "program_ir/atomic_file.h"
#include "program_ir/error.h"
#include "tools/command.h"

namespace ctp::cli {

void check_written(std::ostream& stream, const char* name) {
  errno = 0;
  stream.flush();
  if (!stream)
    throw ctp::Error(std::string("cannot write to ") + name +
                     (errno ? std::string(": ") + std::strerror(errno) : std::string()));
}

std::vector<CommandSetup>& command_setups() {
  static std::vector<CommandSetup> setups;
  return setups;
}

}  // namespace ctp::cli

int main(int argc, char** argv) {
  using namespace ctp::cli;
  CLI::App app{"ctp: the collective transpiler. Rewrites static training programs for "
               "data-parallel training and runs them on Gloo (CPU) or NCCL (GPU)."};
  // The backends as this process finds them: a device kind built as a library
  // of its own (CUDA) is listed without being loaded.
  app.set_version_flag("--version", [] {
    return std::string("ctp ") + CTP_VERSION + " (backends: " + ctp::backend_summary() + ")";
  });
  app.require_subcommand(1);
  // A signal in the middle of writing outputs leaves no staged file behind.
  ctp::remove_staged_outputs_on_signals();
  for (const CommandSetup& setup : command_setups()) setup(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "ctp: usage error: " << e.what() << "\n(run 'ctp --help' for usage)\n";
    return kExitUsage;
  } catch (const UsageError& e) {
    std::cerr << "ctp: usage error: " << e.what() << "\n";
    return kExitUsage;
  } catch (const ctp::Error& e) {
    std::cerr << "ctp: error: " << e.what() << "\n";
    return kExitError;
  } catch (const std::exception& e) {
    std::cerr << "ctp: error: " << e.what() << "\n";
    return kExitError;
  }
  return 0;
}
