// Transpilers by name, as MLIR's pass registry: each transpiler's file
// describes it once (name, the reference's class, the settings it takes beyond
// CollectiveOptions, how to build it), and `ctp transpile` (its --mode list,
// flags, help and checks), the golden tests' options.json reader and the
// library's by-name entry all read that description. Adding a transpiler is
// its own files plus one line in builtin_transpilers() (transpiler_registry.cc).
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "transpilers/collective_options.h"
#include "transpilers/transpiler.h"

namespace ctp {

// How a setting's text is read when it comes from Paddle's environment
// variable (the CLI reads those; the library never does).
enum class SettingKind {
  kInt,   // Python's int(): surrounding white space and a sign allowed
  kText,  // as given
  kList,  // comma-separated, as FLAGS_selected_gpus (fields between commas)
};

// One setting a transpiler takes beyond CollectiveOptions (MLIR's pass
// options). `name` is the CLI flag (--<name>) and, with '-' read as '_', the
// key in a golden case's options.json.
struct TranspilerSetting {
  std::string name;                  // e.g. "trans-mode"
  std::string help;
  SettingKind kind = SettingKind::kText;
  std::vector<std::string> choices;  // the values a flag may take; empty: any
  std::string env;                   // Paddle's variable for it, or empty
};

// Setting values by name, as text: what the CLI or options.json gave.
using TranspilerSettings = std::map<std::string, std::string, std::less<>>;

struct TranspilerRegistration {
  std::string name;             // "grad_allreduce"
  std::string reference_class;  // "GradAllReduce"
  std::string summary;          // one line for help and docs
  RingRules rings;
  std::vector<TranspilerSetting> settings;
  // Builds the transpiler from the job and the values of its settings (only
  // those declared above are passed). Throws ctp::Error, naming the setting,
  // when a value cannot be read.
  std::function<std::unique_ptr<Transpiler>(const CollectiveOptions&, const TranspilerSettings&)>
      create;
};

class TranspilerRegistry {
 public:
  // Throws ctp::Error on a second transpiler of the same name, or a setting
  // that another transpiler declares with another kind or variable (one flag
  // means one thing).
  void add(TranspilerRegistration registration);

  const TranspilerRegistration* find(std::string_view name) const;
  // Throws ctp::Error "unknown transpiler 'x' (expected a, b or c)".
  const TranspilerRegistration& at(std::string_view name) const;
  const std::vector<TranspilerRegistration>& all() const { return registrations_; }
  // "a, b or c", for messages and help.
  std::string names_text() const;

  // Every setting once, in registration order, with the transpilers that take it.
  struct SharedSetting {
    TranspilerSetting setting;
    std::vector<std::string> transpilers;
  };
  std::vector<SharedSetting> settings() const;

  // The transpiler `name` for this job and settings. Throws ctp::Error for an
  // unknown name, a setting the transpiler does not take, or a bad value.
  std::unique_ptr<Transpiler> create(std::string_view name, const CollectiveOptions& collective,
                                     const TranspilerSettings& settings = {}) const;

 private:
  std::vector<TranspilerRegistration> registrations_;
};

// The four transpilers of the reference, built once; never changes afterwards.
const TranspilerRegistry& builtin_transpilers();

// Helpers for a registration's `create`: the value of `name` read as an int,
// a positive number, or the number of fields of a comma-separated list.
// Throw ctp::Error naming the setting.
int setting_int(const TranspilerSettings& settings, std::string_view name, int fallback);
double setting_positive_number(const TranspilerSettings& settings, std::string_view name);
int setting_list_size(const TranspilerSettings& settings, std::string_view name, int fallback);

// "selected-gpus" [FLAGS_selected_gpus]: the GPUs of each process, of which
// the reference uses only the count (SingleProcessMultiThread, MultiThread).
TranspilerSetting selected_gpus_setting();

}  // namespace ctp
