// What `croq sweep run` and `croq sweep submit` are asked, turned into the sweep's options and its
// manifest (every shape's task name checked, nothing written), and the stop flag SIGINT and SIGTERM
// set while a sweep runs.
#pragma once
#include <atomic>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "croq/sweep/manifest.hpp"
#include "croq/sweep/sweep.hpp"
#include "croq/util/json.hpp"

namespace croq::sweep {

struct SweepRequest {
  std::string manifest = "typical";  // a built-in name, or a manifest file (JSON, TOML, the skill's manifest.json)
  std::string op;                    // operator of a built-in manifest
  std::vector<std::string> dtypes;   // empty: the manifest's
  std::string mode = "from_scratch"; // from_scratch | from_current_best
  std::string driver = "search";     // search | agent | command
  std::string command;               // --driver command's argv template, split on spaces
  SweepOptions s;                    // the rest, as given (s.gpu_key may be empty: detected)
};

// Checks the request and fills `r.s` (mode, driver, command, the device key resolved, root, the
// croq executable); returns the manifest. Throws usage for a bad mode, a command driver without a
// command, an agent driver under croq's own model name, or a shape whose task name is refused.
Manifest resolve_sweep_request(SweepRequest& r, const std::filesystem::path& root, const std::filesystem::path& croq_exe);

// Runs `body` with SIGINT and SIGTERM setting `stop` (cleared first); the earlier handlers come
// back after, also when `body` throws. One at a time per process.
json with_stop_signals(std::atomic<bool>& stop, const std::function<json()>& body);

}  // namespace croq::sweep
