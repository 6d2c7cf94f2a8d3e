// Measurement files in store-round (store_measurement.hpp).
#include "croq/measure/store_measurement.hpp"

#include <fmt/format.h>

#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/hash.hpp"

namespace croq {

MeasurementFile read_measurement_file(const std::filesystem::path& path) {
  auto text = read_file(path);
  if (!text) throw_not_found(fmt::format("measurement file {} not found", path.string()), "run `croq measure` first");
  std::string why;
  auto doc = try_parse_json(*text, &why);
  if (!doc) throw_usage(fmt::format("{} is not JSON: {}", path.string(), why));
  auto m = Measurement::from_json(*doc, &why);
  if (!m) throw_usage(fmt::format("{} is not a croq measurement: {}", path.string(), why), "pass the file `croq measure` wrote");
  return {path, sha256_hex(*text), *m};
}

json measurement_provenance(const MeasurementFile& f, const std::string& display_path) {
  const Measurement& m = f.measurement;
  json j;
  j["file"] = display_path;
  j["sha256"] = f.sha256;
  j["candidate"] = m.candidate_path;
  j["candidate_sha256"] = m.candidate_sha256;
  j["kind"] = m.kind;
  j["verdict"] = verdict_name(m.verdict);
  j["reason"] = m.reason;
  j["tflops"] = m.tflops ? json(*m.tflops) : json(nullptr);
  j["median_ms"] = m.timing ? json(m.timing->median_ms) : json(nullptr);
  j["cv"] = m.timing ? json(m.timing->cv) : json(nullptr);
  j["robust_cv"] = m.timing && m.timing->robust_cv ? json(*m.timing->robust_cv) : json(nullptr);
  j["reps"] = m.timing ? json(m.timing->reps) : json(nullptr);
  j["seed"] = m.seed ? json(*m.seed) : json(nullptr);
  j["device_key"] = m.device.key;
  j["device_uuid"] = m.device.uuid;
  j["sm_clock_mhz"] = m.device.sm_clock_mhz ? json(*m.device.sm_clock_mhz) : json(nullptr);
  j["created_at"] = m.created_at;
  return j;
}

void apply_measurement(StoreRequest& req, const MeasurementFile& f, const std::string& display_path,
                       const ShapeKey& shape) {
  const Measurement& m = f.measurement;
  if (req.tflops) {
    throw_usage("--tflops and --measurement exclude each other",
                "the TFLOPS come from the measurement file; drop --tflops");
  }
  if (shape.dims.size() == 3 && (m.problem.m != shape.m() || m.problem.n != shape.n() || m.problem.k != shape.k())) {
    throw_usage(fmt::format("the measurement is for {}x{}x{}, the task is {}", m.problem.m, m.problem.n, m.problem.k,
                            shape.text),
                "pass the measurement of this task's candidate");
  }
  auto decision = req.decision.empty() ? std::nullopt : parse_decision(req.decision);
  if (!req.decision.empty() && !decision) {
    throw_usage(fmt::format("unknown decision '{}'", req.decision));
  }
  if (m.verdict == Verdict::PASS) {
    if (!decision) {
      throw_usage("the measurement passed: --decision KEEP or DISCARD is the driver's to give",
                  m.kind == "baseline" ? "a library baseline is stored with --decision BASELINE" : "");
    }
    if (is_failure(*decision)) {
      throw_usage(fmt::format("--decision {} contradicts the measurement, which passed", req.decision),
                  "store KEEP or DISCARD");
    }
    if (!m.tflops) throw_usage("the measurement has no TFLOPS figure");
    if (m.contended()) {
      // Another process shared the GPU (or a clock limit held it down) while this was timed: the
      // figure may be shown, never stored as a decision's evidence.
      throw Error(ExitCode::refused,
                  fmt::format("--decision {} is refused: the measurement is contended ({})", req.decision,
                              m.contention_reason()),
                  "measure again when the GPU is idle (`croq gpu check --wait`, `croq gpu contention` names who is "
                  "on it), then store that measurement");
    }
    req.tflops = *m.tflops;
  } else {
    const Decision derived = *failure_decision(m.verdict);
    if (decision && !is_failure(*decision)) {
      throw_usage(fmt::format("--decision {} is refused: the measurement's verdict is {} ({})", req.decision,
                              verdict_name(m.verdict), m.reason),
                  fmt::format("a failed candidate is stored as {}", decision_name(derived)));
    }
    if (decision && *decision != derived) {
      throw_usage(fmt::format("--decision {} contradicts the measurement's verdict {}", req.decision,
                              verdict_name(m.verdict)),
                  fmt::format("store it as {} (or leave --decision out)", decision_name(derived)));
    }
    req.decision = decision_name(derived);
  }
  req.source = m.source.empty() ? "measured" : m.source;
  req.extra["measurement"] = measurement_provenance(f, display_path);
}

}  // namespace croq
