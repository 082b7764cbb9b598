// The real Paddle programs beside the project (../shared/realworld, never
// copied into it): their paths, and what ../shared/realworld/SOURCES.md says
// of each (decodable or not; blocks, ops and vars). Tests that use them skip,
// visibly, when the folder is absent.
#pragma once
#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace ctp::test {

struct RealWorldCounts {
  std::size_t blocks = 0, ops = 0, vars = 0;
};

struct RealWorldFile {
  std::string path;
  // False for the files SOURCES.md calls not decodable: the NEG_* files (not
  // programs at all) and the pre-2018 VarDesc format ("inference-oldformat").
  bool decodable = true;
  std::optional<RealWorldCounts> counts;  // from SOURCES.md, when it has a row
};

struct RealWorld {
  std::vector<RealWorldFile> files;  // empty when the folder is absent
  std::string skip_reason;
};

namespace realworld_detail {

inline std::vector<std::string> table_cells(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  for (std::size_t i = 1; i < line.size(); ++i) {
    if (line[i] != '|') {
      cell += line[i];
      continue;
    }
    const auto begin = cell.find_first_not_of(" `");
    const auto end = cell.find_last_not_of(" `");
    cells.push_back(begin == std::string::npos ? "" : cell.substr(begin, end - begin + 1));
    cell.clear();
  }
  return cells;
}

// file name -> its row: | file | repo | commit | path | bytes | version |
// blocks/ops/vars | kind | what |
inline std::map<std::string, RealWorldFile> rows(const std::filesystem::path& sources) {
  std::map<std::string, RealWorldFile> out;
  std::ifstream in(sources);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("| `", 0) != 0) continue;
    const std::vector<std::string> cells = table_cells(line);
    if (cells.size() < 9) continue;
    RealWorldFile row;
    const std::string& counts = cells[6];
    row.decodable = counts.find("not decodable") == std::string::npos &&
                    cells[7].find("oldformat") == std::string::npos;
    RealWorldCounts c;
    char slash1 = 0, slash2 = 0;
    std::istringstream parse(counts);
    if (parse >> c.blocks >> slash1 >> c.ops >> slash2 >> c.vars && slash1 == '/' && slash2 == '/')
      row.counts = c;
    out[cells[0]] = row;
  }
  return out;
}

}  // namespace realworld_detail

// The files under `root` (../shared/realworld beside the project unless a
// test names another place).
inline RealWorld find_realworld(
    const std::filesystem::path& root =
        std::filesystem::path(CTP_SOURCE_DIR) / ".." / "shared" / "realworld") {
  namespace fs = std::filesystem;
  RealWorld world;
  if (!fs::is_directory(root / "programs")) {
    world.skip_reason = "no real Paddle programs at " + root.string() +
                        " (../shared/realworld beside the project)";
    return world;
  }
  const auto rows = realworld_detail::rows(root / "SOURCES.md");
  for (const char* folder : {"programs", "mutated"}) {
    if (!fs::is_directory(root / folder)) continue;
    for (const auto& entry : fs::directory_iterator(root / folder)) {
      if (!entry.is_regular_file()) continue;
      RealWorldFile file;
      const std::string name = entry.path().filename().string();
      if (auto row = rows.find(name); row != rows.end()) file = row->second;
      // Whatever SOURCES.md says, a NEG_ file is no program.
      if (name.rfind("NEG_", 0) == 0) file.decodable = false;
      file.path = entry.path().string();
      world.files.push_back(std::move(file));
    }
  }
  std::sort(world.files.begin(), world.files.end(),
            [](const RealWorldFile& a, const RealWorldFile& b) { return a.path < b.path; });
  return world;
}

}  // namespace ctp::test
