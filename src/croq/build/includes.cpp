// Recursive #include resolution (includes.hpp).
#include "croq/build/includes.hpp"

#include <deque>
#include <regex>
#include <set>

#include "croq/util/fs.hpp"
#include "croq/util/text.hpp"

namespace croq {

namespace {

struct Directive {
  std::string name;
  bool quoted = false;
};

std::vector<Directive> scan_directives(const std::string& text) {
  static const std::regex re(R"(^\s*#\s*include\s*([<"])([^">]+)[">])");
  std::vector<Directive> out;
  for (const std::string& line : split_lines(text)) {
    if (line.find("include") == std::string::npos) continue;
    std::smatch m;
    if (std::regex_search(line, m, re)) out.push_back({m[2].str(), m[1].str() == "\""});
  }
  return out;
}

}  // namespace

std::vector<IncludedFile> resolve_includes(const fs::path& source, const std::vector<fs::path>& include_dirs) {
  std::vector<IncludedFile> out;
  std::set<fs::path> seen;
  std::error_code ec;
  fs::path start = fs::weakly_canonical(source, ec);
  seen.insert(start);
  std::deque<fs::path> queue{start};
  while (!queue.empty()) {
    fs::path file = queue.front();
    queue.pop_front();
    auto text = read_file(file);
    if (!text) continue;
    for (const Directive& d : scan_directives(*text)) {
      std::vector<fs::path> dirs;
      if (d.quoted) dirs.push_back(file.parent_path());
      dirs.insert(dirs.end(), include_dirs.begin(), include_dirs.end());
      for (const fs::path& dir : dirs) {
        fs::path candidate = dir / d.name;
        if (!fs::is_regular_file(candidate, ec)) continue;
        fs::path canon = fs::weakly_canonical(candidate, ec);
        if (seen.insert(canon).second) {
          out.push_back({canon, d.name});
          queue.push_back(canon);
        }
        break;
      }
    }
  }
  return out;
}

}  // namespace croq
