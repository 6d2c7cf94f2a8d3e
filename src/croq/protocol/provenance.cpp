// Provenance of measurement documents (provenance.hpp).
#include "croq/protocol/provenance.hpp"

#include <fmt/format.h>

#include "croq/protocol/protocol.hpp"
#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/workspace/ids.hpp"

namespace croq {

namespace {

std::string short_hash(const std::string& sha) { return sha.size() > 12 ? sha.substr(0, 12) : sha; }

MeasurementProvenance untrusted(std::string problem, std::string hint, std::optional<Evidence> entry = std::nullopt) {
  MeasurementProvenance p;
  p.problem = std::move(problem);
  p.hint = std::move(hint);
  p.entry = std::move(entry);
  return p;
}

}  // namespace

MeasurementProvenance check_measurement_provenance(const Workspace& ws, const TaskRef& task, const MeasurementFile& file,
                                                   const std::string& kernel, bool require_build) {
  const std::string shown = ws.display(fs::absolute(file.path));
  const bool baseline = kernel.rfind("iter000_", 0) == 0;
  const std::string remeasure =
      baseline ? "measure it with `croq baseline --force`, then store the file it writes"
               : fmt::format("measure it with `croq measure --iter {}`, then store the file it writes", kernel);
  const auto evidence = read_evidence(ws, task);
  std::optional<Evidence> exact, same_content, same_file;
  size_t exact_at = 0;  // its place in the log: builds before it may vouch for the candidate
  for (size_t i = evidence.size(); i-- > 0;) {
    const Evidence& e = evidence[i];
    if (e.kind != EvidenceKind::measure) continue;
    const bool here = e.file == shown;
    const bool content = e.sha256 == file.sha256;
    if (here && content) {
      exact = e;
      exact_at = i;
      break;
    }
    if (content && !same_content) same_content = e;
    if (here && !same_file) same_file = e;
  }
  if (!exact) {
    if (same_content) {
      return untrusted(fmt::format("{} is a copy: croq wrote this measurement as {}", shown, same_content->file),
                       fmt::format("pass --measurement {}", same_content->file));
    }
    if (same_file) {
      return untrusted(fmt::format("{} was changed after croq wrote it (its sha256 is {}, croq recorded {} on {})", shown,
                                   short_hash(file.sha256), short_hash(same_file->sha256), same_file->timestamp),
                       remeasure);
    }
    return untrusted(fmt::format("{} is not a measurement croq wrote for task {}: no entry of its evidence log has this "
                                 "content (a file written by hand, or measured for another task)",
                                 shown, task.id()),
                     remeasure);
  }
  const Measurement& m = file.measurement;
  if (exact->kernel != kernel && !(baseline && exact->kernel.rfind("iter000_", 0) == 0)) {
    return untrusted(fmt::format("{} is croq's measurement of {}, not of {}", shown, exact->kernel, kernel),
                     fmt::format("store {} with its own measurement", kernel), exact);
  }
  if (baseline != (m.kind == "baseline")) {
    return untrusted(baseline ? fmt::format("{} is a candidate's measurement, not the library baseline's", shown)
                              : fmt::format("{} is the library baseline's measurement, not a candidate's", shown),
                     remeasure, exact);
  }
  if (baseline) return {true, {}, {}, exact};
  // The candidate measured must be the binary croq built for this kernel (the newest build
  // before the measurement).
  std::optional<Evidence> build;
  for (size_t i = 0; i < exact_at; ++i) {
    if (evidence[i].kind == EvidenceKind::build && evidence[i].kernel == kernel) build = evidence[i];
  }
  const std::string built_sha = build ? get_string(build->summary, "output_sha256").value_or("") : "";
  if (!build || built_sha.empty()) {
    if (!require_build) return {true, {}, {}, exact};
    return untrusted(build ? fmt::format("the build of {} recorded no output, so the measured candidate cannot be "
                                         "matched to what croq built",
                                         kernel)
                           : fmt::format("{} was never built by `croq build` before it was measured", kernel),
                     fmt::format("croq build --iter {}; then measure and store again", kernel), exact);
  }
  if (m.candidate_sha256 != built_sha) {
    return untrusted(fmt::format("the measured candidate (sha256 {}) is not the binary `croq build` made for {} "
                                 "(sha256 {})",
                                 m.candidate_sha256.empty() ? "none" : short_hash(m.candidate_sha256), kernel,
                                 short_hash(built_sha)),
                     fmt::format("croq build --iter {}; then measure and store again", kernel), exact);
  }
  return {true, {}, {}, exact};
}

MeasurementProvenance vet_measurement(const Workspace& ws, const TaskRef& task, StoreRequest& req,
                                      const MeasurementFile& file, const std::string& kernel) {
  const auto cfg = read_protocol(ws, task);
  const bool enforced = cfg && cfg->enforced;
  MeasurementProvenance p = check_measurement_provenance(ws, task, file, kernel, enforced);
  if (p.trusted) return p;
  if (enforced) {
    refuse({Step::STORE, "measurement_from_croq",
            p.problem + "; in an enforced task only a measurement croq wrote for this task, of what croq built, "
                        "backs a stored figure",
            p.hint});
  }
  req.source = "unverified";
  if (req.extra.contains("measurement") && req.extra["measurement"].is_object()) {
    req.extra["measurement"]["unverified"] = p.problem;
  }
  return p;
}

void apply_build_facts(const Workspace& ws, const TaskRef& task, StoreRequest& req, const std::string& kernel) {
  std::optional<Evidence> build;  // the newest build of the kernel
  for (const Evidence& e : read_evidence(ws, task)) {
    if (e.kind == EvidenceKind::build && e.kernel == kernel) build = e;
  }
  if (!build) return;
  const auto path = intact_file(ws, *build);
  if (!path) {
    if (task.dsl != "croqtile") return;  // only CroqTile's build documents carry facts for the record
    throw_usage(fmt::format("the build document of {} was changed or removed after croq build wrote it", kernel),
                fmt::format("croq build --iter {}; then measure and store again", kernel));
  }
  const auto text = read_file(*path);
  const auto doc = text ? try_parse_json(*text) : std::nullopt;
  if (!doc || !doc->is_object()) return;
  if (!doc->contains("cu_finetuned") || !(*doc)["cu_finetuned"].is_boolean()) return;
  const bool finetuned = (*doc)["cu_finetuned"].get<bool>();
  if (req.extra.contains("cu_finetuned") && req.extra["cu_finetuned"] != json(finetuned)) {
    throw_usage(fmt::format("--extra's cu_finetuned ({}) contradicts the build of {}: its .cu {} what choreo generated "
                            "for the .co",
                            dump_compact(req.extra["cu_finetuned"]), kernel, finetuned ? "differs from" : "is"),
                "cu_finetuned is recorded from the build: drop it from --extra");
  }
  if (!finetuned && req.extra.contains("co_bypassed") && req.extra["co_bypassed"] == json(true)) {
    throw_usage(fmt::format("--extra's co_bypassed (true) contradicts the build of {}: its .cu is what choreo generated "
                            "for the .co, so the .co was not bypassed",
                            kernel),
                "store co_bypassed: true only for a kernel whose .cu was written or tuned by hand");
  }
  req.extra["cu_finetuned"] = finetuned;
}

}  // namespace croq
