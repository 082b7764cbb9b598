// Subcommands of the `ctp` tool. Each tools/cmd_*.cc file registers its own
// subcommand at load time, so adding one touches no other file.
#pragma once
#include <CLI/CLI.hpp>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace ctp::cli {

// Adds a subcommand (with its options and callback) to the app.
using CommandSetup = std::function<void(CLI::App& app)>;

std::vector<CommandSetup>& command_setups();

struct CommandRegistrar {
  explicit CommandRegistrar(CommandSetup setup) { command_setups().push_back(std::move(setup)); }
};

// Exit codes: 0 success, 1 an error in the input or the run, 2 bad usage.
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;

// Flushes `stream` (std::cout, std::cerr) and throws ctp::Error when
// anything written to it was lost (a full disk, a closed pipe): a command
// whose output is gone must not exit 0.
void check_written(std::ostream& stream, const char* name);

// Thrown by a subcommand for a usage error found after parsing.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace ctp::cli
