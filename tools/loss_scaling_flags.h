// The loss-scaling flags that `ctp minimize` and ctp_sample_trainer share
// (--loss-scaling, --init-loss-scaling, --incr-every-n-steps,
// --decr-every-n-nan-or-inf, --incr-ratio, --decr-ratio), with Paddle's
// static AMP defaults (transpilers/loss_scaling.h). Header-only: both
// programs compile it.
#pragma once
#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "transpilers/loss_scaling.h"

namespace ctp::cli {

struct LossScalingFlags {
  std::string mode;  // "" = the dtype's default: dynamic for fp16, none otherwise
  LossScalingOptions numbers;
  bool numbers_given = false;
};

inline void add_loss_scaling_flags(CLI::App& app, LossScalingFlags& f) {
  app.add_option("--loss-scaling", f.mode,
                 "with --amp: dynamic (fp16's default: the scale moves with update_loss_scaling "
                 "and steps whose gradients overflow are skipped), static (a fixed "
                 "--init-loss-scaling) or none (bf16's default)");
  const auto number = [&app, &f](const char* name, auto field, const char* help) {
    using T = std::remove_reference_t<decltype(f.numbers.*field)>;
    app.add_option_function<T>(
        name,
        [&f, field](const T& v) {
          f.numbers.*field = v;
          f.numbers_given = true;
        },
        help);
  };
  number("--init-loss-scaling", &LossScalingOptions::init_loss_scaling,
         "with loss scaling: the starting scale (32768)");
  number("--incr-every-n-steps", &LossScalingOptions::incr_every_n_steps,
         "dynamic: grow the scale after this many finite steps in a row (1000)");
  number("--decr-every-n-nan-or-inf", &LossScalingOptions::decr_every_n_nan_or_inf,
         "dynamic: shrink the scale after this many steps with Inf/NaN gradients (2)");
  number("--incr-ratio", &LossScalingOptions::incr_ratio, "dynamic: the growth factor (2.0)");
  number("--decr-ratio", &LossScalingOptions::decr_ratio, "dynamic: the shrink factor (0.8)");
}

// The loss scaling the flags ask for with mixed precision `amp` ("" or
// "none": no --amp; "fp16", "bf16"); nullopt for none. Throws
// std::invalid_argument (a usage error) for a mode that is not one of the
// three, or for flags given where there is no loss scaling.
inline std::optional<LossScalingOptions> resolve_loss_scaling(const LossScalingFlags& f,
                                                              const std::string& amp) {
  const bool has_amp = !amp.empty() && amp != "none";
  if (!has_amp) {
    if (!f.mode.empty() || f.numbers_given)
      throw std::invalid_argument("--loss-scaling and its options need --amp");
    return std::nullopt;
  }
  const std::string mode = f.mode.empty() ? (amp == "fp16" ? "dynamic" : "none") : f.mode;
  if (mode != "dynamic" && mode != "static" && mode != "none")
    throw std::invalid_argument("--loss-scaling must be dynamic, static or none, not '" + mode +
                                "'");
  if (mode == "none") {
    if (f.numbers_given)
      throw std::invalid_argument(
          "the loss-scaling options need loss scaling (--loss-scaling dynamic or static; "
          "fp16 scales dynamically by default)");
    return std::nullopt;
  }
  LossScalingOptions o = f.numbers;
  o.use_dynamic_loss_scaling = mode == "dynamic";
  return o;
}

}  // namespace ctp::cli
