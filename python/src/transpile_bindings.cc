// ctp.transpile and ctp.transpile_all_ranks: the rewrites of `ctp transpile`
// with the same options and checks (tools/cmd_transpile.cc), from Python.
// Paddle's environment variables are not read: pass their settings.
#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <pybind11/stl.h>

#include "transpilers/collective_choices.h"
#include "transpilers/rank_specialization.h"
#include "transpilers/transpiler_registry.h"
#include "python/src/bindings.h"

namespace py = pybind11;
using namespace py::literals;

namespace ctp::python {
namespace {

// One rank's programs after a transpile, and which vars were taken as
// parameters (by transpilers that broadcast or copy them).
struct Transpiled {
  Program startup;
  Program main;
  std::optional<std::vector<std::string>> parameters;
  std::string parameter_note;  // "2 parameters: the vars marked is_parameter", or empty
};

struct TranspileRequest {
  std::string mode;
  std::optional<int> rank;
  std::vector<std::string> endpoints;
  std::optional<std::string> current_endpoint;
  std::optional<int> nrings;
  std::string params;
  std::string op_dialect;
  bool wait_port = false;
  bool all_ranks = false;
};

// A keyword setting's value as the CLI's flag text: lists comma-separated.
std::string setting_text(py::handle value) {
  if (py::isinstance<py::bool_>(value)) return value.cast<bool>() ? "1" : "0";
  if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
    std::string text;
    for (py::handle item : value) text += (text.empty() ? "" : ",") + setting_text(item);
    return text;
  }
  return py::str(value).cast<std::string>();
}

// The keyword arguments as the settings of transpiler `r`: names with '_'
// for the flag's '-'. A name no transpiler takes is a TypeError, as an
// unknown keyword is; one of another transpiler, or a value outside the
// setting's choices, is a ctp.Error, as `ctp transpile` refuses them.
TranspilerSettings settings_from(const py::kwargs& kwargs, const TranspilerRegistration& r) {
  const TranspilerRegistry& registry = builtin_transpilers();
  TranspilerSettings settings;
  for (auto [key, value] : kwargs) {
    std::string name = key.cast<std::string>();
    std::replace(name.begin(), name.end(), '_', '-');
    const auto shared = registry.settings();
    const auto known = std::find_if(shared.begin(), shared.end(),
                                    [&](const auto& s) { return s.setting.name == name; });
    if (known == shared.end())
      throw py::type_error("transpile() got an unexpected keyword argument '" +
                           key.cast<std::string>() + "'");
    const auto own = std::find_if(r.settings.begin(), r.settings.end(),
                                  [&](const TranspilerSetting& s) { return s.name == name; });
    if (own == r.settings.end()) {
      std::string modes;
      for (const std::string& t : known->transpilers) modes += (modes.empty() ? "" : ", ") + t;
      throw Error("transpile: " + key.cast<std::string>() + " applies to mode " + modes +
                  " only");
    }
    const std::string text = setting_text(value);
    if (!own->choices.empty() &&
        std::find(own->choices.begin(), own->choices.end(), text) == own->choices.end()) {
      std::string choices;
      for (const std::string& c : own->choices) choices += (choices.empty() ? "" : ", ") + c;
      throw Error("transpile " + r.name + ": " + key.cast<std::string>() + " '" + text +
                  "' is not one of " + choices);
    }
    settings[name] = text;
  }
  return settings;
}

// CollectiveOptions as `ctp transpile` builds them from its flags.
CollectiveOptions collective_from(const TranspileRequest& q) {
  if (q.all_ranks && (q.rank || q.current_endpoint))
    throw Error("transpile_all_ranks makes every rank: it takes no rank or current_endpoint");
  if (!q.all_ranks && !q.rank) throw Error("transpile: rank is required");
  const CollectiveChoices choices{.rank = q.all_ranks ? 0 : *q.rank, .endpoints = q.endpoints,
                                  .current_endpoint = q.current_endpoint, .nrings = q.nrings,
                                  .wait_port = q.wait_port, .params = q.params,
                                  .op_dialect = q.op_dialect};
  return collective_options(choices);
}

void note_parameters(Transpiled& out, const Transpiler& t, const TranspileReport& report) {
  if (!report.parameters) return;
  out.parameters = report.parameters->names;
  out.parameter_note = describe(*report.parameters, t.collective().params);
}

// Every rank's programs from one transpile, as `ctp transpile --all-ranks`:
// rank 0's, then each rank's startup from StartupRankSpecializer.
std::vector<Transpiled> transpile_every_rank(const Transpiler& t, Program startup, Program main) {
  const std::size_t original_ops = startup.global_block().op_count();
  Transpiled first;
  note_parameters(first, t, t.run(startup, main));
  const StartupRankSpecializer specializer(std::move(startup), original_ops,
                                           t.collective().endpoints);
  std::vector<Transpiled> ranks;
  for (std::size_t r = 0; r < t.collective().endpoints.size(); ++r)
    ranks.push_back({specializer.for_rank(static_cast<int>(r)), main, first.parameters,
                     first.parameter_note});
  return ranks;
}

std::vector<Transpiled> run_request(const TranspileRequest& q, const py::kwargs& kwargs,
                                    const Program& startup, const Program& main) {
  const TranspilerRegistration& r = builtin_transpilers().at(q.mode);
  const TranspilerSettings settings = settings_from(kwargs, r);
  const CollectiveOptions collective = collective_from(q);
  Program s = startup, m = main;  // copied while the GIL is held
  py::gil_scoped_release unlocked;
  const std::unique_ptr<Transpiler> t = builtin_transpilers().create(q.mode, collective, settings);
  if (q.all_ranks) return transpile_every_rank(*t, std::move(s), std::move(m));
  Transpiled out;
  note_parameters(out, *t, t->run(s, m));
  out.startup = std::move(s);
  out.main = std::move(m);
  return {std::move(out)};
}

constexpr const char* kTranspileDoc = R"(Rewrites copies of startup and main for data-parallel training, as
`ctp transpile` does (docs/transpilers.md), and returns them in a Transpiled
(startup, main = ctp.transpile(...) unpacks it).

mode: grad_allreduce, local_sgd, single_process_multi_thread or multi_thread.
endpoints: every rank's "host:port". rank: this rank. current_endpoint:
default endpoints[rank]. nrings: rings to alternate over (default: the
mode's). params: "auto", "marked" or "optimizer". op_dialect: "legacy" or
"paddle3". Settings of one mode, spelled as the flags with '_' for '-':
bucket_mb (grad_allreduce), trans_mode (multi_thread), fuse_allreduce,
loss_scale (single_process_multi_thread), selected_gpus (a list; the
single-process modes). Paddle's environment variables are not read.
Raises ctp.Error for the options `ctp transpile` refuses and for programs
it cannot rewrite; the inputs are never changed.)";

}  // namespace

void bind_transpile(py::module_& m) {
  py::class_<Transpiled>(m, "Transpiled", "One rank's programs after a transpile")
      .def_readonly("startup", &Transpiled::startup)
      .def_readonly("main", &Transpiled::main)
      .def_readonly("parameters", &Transpiled::parameters,
                    "The vars taken as parameters, or None when the mode uses none")
      .def_readonly("parameter_note", &Transpiled::parameter_note,
                    "How they were found (what `ctp transpile` says on stderr)")
      .def("__iter__", [](const Transpiled& t) {
        return py::iter(py::make_tuple(t.startup, t.main));
      });
  m.def("transpile",
        [](const Program& startup, const Program& main, const std::string& mode,
           std::vector<std::string> endpoints, int rank,
           std::optional<std::string> current_endpoint, std::optional<int> nrings,
           std::string params, std::string op_dialect, bool wait_port, py::kwargs kwargs) {
          TranspileRequest q{mode, rank, std::move(endpoints), std::move(current_endpoint),
                             nrings, std::move(params), std::move(op_dialect), wait_port, false};
          return std::move(run_request(q, kwargs, startup, main).front());
        },
        "startup"_a, "main"_a, py::kw_only(), "mode"_a, "endpoints"_a, "rank"_a,
        "current_endpoint"_a = py::none(), "nrings"_a = py::none(), "params"_a = "auto",
        "op_dialect"_a = "legacy", "wait_port"_a = false, kTranspileDoc);
  m.def("transpile_all_ranks",
        [](const Program& startup, const Program& main, const std::string& mode,
           std::vector<std::string> endpoints, std::optional<int> nrings, std::string params,
           std::string op_dialect, bool wait_port, py::kwargs kwargs) {
          TranspileRequest q{mode, std::nullopt, std::move(endpoints), std::nullopt, nrings,
                             std::move(params), std::move(op_dialect), wait_port, true};
          return run_request(q, kwargs, startup, main);
        },
        "startup"_a, "main"_a, py::kw_only(), "mode"_a, "endpoints"_a, "nrings"_a = py::none(),
        "params"_a = "auto", "op_dialect"_a = "legacy", "wait_port"_a = false,
        "Every rank's Transpiled from one transpile, by rank (as `ctp transpile --all-ranks`); "
        "the options are transpile()'s but rank and current_endpoint");
  m.def("transpilers", [] {
    std::vector<std::string> names;
    for (const TranspilerRegistration& r : builtin_transpilers().all()) names.push_back(r.name);
    return names;
  }, "The modes transpile() takes");
}

}  // namespace ctp::python
