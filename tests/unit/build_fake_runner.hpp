// A fake process runner for the build tests: records every command line and answers from rules
// (the first rule whose program name matches), optionally writing the file named after `-o`, so
// the build pipeline runs end to end without a compiler.
#pragma once
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "croq/util/fs.hpp"
#include "croq/util/process.hpp"

namespace croq::test {

struct FakeRule {
  std::string program;          // matched against the end of argv[0]
  int exit_code = 0;
  std::string out;
  std::string err;
  bool write_output = true;     // create the file after -o (with `output_bytes`)
  std::string output_bytes = "fake output";
  bool not_found = false;       // the program cannot be started
  bool version_only = false;    // the rule answers only `--version` / `--help` queries
  std::function<void(const std::vector<std::string>&)> action;  // extra effect (e.g. write a script)
};

class FakeRunner : public ProcessRunner {
 public:
  std::vector<FakeRule> rules;
  std::vector<std::vector<std::string>> calls;

  ProcessResult run(const ProcessSpec& spec) override {
    std::lock_guard<std::mutex> lock(m_mutex);
    calls.push_back(spec.argv);
    ProcessResult r;
    for (const FakeRule& rule : rules) {
      const std::string& prog = spec.argv.front();
      if (prog.size() < rule.program.size() || prog.compare(prog.size() - rule.program.size(), rule.program.size(), rule.program) != 0) {
        continue;
      }
      const bool version_call = spec.argv.size() == 2 && (spec.argv[1] == "--version" || spec.argv[1] == "--help");
      if (rule.version_only && !version_call) continue;
      if (rule.not_found) {
        r.spawn_error = prog + ": command not found";
        return r;
      }
      r.started = true;
      r.exit_code = rule.exit_code;
      r.out = rule.out;
      r.err = rule.err;
      bool is_version = spec.argv.size() == 2 && (spec.argv[1] == "--version" || spec.argv[1] == "--help");
      if (rule.write_output && !is_version) {
        for (size_t i = 0; i + 1 < spec.argv.size(); ++i) {
          if (spec.argv[i] == "-o") atomic_write(spec.argv[i + 1], rule.output_bytes, false);
        }
      }
      if (rule.action && !is_version) rule.action(spec.argv);
      return r;
    }
    r.spawn_error = spec.argv.front() + ": no fake rule";
    return r;
  }

  // Calls whose program ends with `program` (version queries excluded).
  std::vector<std::vector<std::string>> calls_of(const std::string& program) const {
    std::vector<std::vector<std::string>> out;
    for (const auto& c : calls) {
      bool is_version = c.size() == 2 && (c[1] == "--version" || c[1] == "--help");
      if (!is_version && c.front().size() >= program.size() &&
          c.front().compare(c.front().size() - program.size(), program.size(), program) == 0) {
        out.push_back(c);
      }
    }
    return out;
  }

 private:
  std::mutex m_mutex;
};

// Installs a runner for the scope of a test.
class ScopedRunner {
 public:
  explicit ScopedRunner(ProcessRunner* r) { set_process_runner(r); }
  ~ScopedRunner() { set_process_runner(nullptr); }
};

}  // namespace croq::test
