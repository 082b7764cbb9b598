// The layer graph (tests/layering_rules.txt, docs/architecture.md): every
// `#include "..."` in a layer's folders names a file of its own layer or of
// one it may use, or is one of the listed temporary exceptions. The checker
// also runs on small made-up trees, to show that it reports what it should.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/executor_process_util.h"

namespace ctp {
namespace {

namespace fs = std::filesystem;

// The folders whose files make up the library's layers.
const char* const kComponentRoots[] = {"program_ir", "ops", "transpilers", "executor"};

struct Exception {
  std::string file, included, issue;
  int line = 0;  // in the rules file
};

struct LayerRules {
  std::map<std::string, std::string> layer_of_folder;  // "ops/cpu" -> "kernels"
  std::map<std::string, std::set<std::string>> uses;   // direct edges
  std::set<std::string> top_folders;
  std::vector<Exception> exceptions;
  std::vector<std::string> errors;  // problems in the rules file itself

  bool is_layer(const std::string& name) const { return uses.count(name) != 0; }
  // The layers `layer` may include: itself, and what it uses, transitively.
  std::set<std::string> allowed(const std::string& layer) const;
};

std::set<std::string> LayerRules::allowed(const std::string& layer) const {
  std::set<std::string> seen{layer};
  std::vector<std::string> todo{layer};
  while (!todo.empty()) {
    const std::string next = todo.back();
    todo.pop_back();
    for (const std::string& used : uses.at(next))
      if (seen.insert(used).second) todo.push_back(used);
  }
  return seen;
}

std::vector<std::string> words_of(const std::string& line) {
  std::istringstream in(line.substr(0, line.find('#')));
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

LayerRules parse_rules(const std::string& text, const std::string& rules_name) {
  LayerRules rules;
  std::istringstream in(text);
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    const std::vector<std::string> w = words_of(line);
    if (w.empty()) continue;
    const std::string where = rules_name + ":" + std::to_string(number) + ": ";
    if (w[0] == "layer" && w.size() >= 3) {
      if (rules.is_layer(w[1])) rules.errors.push_back(where + "layer '" + w[1] + "' twice");
      rules.uses[w[1]];
      for (std::size_t i = 2; i < w.size(); ++i)
        if (!rules.layer_of_folder.emplace(w[i], w[1]).second)
          rules.errors.push_back(where + "folder '" + w[i] + "' is in two layers");
    } else if (w[0] == "uses" && w.size() >= 3) {
      for (std::size_t i = 1; i < w.size(); ++i)
        if (!rules.is_layer(w[i]))
          rules.errors.push_back(where + "'" + w[i] + "' is not a layer declared above");
      if (rules.is_layer(w[1])) rules.uses[w[1]].insert(w.begin() + 2, w.end());
    } else if (w[0] == "top" && w.size() >= 2) {
      rules.top_folders.insert(w.begin() + 1, w.end());
    } else if (w[0] == "exception" && w.size() == 4) {
      rules.exceptions.push_back({w[1], w[2], w[3], number});
    } else {
      rules.errors.push_back(where + "cannot read '" + line + "'");
    }
  }
  // Layers are declared bottom to top, so a layer that uses itself through
  // others (a cycle) is a mistake in the table.
  for (const auto& [layer, used] : rules.uses)
    for (const std::string& u : used)
      if (u == layer || rules.allowed(u).count(layer))
        rules.errors.push_back(rules_name + ": layers '" + layer + "' and '" + u +
                               "' use each other");
  return rules;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool is_source(const fs::path& path) {
  const std::string ext = path.extension().string();
  return ext == ".h" || ext == ".cc" || ext == ".cu" || ext == ".cuh";
}

// The layer holding `file` (relative to the root), "top" for a top folder,
// "" when no rule names its folder.
std::string layer_of(const LayerRules& rules, const std::string& file) {
  const std::string folder = fs::path(file).parent_path().generic_string();
  if (auto it = rules.layer_of_folder.find(folder); it != rules.layer_of_folder.end())
    return it->second;
  const std::string first = folder.substr(0, folder.find('/'));
  return rules.top_folders.count(first) ? "top" : "";
}

std::string join(const std::set<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

struct Checker {
  const fs::path& root;
  const LayerRules& rules;
  std::string rules_name;
  std::vector<std::string> problems;
  std::set<std::pair<std::string, std::string>> used_exceptions;

  void check_include(const std::string& file, const std::string& layer, int line,
                     const std::string& included);
  void check_file(const std::string& file);
  void report_stale_exceptions();
};

void Checker::check_include(const std::string& file, const std::string& layer, int line,
                            const std::string& included) {
  const std::string where = file + ":" + std::to_string(line) + ": #include \"" + included + "\": ";
  if (!fs::is_regular_file(root / included)) {
    problems.push_back(where + "not a file relative to the project root (every project "
                       "include is written from the root, so the layers can be checked)");
    return;
  }
  const std::string target = layer_of(rules, included);
  if (target.empty()) return;  // reported once, as a file outside every layer
  const std::set<std::string> allowed = rules.allowed(layer);
  if (allowed.count(target)) return;
  for (const Exception& e : rules.exceptions)
    if (e.file == file && e.included == included) {
      used_exceptions.insert({file, included});
      return;
    }
  problems.push_back(where + "layer '" + layer + "' may not include layer '" + target +
                     "' (it may include: " + join(allowed) + "; " + rules_name + ")");
}

void Checker::check_file(const std::string& file) {
  const std::string layer = layer_of(rules, file);
  if (layer.empty() || layer == "top") {
    problems.push_back(file + ": its folder belongs to no layer (add it to " + rules_name + ")");
    return;
  }
  static const std::regex kInclude(R"(^\s*#\s*include\s*"([^"]+)\")");
  std::istringstream in(read_file(root / file));
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    std::smatch m;
    if (std::regex_search(line, m, kInclude)) check_include(file, layer, number, m[1]);
  }
}

void Checker::report_stale_exceptions() {
  for (const Exception& e : rules.exceptions)
    if (!used_exceptions.count({e.file, e.included}))
      problems.push_back(rules_name + ":" + std::to_string(e.line) + ": exception " + e.file +
                         " -> " + e.included + " (" + e.issue +
                         ") is not needed any more: delete the line");
}

// Every problem found under `root`, one line each, naming file, line and rule.
std::vector<std::string> check_layering(const fs::path& root, const LayerRules& rules,
                                        const std::string& rules_name) {
  Checker checker{root, rules, rules_name, rules.errors, {}};
  std::vector<std::string> files;
  for (const char* component : kComponentRoots) {
    if (!fs::is_directory(root / component)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(root / component))
      if (entry.is_regular_file() && is_source(entry.path()))
        files.push_back(fs::relative(entry.path(), root).generic_string());
  }
  std::sort(files.begin(), files.end());
  for (const std::string& file : files) checker.check_file(file);
  checker.report_stale_exceptions();
  return checker.problems;
}

std::string lines_of(const std::vector<std::string>& problems) {
  std::string out;
  for (const std::string& p : problems) out += "\n  " + p;
  return out;
}

TEST(Layering, EveryIncludeOfTheProjectFollowsTheLayerGraph) {
  const fs::path root = CTP_SOURCE_DIR;
  const LayerRules rules =
      parse_rules(read_file(root / "tests/layering_rules.txt"), "tests/layering_rules.txt");
  ASSERT_TRUE(rules.is_layer("ir")) << "tests/layering_rules.txt was not read";
  const std::vector<std::string> problems =
      check_layering(root, rules, "tests/layering_rules.txt");
  EXPECT_TRUE(problems.empty()) << problems.size() << " layering problem(s):"
                                << lines_of(problems);
}

// A made-up tree with two layers, written to a scratch folder.
class LayeringChecker : public ::testing::Test {
 protected:
  void SetUp() override {
    write("program_ir/a.h", "#pragma once\n");
    write("executor/runtime/b.h", "#pragma once\n#include \"program_ir/a.h\"\n");
    write("tools/c.h", "#pragma once\n");
  }

  void write(const std::string& file, const std::string& text) {
    fs::create_directories((root_.path() / file).parent_path());
    std::ofstream(root_.path() / file) << text;
  }
  std::vector<std::string> check(const std::string& extra_rules = "") {
    const std::string text = "layer ir program_ir\nlayer runtime executor/runtime\n"
                             "top tools\nuses runtime ir\n" + extra_rules;
    return check_layering(root_.path(), parse_rules(text, "rules.txt"), "rules.txt");
  }

  test::TempDir root_{std::string("layering_") +
                      ::testing::UnitTest::GetInstance()->current_test_info()->name()};
};

TEST_F(LayeringChecker, IncludesDownTheGraphPass) { EXPECT_TRUE(check().empty()); }

TEST_F(LayeringChecker, AnUpwardIncludeNamesFileLineAndRule) {
  write("program_ir/a.h", "#pragma once\n// uses the runtime\n#include \"executor/runtime/b.h\"\n");
  const std::vector<std::string> problems = check();
  ASSERT_EQ(problems.size(), 1u) << lines_of(problems);
  EXPECT_EQ(problems[0],
            "program_ir/a.h:3: #include \"executor/runtime/b.h\": layer 'ir' may not include "
            "layer 'runtime' (it may include: ir; rules.txt)");
}

TEST_F(LayeringChecker, NoLayerMayIncludeATopFolder) {
  write("executor/runtime/b.h", "#pragma once\n#include \"tools/c.h\"\n");
  const std::vector<std::string> problems = check();
  ASSERT_EQ(problems.size(), 1u) << lines_of(problems);
  EXPECT_NE(problems[0].find("layer 'runtime' may not include layer 'top'"), std::string::npos)
      << problems[0];
}

TEST_F(LayeringChecker, AListedExceptionPassesAndAStaleOneFails) {
  write("program_ir/a.h", "#pragma once\n#include \"executor/runtime/b.h\"\n");
  EXPECT_TRUE(check("exception program_ir/a.h executor/runtime/b.h 14.0\n").empty());
  write("program_ir/a.h", "#pragma once\n");
  const std::vector<std::string> problems =
      check("exception program_ir/a.h executor/runtime/b.h 14.0\n");
  ASSERT_EQ(problems.size(), 1u) << lines_of(problems);
  EXPECT_EQ(problems[0], "rules.txt:5: exception program_ir/a.h -> executor/runtime/b.h (14.0) "
                         "is not needed any more: delete the line");
}

TEST_F(LayeringChecker, AFolderOutsideEveryLayerAndAnUnknownIncludeAreReported) {
  write("executor/misc/d.cc", "int d;\n");
  write("executor/runtime/b.h", "#pragma once\n#include \"b2.h\"\n");
  const std::vector<std::string> problems = check();
  ASSERT_EQ(problems.size(), 2u) << lines_of(problems);
  EXPECT_EQ(problems[0], "executor/misc/d.cc: its folder belongs to no layer (add it to rules.txt)");
  EXPECT_NE(problems[1].find("executor/runtime/b.h:2: #include \"b2.h\": not a file relative"),
            std::string::npos)
      << problems[1];
}

TEST_F(LayeringChecker, ACycleInTheTableIsReported) {
  const std::vector<std::string> problems = check("uses ir runtime\n");
  ASSERT_FALSE(problems.empty());
  EXPECT_NE(problems[0].find("use each other"), std::string::npos) << problems[0];
}

}  // namespace
}  // namespace ctp
