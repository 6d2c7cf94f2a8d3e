// How croq's own driver (`croq tune`) talks to croq: by running croq's verbs as child processes,
// exactly as an external agent would, and reading their JSON. A fake client replays canned answers
// in tests.
#pragma once
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "croq/util/json.hpp"
#include "croq/util/process.hpp"

namespace croq {

struct VerbResult {
  int exit_code = -1;
  json doc;          // stdout parsed as JSON (null if it was not)
  std::string err;   // stderr
  double wall_ms = 0;
  bool ok() const { return exit_code == 0; }
  // The error message of a failed verb ("" if none).
  std::string message() const;
};

class VerbClient {
 public:
  virtual ~VerbClient() = default;
  virtual VerbResult call(const std::vector<std::string>& args, std::chrono::seconds timeout) = 0;
};

// Runs `<croq executable> --root <root> -q <args>` through the process runner it is given.
class SelfExecClient : public VerbClient {
 public:
  SelfExecClient(ProcessRunner& runner, std::filesystem::path croq_exe, std::filesystem::path root);
  VerbResult call(const std::vector<std::string>& args, std::chrono::seconds timeout) override;

 private:
  ProcessRunner& m_runner;
  std::filesystem::path m_exe;
  std::filesystem::path m_root;
};

}  // namespace croq
