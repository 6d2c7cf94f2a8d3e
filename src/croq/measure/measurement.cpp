// Serialisation of the measurement record (measurement.hpp).
#include "croq/measure/measurement.hpp"
#include "croq/measure/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace croq {

std::vector<std::string> clock_reason_names(uint64_t mask) {
  // nvmlClocksEventReason*: 0x1 idle, 0x2 applications clocks, 0x4 software power cap, 0x8 hardware
  // slowdown, 0x10 sync boost, 0x20 software thermal, 0x40 hardware thermal, 0x80 power brake,
  // 0x100 display clock.
  static const char* const names[] = {"gpu_idle",          "applications_clocks_setting", "sw_power_cap",
                                      "hw_slowdown",       "sync_boost",                  "sw_thermal_slowdown",
                                      "hw_thermal_slowdown", "hw_power_brake_slowdown",   "display_clock_setting"};
  std::vector<std::string> out;
  for (int bit = 0; bit < 64; ++bit) {
    if (!(mask & (uint64_t{1} << bit))) continue;
    out.push_back(bit < static_cast<int>(std::size(names)) ? std::string(names[bit]) : fmt::format("bit{}", bit));
  }
  return out;
}

namespace {

// JSON has no NaN or infinity: such values are written as the strings "nan", "inf", "-inf".
json number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

std::optional<double> read_number(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key)) return std::nullopt;
  const json& v = j.at(key);
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
  }
  return std::nullopt;
}

int64_t read_int(const json& j, const char* key, int64_t fallback = 0) {
  if (!j.is_object() || !j.contains(key)) return fallback;
  const json& v = j.at(key);
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number()) return static_cast<int64_t>(v.get<double>());
  return fallback;
}

std::string read_string(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j.at(key).is_string()) return {};
  return j.at(key).get<std::string>();
}

std::optional<bool> read_bool(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j.at(key).is_boolean()) return std::nullopt;
  return j.at(key).get<bool>();
}

json opt_bool(const std::optional<bool>& b) { return b ? json(*b) : json(nullptr); }
template <typename T>
json opt_num(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

}  // namespace

double tflops_of(double flops, double ms) { return ms > 0 ? flops / (ms * 1e-3) / 1e12 : 0.0; }

std::string cpu_shared_warning(double share) {
  return fmt::format("the runner waited for a CPU {:.0f} % of its launches' time: other work shared the CPU, so the "
                     "figures may be low; measure again on a quieter machine",
                     share * 100);
}

json ToleranceSpec::to_json() const {
  json j = {{"base_tol", base_tol}, {"rel_tol", rel_tol}, {"normwise", normwise}, {"rule", rule}};
  if (mag_tol > 0) j["mag_tol"] = mag_tol;
  return j;
}

json Measurement::to_json() const {
  json j;
  j["schema"] = schema;
  j["croq"] = {{"version", croq_version}, {"git", croq_git}};
  j["created_at"] = created_at;
  j["kind"] = kind;
  j["verdict"] = verdict_name(verdict);
  j["reason"] = reason;
  j["detail"] = detail;
  j["candidate"] = {{"path", candidate_path}, {"sha256", candidate_sha256}, {"info", candidate_info}};
  if (candidate_abi_version > 0) j["candidate"]["abi_version"] = candidate_abi_version;
  j["problem"] = {{"op", problem.op},         {"m", problem.m},
                  {"n", problem.n},           {"k", problem.k},
                  {"dtype", problem.dtype},   {"a_type", problem.a_type},
                  {"b_type", problem.b_type}, {"c_type", problem.c_type},
                  {"compute_type", problem.compute_type}, {"b_layout", problem.b_layout}};
  if (!problem.sparsity.empty()) j["problem"]["sparsity"] = problem.sparsity;
  if (!problem.scaling.empty()) j["problem"]["scaling"] = problem.scaling;
  j["device"] = {{"name", device.name},
                 {"uuid", device.uuid},
                 {"key", device.key},
                 {"compute_cap", device.compute_cap},
                 {"driver", device.driver},
                 {"sm_clock_mhz", opt_num(device.sm_clock_mhz)},
                 {"min_sm_clock_mhz", opt_num(device.min_sm_clock_mhz)},
                 {"max_sm_clock_mhz", opt_num(device.max_sm_clock_mhz)},
                 {"clock_limit_reasons", device.clock_limit_reasons ? json(clock_reason_names(*device.clock_limit_reasons))
                                                                    : json(nullptr)},
                 {"clock_limit_mask", opt_num(device.clock_limit_reasons)},
                 {"clock_samples", device.clock_samples},
                 {"limited_samples", device.limited_samples},
                 {"other_processes", opt_num(device.other_processes)},
                 {"cpu_wait_share", opt_num(device.cpu_wait_share)},
                 {"sm_count", device.sm_count},
                 {"l2_bytes", device.l2_bytes},
                 {"peak_tflops", device.peak_tflops},
                 {"peak_source", device.peak_source}};
  j["seed"] = opt_num(seed);
  j["second_seed"] = opt_num(second_seed);
  const Verification& v = verification;
  json worst = json::array();
  for (const auto& w : v.worst) worst.push_back({{"i", w.i}, {"j", w.j}, {"got", number(w.got)}, {"want", number(w.want)}});
  json tolerance = v.tolerance.to_json();
  if (v.tolerance.mag_tol > 0) tolerance["magnitude_excused"] = v.magnitude_excused;
  j["verification"] = {{"passed", opt_bool(v.passed)},
                       {"elements", v.elements},
                       {"mismatches", v.mismatches},
                       {"max_abs_err", number(v.max_abs_err)},
                       {"max_rel_err", number(v.max_rel_err)},
                       {"normwise_rel_err", number(v.normwise_rel_err)},
                       {"tolerance", tolerance},
                       {"worst", worst},
                       {"nan_count", v.nan_count},
                       {"guard_bytes_changed", v.guard_bytes_changed},
                       {"rechecked_after_timing", opt_bool(v.rechecked_after_timing)},
                       {"second_seed_passed", opt_bool(v.second_seed_passed)},
                       {"timed_checked", v.timed_checked}};
  if (!v.reported.empty()) j["verification"]["reported"] = v.reported;
  if (timing) {
    const Timing& t = *timing;
    json samples = json::array();
    for (double s : t.samples_ms) samples.push_back(s);
    j["timing"] = {{"method", t.method},
                   {"l2_flush", t.l2_flush},
                   {"stream_held", t.stream_held},
                   {"rotation_sets", t.rotation_sets},
                   {"warmup", t.warmup},
                   {"reps", t.reps},
                   {"median_ms", t.median_ms},
                   {"mean_ms", t.mean_ms},
                   {"min_ms", t.min_ms},
                   {"p90_ms", t.p90_ms},
                   {"max_ms", t.max_ms},
                   {"cv", t.cv},
                   {"robust_cv", opt_num(t.robust_cv)},
                   {"stop_reason", t.stop_reason},
                   {"warmup_ms", opt_num(t.warmup_ms)},
                   {"timed_ms", opt_num(t.timed_ms)},
                   {"wall_check_ms", opt_num(t.wall_check_ms)},
                   {"rest_ratio", opt_num(t.rest_ratio)},
                   {"rest_ms", opt_num(t.rest_ms)},
                   {"samples_ms", samples}};
  } else {
    j["timing"] = nullptr;
  }
  j["tflops"] = tflops ? number(*tflops) : json(nullptr);
  j["library"] = library.is_null() ? json(nullptr) : library;
  j["flags"] = flags;
  j["warnings"] = warnings;
  j["source"] = source;
  if (!process.is_null()) j["process"] = process;
  if (!phases.empty()) j["phases"] = phases;
  if (!runs.is_null()) j["runs"] = runs;
  if (!contention.is_null()) j["contention"] = contention;
  if (!argv.empty()) j["argv"] = argv;
  return j;
}

bool Measurement::cpu_shared() const {
  return device.cpu_wait_share && std::find(flags.begin(), flags.end(), k_cpu_shared_flag) != flags.end();
}

bool Measurement::contended() const {
  if (std::find(flags.begin(), flags.end(), k_contended_flag) != flags.end()) return true;
  return contention.is_object() && contention.contains("contended") && contention["contended"].is_boolean() &&
         contention["contended"].get<bool>();
}

std::string Measurement::contention_reason() const {
  if (!contended()) return {};
  std::string out;
  if (contention.is_object() && contention.contains("reasons") && contention["reasons"].is_array()) {
    for (const auto& r : contention["reasons"]) {
      if (r.is_string()) out += (out.empty() ? "" : "; ") + r.get<std::string>();
    }
  }
  return out.empty() ? "the GPU was shared while it was measured" : out;
}

std::optional<double> timing_robust_cv(const json& t) {
  if (!t.is_object()) return std::nullopt;
  if (t.contains("robust_cv")) return read_number(t, "robust_cv");
  std::vector<double> samples;
  if (t.contains("samples_ms") && t["samples_ms"].is_array()) {
    for (const auto& s : t["samples_ms"]) {
      if (s.is_number()) samples.push_back(s.get<double>());
    }
  }
  if (samples.empty()) return std::nullopt;
  return robust_cv(samples);
}

std::optional<Measurement> Measurement::from_json(const json& j, std::string* why) {
  auto fail = [&](std::string msg) -> std::optional<Measurement> {
    if (why) *why = std::move(msg);
    return std::nullopt;
  };
  if (!j.is_object()) return fail("not a JSON object");
  const std::string schema = read_string(j, "schema");
  if (schema != k_measurement_schema) {
    return fail(schema.empty() ? "no schema field (not a croq measurement)"
                               : fmt::format("schema '{}' is not {}", schema, k_measurement_schema));
  }
  Measurement m;
  if (j.contains("croq") && j["croq"].is_object()) {
    m.croq_version = read_string(j["croq"], "version");
    m.croq_git = read_string(j["croq"], "git");
  }
  m.created_at = read_string(j, "created_at");
  m.kind = read_string(j, "kind");
  if (m.kind.empty()) m.kind = "candidate";
  auto verdict = parse_verdict(read_string(j, "verdict"));
  if (!verdict) return fail(fmt::format("unknown verdict '{}'", read_string(j, "verdict")));
  m.verdict = *verdict;
  m.reason = read_string(j, "reason");
  m.detail = read_string(j, "detail");
  if (j.contains("candidate") && j["candidate"].is_object()) {
    const json& c = j["candidate"];
    m.candidate_path = read_string(c, "path");
    m.candidate_sha256 = read_string(c, "sha256");
    if (c.contains("info")) m.candidate_info = c["info"];
    m.candidate_abi_version = static_cast<int>(read_int(c, "abi_version"));
  }
  if (!j.contains("problem") || !j["problem"].is_object()) return fail("no problem object");
  {
    const json& p = j["problem"];
    m.problem.op = read_string(p, "op");
    m.problem.m = read_int(p, "m");
    m.problem.n = read_int(p, "n");
    m.problem.k = read_int(p, "k");
    m.problem.dtype = read_string(p, "dtype");
    m.problem.a_type = read_string(p, "a_type");
    m.problem.b_type = read_string(p, "b_type");
    m.problem.c_type = read_string(p, "c_type");
    m.problem.compute_type = read_string(p, "compute_type");
    m.problem.b_layout = read_string(p, "b_layout");
    m.problem.sparsity = read_string(p, "sparsity");
    m.problem.scaling = read_string(p, "scaling");
  }
  if (j.contains("device") && j["device"].is_object()) {
    const json& d = j["device"];
    m.device.name = read_string(d, "name");
    m.device.uuid = read_string(d, "uuid");
    m.device.key = read_string(d, "key");
    m.device.compute_cap = read_string(d, "compute_cap");
    m.device.driver = read_string(d, "driver");
    if (auto v = read_number(d, "sm_clock_mhz")) m.device.sm_clock_mhz = static_cast<int>(*v);
    if (auto v = read_number(d, "max_sm_clock_mhz")) m.device.max_sm_clock_mhz = static_cast<int>(*v);
    if (auto v = read_number(d, "min_sm_clock_mhz")) m.device.min_sm_clock_mhz = static_cast<int>(*v);
    if (d.contains("clock_limit_mask") && d["clock_limit_mask"].is_number_unsigned()) {
      m.device.clock_limit_reasons = d["clock_limit_mask"].get<uint64_t>();
    }
    m.device.clock_samples = static_cast<int>(read_int(d, "clock_samples"));
    m.device.limited_samples = static_cast<int>(read_int(d, "limited_samples"));
    if (auto v = read_number(d, "other_processes")) m.device.other_processes = static_cast<int>(*v);
    m.device.cpu_wait_share = read_number(d, "cpu_wait_share");
    m.device.sm_count = static_cast<int>(read_int(d, "sm_count"));
    m.device.l2_bytes = read_int(d, "l2_bytes");
    m.device.peak_tflops = read_number(d, "peak_tflops").value_or(0);
    m.device.peak_source = read_string(d, "peak_source");
  }
  if (j.contains("seed") && j["seed"].is_number_unsigned()) m.seed = j["seed"].get<uint64_t>();
  else if (j.contains("seed") && j["seed"].is_number_integer()) m.seed = static_cast<uint64_t>(j["seed"].get<int64_t>());
  if (j.contains("second_seed") && j["second_seed"].is_number_integer()) m.second_seed = j["second_seed"].get<uint64_t>();
  if (j.contains("verification") && j["verification"].is_object()) {
    const json& v = j["verification"];
    Verification& o = m.verification;
    o.passed = read_bool(v, "passed");
    o.elements = read_int(v, "elements");
    o.mismatches = read_int(v, "mismatches");
    o.nan_count = read_int(v, "nan_count");
    o.max_abs_err = read_number(v, "max_abs_err").value_or(0);
    o.max_rel_err = read_number(v, "max_rel_err").value_or(0);
    o.normwise_rel_err = read_number(v, "normwise_rel_err").value_or(0);
    o.guard_bytes_changed = read_int(v, "guard_bytes_changed");
    o.rechecked_after_timing = read_bool(v, "rechecked_after_timing");
    o.second_seed_passed = read_bool(v, "second_seed_passed");
    o.timed_checked = static_cast<int>(read_int(v, "timed_checked"));
    o.reported = read_string(v, "reported");
    if (v.contains("tolerance") && v["tolerance"].is_object()) {
      const json& t = v["tolerance"];
      o.tolerance.base_tol = read_number(t, "base_tol").value_or(0);
      o.tolerance.rel_tol = read_number(t, "rel_tol").value_or(0);
      o.tolerance.normwise = read_number(t, "normwise").value_or(0);
      o.tolerance.rule = read_string(t, "rule");
      o.tolerance.mag_tol = read_number(t, "mag_tol").value_or(0);
      o.magnitude_excused = read_int(t, "magnitude_excused");
    }
    if (v.contains("worst") && v["worst"].is_array()) {
      for (const auto& w : v["worst"]) {
        WorstElement e;
        e.i = read_int(w, "i");
        e.j = read_int(w, "j");
        e.got = read_number(w, "got").value_or(0);
        e.want = read_number(w, "want").value_or(0);
        o.worst.push_back(e);
      }
    }
  }
  if (j.contains("timing") && j["timing"].is_object()) {
    const json& t = j["timing"];
    Timing o;
    o.method = read_string(t, "method");
    o.l2_flush = read_bool(t, "l2_flush").value_or(false);
    o.stream_held = read_bool(t, "stream_held").value_or(false);
    o.rotation_sets = static_cast<int>(read_int(t, "rotation_sets", 1));
    o.warmup = static_cast<int>(read_int(t, "warmup"));
    o.reps = static_cast<int>(read_int(t, "reps"));
    o.median_ms = read_number(t, "median_ms").value_or(0);
    o.mean_ms = read_number(t, "mean_ms").value_or(0);
    o.min_ms = read_number(t, "min_ms").value_or(0);
    o.p90_ms = read_number(t, "p90_ms").value_or(0);
    o.max_ms = read_number(t, "max_ms").value_or(0);
    o.cv = read_number(t, "cv").value_or(0);
    o.stop_reason = read_string(t, "stop_reason");
    o.warmup_ms = read_number(t, "warmup_ms");
    o.timed_ms = read_number(t, "timed_ms");
    o.wall_check_ms = read_number(t, "wall_check_ms");
    o.rest_ratio = read_number(t, "rest_ratio");
    o.rest_ms = read_number(t, "rest_ms");
    if (t.contains("samples_ms") && t["samples_ms"].is_array()) {
      for (const auto& s : t["samples_ms"]) {
        if (s.is_number()) o.samples_ms.push_back(s.get<double>());
      }
    }
    o.robust_cv = timing_robust_cv(t);
    m.timing = o;
  }
  m.tflops = read_number(j, "tflops");
  if (j.contains("library")) m.library = j["library"];
  if (j.contains("flags") && j["flags"].is_array()) {
    for (const auto& f : j["flags"]) {
      if (f.is_string()) m.flags.push_back(f.get<std::string>());
    }
  }
  if (j.contains("warnings") && j["warnings"].is_array()) {
    for (const auto& f : j["warnings"]) {
      if (f.is_string()) m.warnings.push_back(f.get<std::string>());
    }
  }
  m.source = read_string(j, "source");
  if (m.source.empty()) m.source = "measured";
  if (j.contains("process")) m.process = j["process"];
  if (j.contains("phases") && j["phases"].is_array()) m.phases = j["phases"];
  if (j.contains("runs") && j["runs"].is_array()) m.runs = j["runs"];
  if (j.contains("contention") && j["contention"].is_object()) m.contention = j["contention"];
  if (j.contains("argv") && j["argv"].is_array()) {
    for (const auto& a : j["argv"]) {
      if (a.is_string()) m.argv.push_back(a.get<std::string>());
    }
  }
  if (m.verdict == Verdict::PASS && m.timing && (!m.tflops || !std::isfinite(*m.tflops))) {
    return fail("a timed PASS measurement without a finite tflops figure");
  }
  return m;
}

}  // namespace croq
