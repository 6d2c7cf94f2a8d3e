// Candidate resolution and result paths (candidates.hpp).
#include "croq/measure/candidates.hpp"

#include <unistd.h>

#include <fmt/format.h>

#include "croq/util/error.hpp"
#include "croq/workspace/ids.hpp"

namespace croq {

namespace fs = std::filesystem;

namespace {

bool is_executable_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

// iter012 -> the unique iter012_<tag><suffix> in `dir`.
std::optional<std::string> find_tagged(const fs::path& dir, int number, const std::string& suffix, std::string& listing) {
  std::error_code ec;
  std::vector<std::string> found;
  const std::string prefix = iter_number_name(number) + "_";
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    if (suffix.empty()) {
      if (e.path().has_extension() || !is_executable_file(e.path())) continue;
      found.push_back(name);
    } else if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      found.push_back(name.substr(0, name.size() - suffix.size()));
    }
  }
  for (const auto& f : found) listing += (listing.empty() ? "" : ", ") + f;
  if (found.size() == 1) return found.front();
  return std::nullopt;
}

}  // namespace

CandidateRef resolve_candidate(const Workspace& ws, const TaskRef& task, const std::string& iter_flag,
                               const std::string& candidate_flag, bool legacy) {
  CandidateRef c;
  if (!candidate_flag.empty()) {
    c.path = fs::absolute(candidate_flag);
    std::error_code ec;
    if (!fs::is_regular_file(c.path, ec)) throw_not_found(fmt::format("candidate {} not found", c.path.string()));
    c.kernel = c.path.stem().string();
    if (auto id = try_parse_iter_id(c.kernel)) c.iter_number = id->number;
    const std::string ext = c.path.extension().string();
    if (ext == ".py") c.kind = legacy ? CandidateKind::legacy_program : CandidateKind::python;
    else if (ext == ".so" && !legacy) c.kind = CandidateKind::shared_object;
    else c.kind = CandidateKind::legacy_program;
    if (c.kind == CandidateKind::legacy_program && ext != ".py" && !is_executable_file(c.path)) {
      throw_usage(fmt::format("{} is neither a shared object (.so) nor an executable program", c.path.string()),
                  "pass the .so that `croq build` made, or --legacy with a self-timed executable");
    }
    return c;
  }
  if (iter_flag.empty()) throw_usage("give --iter iter<NNN>[_tag] or --candidate PATH");
  std::string kernel;
  int number = 0;
  if (auto id = try_parse_iter_id(iter_flag)) {
    number = id->number;
    kernel = id->name();
  } else {
    number = parse_iter_number(iter_flag);
  }
  c.iter_number = number;
  const fs::path bin = ws.kind_dir(task, ArtifactKind::bin);
  const fs::path srcs = ws.kind_dir(task, ArtifactKind::srcs);
  std::vector<std::string> tried;
  auto resolve_in = [&](const fs::path& dir, const std::string& suffix) -> std::optional<fs::path> {
    std::string name = kernel;
    if (name.empty()) {
      std::string listing;
      auto found = find_tagged(dir, number, suffix, listing);
      if (!found) {
        if (!listing.empty()) {
          throw_usage(fmt::format("{} is ambiguous in {}: {}", iter_number_name(number), ws.display(dir), listing),
                      "pass the full name, e.g. --iter " + listing.substr(0, listing.find(',')));
        }
        tried.push_back(ws.display(dir / (iter_number_name(number) + "_<tag>" + suffix)));
        return std::nullopt;
      }
      name = *found;
    }
    fs::path p = dir / (name + suffix);
    std::error_code ec;
    bool ok = suffix.empty() ? is_executable_file(p) : fs::is_regular_file(p, ec);
    tried.push_back(ws.display(p));
    if (!ok) return std::nullopt;
    c.kernel = name;
    return p;
  };
  std::optional<fs::path> found;
  if (task.dsl == "triton") {
    found = resolve_in(srcs, ".py");
    c.kind = legacy ? CandidateKind::legacy_program : CandidateKind::python;
  } else if (legacy) {
    found = resolve_in(bin, "");
    c.kind = CandidateKind::legacy_program;
  } else {
    found = resolve_in(bin, ".so");
    c.kind = CandidateKind::shared_object;
    if (!found && task.dsl == "croqtile") {
      found = resolve_in(bin, "");
      c.kind = CandidateKind::legacy_program;
    }
  }
  if (!found) {
    std::string list;
    for (const auto& t : tried) list += (list.empty() ? "" : ", ") + t;
    throw_not_found(fmt::format("no candidate for {}: looked for {}", iter_flag, list),
                    "build it first (`croq build`), or pass --candidate PATH");
  }
  c.path = *found;
  return c;
}

fs::path measurement_path(const Workspace& ws, const TaskRef& task, const std::string& kernel) {
  return ws.kind_dir(task, ArtifactKind::perf) / ("measure_" + kernel + ".json");
}

fs::path timing_text_path(const Workspace& ws, const TaskRef& task, const CandidateRef& c) {
  const fs::path perf = ws.kind_dir(task, ArtifactKind::perf);
  if (c.iter_number) return perf / ("timing_" + iter_number_name(*c.iter_number) + ".txt");
  return perf / ("timing_" + c.kernel + ".txt");
}

std::string timing_text(const Measurement& m, const std::string& kernel, const std::string& measurement_file) {
  std::string s;
  s += fmt::format("croq measure: {} ({} {}x{}x{}, B {})\n", kernel, m.problem.dtype, m.problem.m, m.problem.n,
                   m.problem.k, m.problem.b_layout);
  s += fmt::format("verdict: {} ({}) {}\n", verdict_name(m.verdict), m.reason, m.detail);
  const Verification& v = m.verification;
  const char* verify = !v.passed ? "SKIPPED" : (*v.passed ? "PASS" : "FAIL");
  s += fmt::format("VERIFY: {} max_abs_err={:.4g} normwise_rel_err={:.3g} mismatches={} nan={}\n", verify,
                   v.max_abs_err, v.normwise_rel_err, v.mismatches, v.nan_count);
  if (m.timing) {
    const Timing& t = *m.timing;
    s += fmt::format("TFLOPS: {:.2f}   time_ms: {:.4f}\n", m.tflops.value_or(0.0), t.median_ms);
    s += fmt::format("median_ms={:.4f} mean_ms={:.4f} min_ms={:.4f} p90_ms={:.4f} max_ms={:.4f} cv={:.4f}{} reps={} "
                     "stop={} timer={} l2_flush={}\n",
                     t.median_ms, t.mean_ms, t.min_ms, t.p90_ms, t.max_ms, t.cv,
                     t.robust_cv ? fmt::format(" robust_cv={:.4f}", *t.robust_cv) : std::string(), t.reps,
                     t.stop_reason, t.method, t.l2_flush);
  }
  s += fmt::format("device: {} {} sm_clock_mhz={} driver={} peak_tflops={:.1f}\n", m.device.name, m.device.uuid,
                   m.device.sm_clock_mhz ? std::to_string(*m.device.sm_clock_mhz) : "n/a", m.device.driver,
                   m.device.peak_tflops);
  s += fmt::format("source: {}  seed: {}  candidate_sha256: {}\n", m.source,
                   m.seed ? std::to_string(*m.seed) : "n/a", m.candidate_sha256);
  s += fmt::format("measurement: {}\n", measurement_file);
  return s;
}

}  // namespace croq
