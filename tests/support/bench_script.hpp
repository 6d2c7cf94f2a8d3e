// Runs one of the project's Python bench scripts (bench/<script>) on a SASS fixture of
// tests/data/sass/, with extra arguments after it, as the unit tests of those scripts do.
#pragma once

#include <string>
#include <vector>

#include "croq/util/process.hpp"

namespace croq::test {

inline ProcessResult run_bench_script_on_sass(const std::string& script, const std::string& fixture,
                                              const std::vector<std::string>& extra = {}) {
  ProcessSpec spec;
  spec.argv = {find_executable("python3")->string(), std::string(CROQ_SOURCE_DIR) + "/bench/" + script,
               std::string(CROQ_TEST_DATA_DIR) + "/sass/" + fixture};
  spec.argv.insert(spec.argv.end(), extra.begin(), extra.end());
  spec.timeout = std::chrono::milliseconds(60000);
  return process_runner().run(spec);
}

}  // namespace croq::test
