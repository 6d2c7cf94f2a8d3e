// Builds a host check program (tests/nvcc/<name>.cu, which includes a kernel template from
// `template_dir`) with nvcc and the given -D flags, and runs it on the CPU: no GPU call is made.
#pragma once
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "croq/util/paths.hpp"
#include "croq/util/process.hpp"
#include "support/test_support.hpp"

namespace croq::test {

struct HostCheckRun {
  bool built = false;
  std::string build_log;  // nvcc's output when the build failed
  ProcessResult run;      // the program's (when built)
};

inline HostCheckRun run_host_check(const std::filesystem::path& nvcc, const std::string& name,
                                   const std::filesystem::path& template_dir, const std::vector<std::string>& defines) {
  TempDir dir;
  ProcessSpec build;
  build.argv = {nvcc.string(), "-gencode=arch=compute_90a,code=sm_90a", "-std=c++17",
                "-I" + find_project_dir("include").string(), "-I" + template_dir.string()};
  build.argv.insert(build.argv.end(), defines.begin(), defines.end());
  build.argv.insert(build.argv.end(),
                    {"-o", (dir / "check").string(), (find_project_dir("tests") / "nvcc" / (name + ".cu")).string()});
  build.timeout = std::chrono::milliseconds(900000);
  HostCheckRun out;
  ProcessResult b = process_runner().run(build);
  out.built = b.ok();
  if (!out.built) {
    out.build_log = b.out + b.err;
    return out;
  }
  ProcessSpec run;
  run.argv = {(dir / "check").string()};
  run.timeout = std::chrono::milliseconds(120000);
  out.run = process_runner().run(run);
  return out;
}

}  // namespace croq::test
