// One way to start a process: ARCHITECTURE.md's boundary "every child process starts through
// ProcessRunner" holds in the code. croq forks in one place and execs in one place, both in
// src/croq/util/process.cpp (fork_child, exec_now), and no other file of src/ calls fork, vfork,
// clone, posix_spawn, popen or an exec function.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "croq/util/fs.hpp"

namespace fs = std::filesystem;

namespace {

// The source without comments and string literals (a comment may say "fork", code may not).
std::string code_only(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      while (i < text.size() && text[i] != '\n') ++i;
      out += '\n';
    } else if (c == '/' && i + 1 < text.size() && text[i + 1] == '*') {
      size_t e = text.find("*/", i + 2);
      i = e == std::string::npos ? text.size() : e + 1;
    } else if (c == '"' || c == '\'') {
      for (++i; i < text.size() && text[i] != c; ++i) {
        if (text[i] == '\\') ++i;
      }
      out += "\"\"";
    } else {
      out += c;
    }
  }
  return out;
}

struct Site {
  std::string file;
  std::string call;
};

std::vector<Site> process_starts(const fs::path& src) {
  const std::regex start(R"(\b(v?fork|clone3?|posix_spawnp?|popen|exec(l|lp|le|v|vp|vpe|ve)|fexecve)\s*\()");
  std::vector<Site> sites;
  for (const auto& e : fs::recursive_directory_iterator(src)) {
    const auto ext = e.path().extension();
    if (!e.is_regular_file() || (ext != ".cpp" && ext != ".hpp" && ext != ".h" && ext != ".cu")) continue;
    const std::string code = code_only(croq::read_file_or_throw(e.path()));
    for (auto it = std::sregex_iterator(code.begin(), code.end(), start); it != std::sregex_iterator(); ++it) {
      // A member or a function of croq's own with the same name (`.system(`, `EnvProbe::system(`,
      // `run_system(`) is not a call of libc's.
      const size_t at = static_cast<size_t>(it->position());
      if (at > 0 && (code[at - 1] == '.' || code[at - 1] == '>' || code[at - 1] == '_')) continue;
      if (at > 2 && code[at - 1] == ':' && (std::isalnum(static_cast<unsigned char>(code[at - 3])) || code[at - 3] == '_')) {
        continue;
      }
      sites.push_back({fs::relative(e.path(), src).string(), (*it)[1]});
    }
  }
  return sites;
}

}  // namespace

TEST(ProcessBoundary, CroqForksAndExecsInOnePlace) {
  const fs::path src = fs::path(CROQ_SOURCE_DIR) / "src";
  std::vector<Site> sites = process_starts(src);
  std::string list;
  int forks = 0, execs = 0;
  for (const auto& s : sites) {
    list += "\n  " + s.file + ": " + s.call + "(";
    if (s.file != "croq/util/process.cpp") continue;
    forks += s.call == "fork";
    execs += s.call == "execve";
  }
  for (const auto& s : sites) {
    EXPECT_EQ(s.file, "croq/util/process.cpp") << "a process started outside util/process: " << s.file << " calls "
                                               << s.call << "(; start it through a ProcessRunner";
  }
  EXPECT_EQ(forks, 1) << list;
  EXPECT_EQ(execs, 1) << list;
  EXPECT_EQ(sites.size(), 2u) << "one fork and one exec:" << list;
}

// The check itself sees a process started in a comment-free line and ignores comments and text.
TEST(ProcessBoundary, TheScanSeesCallsNotWords) {
  EXPECT_EQ(code_only("pid_t p = ::fork(); // fork( here\n\"execv(\""), "pid_t p = ::fork(); \n\"\"");
}
