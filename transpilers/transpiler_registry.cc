#include "transpilers/transpiler_registry.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "program_ir/error.h"
#include "transpilers/grad_allreduce.h"
#include "transpilers/local_sgd.h"
#include "transpilers/multi_thread.h"
#include "transpilers/single_process_multi_thread.h"

namespace ctp {

const TranspilerRegistry& builtin_transpilers() {
  static const TranspilerRegistry registry = [] {
    TranspilerRegistry r;
    r.add(grad_allreduce_registration());
    r.add(local_sgd_registration());
    r.add(single_process_multi_thread_registration());
    r.add(multi_thread_registration());
    return r;
  }();
  return registry;
}

void TranspilerRegistry::add(TranspilerRegistration registration) {
  if (find(registration.name))
    throw Error("transpiler '" + registration.name + "' is registered twice");
  for (const TranspilerSetting& mine : registration.settings)
    for (const SharedSetting& known : settings())
      if (known.setting.name == mine.name &&
          (known.setting.kind != mine.kind || known.setting.env != mine.env))
        throw Error("transpiler '" + registration.name + "' declares setting '" + mine.name +
                    "' unlike " + known.transpilers.front() + " does (kind or variable)");
  registrations_.push_back(std::move(registration));
}

const TranspilerRegistration* TranspilerRegistry::find(std::string_view name) const {
  for (const TranspilerRegistration& r : registrations_)
    if (r.name == name) return &r;
  return nullptr;
}

std::string TranspilerRegistry::names_text() const {
  std::string text;
  for (std::size_t i = 0; i < registrations_.size(); ++i) {
    if (i) text += i + 1 == registrations_.size() ? " or " : ", ";
    text += registrations_[i].name;
  }
  return text;
}

const TranspilerRegistration& TranspilerRegistry::at(std::string_view name) const {
  if (const TranspilerRegistration* r = find(name)) return *r;
  throw Error("unknown transpiler '" + std::string(name) + "' (expected " + names_text() + ")");
}

std::vector<TranspilerRegistry::SharedSetting> TranspilerRegistry::settings() const {
  std::vector<SharedSetting> shared;
  for (const TranspilerRegistration& r : registrations_) {
    for (const TranspilerSetting& s : r.settings) {
      auto it = std::find_if(shared.begin(), shared.end(),
                             [&](const SharedSetting& k) { return k.setting.name == s.name; });
      if (it == shared.end()) it = shared.insert(shared.end(), SharedSetting{s, {}});
      it->transpilers.push_back(r.name);
    }
  }
  return shared;
}

std::unique_ptr<Transpiler> TranspilerRegistry::create(std::string_view name,
                                                       const CollectiveOptions& collective,
                                                       const TranspilerSettings& settings) const {
  const TranspilerRegistration& r = at(name);
  for (const auto& entry : settings) {
    const std::string& key = entry.first;
    const bool declared = std::any_of(r.settings.begin(), r.settings.end(),
                                      [&](const TranspilerSetting& s) { return s.name == key; });
    if (!declared)
      throw Error("transpiler '" + r.name + "' takes no setting '" + key + "'");
  }
  return r.create(collective, settings);
}

namespace {

[[noreturn]] void bad_value(std::string_view name, const std::string& value,
                            const std::string& want) {
  throw Error("setting --" + std::string(name) + " '" + value + "' is not " + want);
}

}  // namespace

int setting_int(const TranspilerSettings& settings, std::string_view name, int fallback) {
  auto it = settings.find(name);
  if (it == settings.end()) return fallback;
  try {
    std::size_t used = 0;
    const int value = std::stoi(it->second, &used);
    if (used == it->second.size()) return value;
  } catch (const std::exception&) {
  }
  bad_value(name, it->second, "an integer");
}

double setting_positive_number(const TranspilerSettings& settings, std::string_view name) {
  const std::string& text = settings.at(std::string(name));
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(value > 0) || !std::isfinite(value))
    bad_value(name, text, "a positive number");
  return value;
}

int setting_list_size(const TranspilerSettings& settings, std::string_view name, int fallback) {
  auto it = settings.find(name);
  if (it == settings.end()) return fallback;
  return static_cast<int>(std::count(it->second.begin(), it->second.end(), ',')) + 1;
}

TranspilerSetting selected_gpus_setting() {
  return {.name = "selected-gpus",
          .help = "GPU ids per process, comma-separated; only their count is used",
          .kind = SettingKind::kList,
          .env = "FLAGS_selected_gpus"};
}

}  // namespace ctp
