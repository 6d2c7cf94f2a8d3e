// A sweep's request resolved, and its stop signals (request.hpp).
#include "croq/sweep/request.hpp"


#include <fmt/format.h>

#include "croq/gpu/device_key.hpp"
#include "croq/util/error.hpp"
#include "croq/workspace/ids.hpp"

namespace croq::sweep {

namespace {

std::atomic<bool>* g_stop = nullptr;

extern "C" void on_sweep_stop_signal(int) {
  if (g_stop) *g_stop = true;
}

std::vector<std::string> split_on_spaces(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : text) {
    if (c == ' ' || c == '\t') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

}  // namespace

Manifest resolve_sweep_request(SweepRequest& r, const std::filesystem::path& root, const std::filesystem::path& croq_exe) {
  validate_dsl(r.s.dsl);
  auto mode = parse_mode(r.mode);
  if (!mode) throw_usage(fmt::format("--mode {} is neither from_scratch nor from_current_best", r.mode));
  r.s.mode = *mode;
  r.s.driver = r.driver;
  if (r.driver == "command") {
    r.s.command = split_on_spaces(r.command);
    if (r.s.command.empty()) throw_usage("--driver command needs --command", "e.g. --command \"my-driver {key} {device}\"");
  }
  if (r.driver == "agent" && r.s.model == "croq-search") {
    throw_usage("--driver agent: name the agent's model with --model (e.g. opus-4-fs)",
                "croq-search is the model name of croq's own search");
  }
  Manifest manifest = r.manifest == "typical" || (r.manifest.find('/') == std::string::npos &&
                                                 r.manifest.find('.') == std::string::npos)
                          ? builtin_manifest(r.manifest, r.op, r.dtypes)
                          : load_manifest(r.manifest, r.op, r.dtypes);
  r.s.gpu_key = resolve_device_key(r.s.gpu_key, r.s.dsl);
  for (const auto& s : manifest.shapes) (void)make_task(r.s.gpu_key, r.s.dsl, shape_key_for(s, *mode), r.s.model);
  r.s.root = root;
  r.s.croq_exe = croq_exe;
  return manifest;
}

json with_stop_signals(std::atomic<bool>& stop, const std::function<json()>& body) {
  stop = false;
  g_stop = &stop;
  ScopedStopSignals signals(on_sweep_stop_signal);
  json out;
  try {
    out = body();
  } catch (...) {
    g_stop = nullptr;
    throw;
  }
  g_stop = nullptr;
  return out;
}

}  // namespace croq::sweep
