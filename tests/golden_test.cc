// Golden transpiler cases (tests/golden/<case>/): each case's startup.json and
// main.json are transpiled with its options.json, and block 0's op lines must
// equal startup.expected.txt and main.expected.txt; a case with
// error.expected.txt must fail with a ctp::Error containing its second line.
// With CTP_UPDATE_GOLDEN=1 in the environment the expected files are rewritten
// instead (scripts/update_golden.sh). scripts/golden_reference_check.py checks
// the same expected files against the reference collective.py.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "program_ir/atomic_file.h"
#include "program_ir/error.h"
#include "program_ir/program_io.h"
#include "program_ir/text_io.h"
#include "transpilers/transpiler_registry.h"

namespace ctp {
namespace {

namespace fs = std::filesystem;

fs::path golden_dir() { return fs::path(CTP_SOURCE_DIR) / "tests" / "golden"; }

std::vector<std::string> case_names() {
  std::vector<std::string> names;
  if (!fs::exists(golden_dir())) return names;
  for (const auto& entry : fs::directory_iterator(golden_dir()))
    if (entry.is_directory() && fs::exists(entry.path() / "options.json"))
      names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

struct GoldenOptions {
  std::string mode;
  CollectiveOptions collective;
  TranspilerSettings settings;
};

// options.json: mode, rank, endpoints, and optionally nrings, current_endpoint
// (default endpoints[rank]), wait_port and params (default marked); every other key is a setting of the
// mode's transpiler, spelled as its flag with '_' for '-' (trans_mode,
// fuse_allreduce, loss_scale, selected_gpus as FLAGS_selected_gpus spells it).
// The registry says which keys a mode takes, as it does for `ctp transpile`.
GoldenOptions parse_options(const fs::path& file) {
  const nlohmann::json j = nlohmann::json::parse(read_file(file.string()));
  GoldenOptions g;
  g.mode = j.at("mode").get<std::string>();
  const TranspilerRegistration& registration = builtin_transpilers().at(g.mode);
  CollectiveOptions& c = g.collective;
  c.rank = j.at("rank").get<int>();
  c.endpoints = j.at("endpoints").get<std::vector<std::string>>();
  if (j.contains("nrings")) c.nrings = j["nrings"].get<int>();
  if (j.contains("current_endpoint"))
    c.current_endpoint = j["current_endpoint"].get<std::string>();
  else if (c.rank >= 0 && c.rank < static_cast<int>(c.endpoints.size()))
    c.current_endpoint = c.endpoints[c.rank];
  c.wait_port = j.value("wait_port", false);
  // The cases are the reference's semantics: marked parameters unless a case
  // says otherwise (the library's default is auto).
  c.params = parse_param_source(j.value("params", std::string("marked")));
  static const std::set<std::string> kCollectiveKeys = {
      "mode", "rank", "endpoints", "nrings", "current_endpoint", "wait_port", "params"};
  for (const auto& [key, value] : j.items()) {
    if (kCollectiveKeys.count(key)) continue;
    std::string name = key;
    std::replace(name.begin(), name.end(), '_', '-');
    const bool declared =
        std::any_of(registration.settings.begin(), registration.settings.end(),
                    [&](const TranspilerSetting& s) { return s.name == name; });
    if (!declared) throw Error(file.string() + ": " + g.mode + " takes no setting '" + key + "'");
    g.settings[name] = value.is_string() ? value.get<std::string>() : value.dump();
  }
  return g;
}

void run_case(const GoldenOptions& g, Program& startup, Program& main) {
  builtin_transpilers().create(g.mode, g.collective, g.settings)->run(startup, main);
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

bool updating() {
  const char* v = std::getenv("CTP_UPDATE_GOLDEN");
  return v && std::string(v) == "1";
}

class Golden : public ::testing::TestWithParam<std::string> {};

// One dialect of a case: its error, or both programs' op lines against
// <program><suffix>.expected.txt.
void check_case(const fs::path& dir, const GoldenOptions& g, const std::string& suffix) {
  Program startup = load_program_file((dir / "startup.json").string());
  Program main = load_program_file((dir / "main.json").string());
  const fs::path error_file = dir / "error.expected.txt";
  if (fs::exists(error_file)) {
    const std::vector<std::string> expected = lines_of(read_file(error_file.string()));
    ASSERT_EQ(expected.size(), 2u) << error_file << ": python exception class, ctp message part";
    try {
      run_case(g, startup, main);
      ADD_FAILURE() << "expected a ctp::Error containing '" << expected[1] << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(expected[1]), std::string::npos) << e.what();
    }
    return;
  }
  run_case(g, startup, main);
  for (const auto& [name, program] :
       {std::pair<std::string, const Program*>{"startup", &startup}, {"main", &main}}) {
    const std::string actual = block_ops_to_text(program->global_block());
    const fs::path expected_file = dir / (name + suffix + ".expected.txt");
    if (updating()) {
      write_file_atomically(expected_file.string(), actual);
      continue;
    }
    ASSERT_TRUE(fs::exists(expected_file))
        << expected_file << " is missing; run scripts/update_golden.sh";
    const auto want = lines_of(read_file(expected_file.string()));
    const auto got = lines_of(actual);
    for (std::size_t i = 0; i < std::min(want.size(), got.size()); ++i)
      ASSERT_EQ(got[i], want[i]) << name << suffix << " line " << i + 1;
    ASSERT_EQ(got.size(), want.size()) << name << suffix << ": op count";
  }
}

// Each case in both op dialects: the reference's (*.expected.txt) and Paddle
// 3's (*.paddle3.expected.txt, beside them).
TEST_P(Golden, MatchesExpectedOpSequence) {
  const fs::path dir = golden_dir() / GetParam();
  GoldenOptions g = parse_options(dir / "options.json");
  for (OpDialect dialect : {OpDialect::kLegacy, OpDialect::kPaddle3}) {
    SCOPED_TRACE(std::string(to_string(dialect)));
    g.collective.dialect = dialect;
    check_case(dir, g, dialect == OpDialect::kLegacy ? "" : ".paddle3");
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, Golden, ::testing::ValuesIn(case_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

// The coverage: every mode, nrings 1/2/3, nranks 2/4/8, rank 0 and
// non-zero, one host and several, at least 40 cases.
TEST(GoldenCoverage, CasesSpanModesRingsRanksAndHosts) {
  const auto names = case_names();
  EXPECT_GE(names.size(), 40u);
  std::map<std::string, int> per_mode;
  std::set<int> nrings, nranks;
  bool rank0 = false, rank_nonzero = false, one_host = false, many_hosts = false;
  std::set<std::string> trans_modes;
  for (const std::string& name : names) {
    const GoldenOptions g = parse_options(golden_dir() / name / "options.json");
    const CollectiveOptions& c = g.collective;
    ++per_mode[g.mode];
    if (c.nrings) nrings.insert(*c.nrings);
    nranks.insert(static_cast<int>(c.endpoints.size()));
    (c.rank == 0 ? rank0 : rank_nonzero) = true;
    std::set<std::string> hosts;
    for (const auto& e : c.endpoints) hosts.insert(e.substr(0, e.find(':')));
    (hosts.size() > 1 ? many_hosts : one_host) = true;
    if (g.mode == "multi_thread") {
      auto it = g.settings.find("trans-mode");
      trans_modes.insert(it == g.settings.end() ? "fuse_all_reduce" : it->second);
    }
  }
  EXPECT_EQ(per_mode.size(), 4u);
  for (const auto& [mode, count] : per_mode) EXPECT_GE(count, 5) << mode;
  for (int n : {1, 2, 3}) EXPECT_TRUE(nrings.count(n)) << "nrings " << n;
  for (int n : {2, 4, 8}) EXPECT_TRUE(nranks.count(n)) << "nranks " << n;
  EXPECT_TRUE(rank0 && rank_nonzero && one_host && many_hosts);
  EXPECT_EQ(trans_modes.size(), 3u);
}

}  // namespace
}  // namespace ctp
