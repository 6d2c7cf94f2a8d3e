// ARCHITECTURE.md's component table is the map a newcomer reads first; this test keeps it true.
// Every folder under src/croq/ has a row, every row names a folder, and the "depends on" column is
// exactly the set of other components whose headers the folder includes (`#include "croq/<c>/…"`),
// with no cycle among them.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <string>

#include "croq/util/fs.hpp"
#include "croq/util/text.hpp"

namespace fs = std::filesystem;

namespace {

using Graph = std::map<std::string, std::set<std::string>>;

// The rows of the "| folder | owns | depends on |" table.
Graph declared_components(const std::string& markdown) {
  Graph g;
  bool in_table = false;
  const std::regex row(R"(^\|\s*`([a-z_]+)`\s*\|.*\|\s*([^|]*?)\s*\|\s*$)");
  for (const auto& line : croq::split_lines(markdown)) {
    if (line.rfind("| folder | owns | depends on |", 0) == 0) {
      in_table = true;
      continue;
    }
    if (!in_table) continue;
    if (line.rfind("|---", 0) == 0) continue;
    std::smatch m;
    if (!std::regex_match(line, m, row)) break;
    std::set<std::string> deps;
    const std::regex name("[a-z_]+");
    const std::string col = m[2];
    for (auto it = std::sregex_iterator(col.begin(), col.end(), name); it != std::sregex_iterator(); ++it) {
      deps.insert(it->str());
    }
    g[m[1]] = deps;
  }
  return g;
}

Graph included_components(const fs::path& src) {
  Graph g;
  const std::regex inc(R"(#include\s+"croq/([a-z_]+)/)");
  for (const auto& dir : fs::directory_iterator(src)) {
    if (!dir.is_directory()) continue;
    const std::string comp = dir.path().filename().string();
    auto& deps = g[comp];
    for (const auto& e : fs::recursive_directory_iterator(dir.path())) {
      const auto ext = e.path().extension();
      if (!e.is_regular_file() || (ext != ".cpp" && ext != ".hpp" && ext != ".h")) continue;
      const std::string text = croq::read_file(e.path()).value_or("");
      for (auto it = std::sregex_iterator(text.begin(), text.end(), inc); it != std::sregex_iterator(); ++it) {
        const std::string other = (*it)[1];
        if (other != comp) deps.insert(other);
      }
    }
  }
  return g;
}

}  // namespace

TEST(Architecture, TheComponentTableIsTheIncludeGraph) {
  const fs::path root = CROQ_SOURCE_DIR;
  const auto doc = croq::read_file(root / "ARCHITECTURE.md");
  ASSERT_TRUE(doc.has_value());
  const Graph declared = declared_components(*doc);
  const Graph actual = included_components(root / "src/croq");
  ASSERT_GE(declared.size(), 10u) << "the component table was not found in ARCHITECTURE.md";
  for (const auto& [comp, deps] : actual) {
    auto it = declared.find(comp);
    if (it == declared.end()) {
      ADD_FAILURE() << "src/croq/" << comp << " has no row in ARCHITECTURE.md's component table";
      continue;
    }
    EXPECT_EQ(it->second, deps) << "ARCHITECTURE.md says `" << comp << "` depends on {"
                                << fmt::format("{}", fmt::join(it->second, ", ")) << "}; its includes say {"
                                << fmt::format("{}", fmt::join(deps, ", ")) << "}";
  }
  for (const auto& [comp, deps] : declared) {
    EXPECT_TRUE(actual.count(comp)) << "ARCHITECTURE.md names `" << comp << "`, which is not a folder of src/croq";
  }
  // No cycle: a depth-first walk never meets a component still on its path.
  std::map<std::string, int> mark;  // 1: on the path, 2: done
  std::function<void(const std::string&, std::vector<std::string>&)> visit = [&](const std::string& c,
                                                                                 std::vector<std::string>& path) {
    if (mark[c] == 2) return;
    path.push_back(c);
    if (mark[c] == 1) {
      ADD_FAILURE() << "include cycle: " << fmt::format("{}", fmt::join(path, " -> "));
      path.pop_back();
      return;
    }
    mark[c] = 1;
    auto it = actual.find(c);
    if (it != actual.end()) {
      for (const auto& d : it->second) visit(d, path);
    }
    mark[c] = 2;
    path.pop_back();
  };
  for (const auto& [comp, deps] : actual) {
    std::vector<std::string> path;
    visit(comp, path);
  }
}

// Lab notes (which run measured what) live in docs, next to the results they cite; the code says
// what it does and points to the page (docs/hopper-gemm-family.md for the hopper_gemm family).
TEST(Architecture, SourcesCiteNoResultRuns) {
  const fs::path root = CROQ_SOURCE_DIR;
  const std::regex lab(R"(docs/results/|gemm-run[0-9])");
  int files = 0;
  for (const auto& e : fs::recursive_directory_iterator(root / "src")) {
    const auto ext = e.path().extension();
    if (!e.is_regular_file() || (ext != ".cpp" && ext != ".hpp" && ext != ".cu" && ext != ".py")) continue;
    ++files;
    const std::string text = croq::read_file(e.path()).value_or("");
    std::smatch m;
    EXPECT_FALSE(std::regex_search(text, m, lab))
        << e.path().lexically_relative(root).string() << " cites a result run (" << m.str()
        << "): move the note to docs/ and leave a pointer to the page";
  }
  EXPECT_GT(files, 100);
}
