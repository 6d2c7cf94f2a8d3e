// Shared helpers of the test suites: a temporary folder that removes itself, and a way to run the
// real croq binary (CLI tests) and read its JSON.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "croq/util/json.hpp"
#include "croq/util/process.hpp"

namespace croq::test {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "croq-test-XXXXXX").string();
    char* p = ::mkdtemp(tmpl.data());
    m_path = p ? fs::path(p) : fs::path(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    if (!std::getenv("CROQ_KEEP_TEST_DIRS")) fs::remove_all(m_path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return m_path; }
  fs::path operator/(const std::string& rel) const { return m_path / rel; }

 private:
  fs::path m_path;
};

struct CroqRun {
  int rc = -1;
  std::string out;
  std::string err;
  json doc;  // stdout parsed as JSON (null if it is not)
};

#ifdef CROQ_BIN
// Runs `croq --root <root> args...` with a clean environment for croq's variables.
inline CroqRun run_croq(const fs::path& root, const std::vector<std::string>& args,
                        const std::map<std::string, std::string>& env = {}, const std::string& stdin_data = {},
                        std::chrono::milliseconds timeout = std::chrono::milliseconds(120000)) {
  ProcessSpec spec;
  spec.argv = {CROQ_BIN};
  if (!root.empty()) {
    spec.argv.push_back("--root");
    spec.argv.push_back(root.string());
  }
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.env_unset = {"CROQ_ROOT", "CROQ_GPU"};
  spec.env_set = env;
  spec.stdin_data = stdin_data;
  spec.timeout = timeout;
  SystemProcessRunner runner;
  ProcessResult r = runner.run(spec);
  CroqRun out;
  out.rc = r.started ? (r.term_signal ? 128 + r.term_signal : r.exit_code) : -1;
  out.out = r.out;
  out.err = r.err;
  if (auto j = try_parse_json(r.out)) out.doc = *j;
  return out;
}
#endif

// Splits a command line into words as a POSIX shell would (quotes; no expansions).
inline std::vector<std::string> shell_words(const std::string& line) { return split_shell_words(line); }

// The first python3 that imports torch (the CPU build is enough: Debian's python3-torch): the one on
// PATH, else the system's; empty when none does.
inline std::string python_with_torch() {
  for (const char* py : {"python3", "/usr/bin/python3"}) {
    ProcessSpec spec;
    spec.argv = {py, "-c", "import torch"};
    spec.timeout = std::chrono::seconds(120);
    if (SystemProcessRunner().run(spec).ok()) return py;
  }
  return {};
}

}  // namespace croq::test
