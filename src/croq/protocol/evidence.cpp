// The evidence log (evidence.hpp).
#include "croq/protocol/evidence.hpp"

#include <fmt/format.h>

#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/hash.hpp"
#include "croq/util/read_count.hpp"
#include "croq/util/time.hpp"
#include "croq/workspace/ids.hpp"

namespace croq {

const char* evidence_kind_name(EvidenceKind k) {
  switch (k) {
    case EvidenceKind::profile: return "profile";
    case EvidenceKind::build: return "build";
    case EvidenceKind::verify: return "verify";
    case EvidenceKind::measure: return "measure";
    case EvidenceKind::sass_compare: return "sass_compare";
    case EvidenceKind::baseline_profile: return "baseline_profile";
    case EvidenceKind::rerun: return "rerun";
  }
  return "?";
}

std::optional<EvidenceKind> parse_evidence_kind(const std::string& s) {
  for (auto k : {EvidenceKind::profile, EvidenceKind::build, EvidenceKind::verify, EvidenceKind::measure,
                 EvidenceKind::sass_compare, EvidenceKind::baseline_profile, EvidenceKind::rerun}) {
    if (s == evidence_kind_name(k)) return k;
  }
  return std::nullopt;
}

json Evidence::to_json() const {
  return {{"schema", "croq-evidence-v1"}, {"kind", evidence_kind_name(kind)}, {"kernel", kernel}, {"iter", iter},
          {"round", round}, {"file", file}, {"sha256", sha256}, {"timestamp", timestamp}, {"summary", summary}};
}

std::optional<Evidence> Evidence::from_json(const json& j) {
  auto kind = parse_evidence_kind(get_string(j, "kind").value_or(""));
  if (!kind) return std::nullopt;
  Evidence e;
  e.kind = *kind;
  e.kernel = get_string(j, "kernel").value_or("");
  e.iter = get_string(j, "iter").value_or("");
  e.round = static_cast<int>(get_integer(j, "round").value_or(0));
  e.file = get_string(j, "file").value_or("");
  e.sha256 = get_string(j, "sha256").value_or("");
  e.timestamp = get_string(j, "timestamp").value_or("");
  if (j.contains("summary") && j["summary"].is_object()) e.summary = j["summary"];
  if (e.file.empty() || e.sha256.empty()) return std::nullopt;
  return e;
}

fs::path evidence_log_path(const Workspace& ws, const TaskRef& task) {
  return ws.kind_dir(task, ArtifactKind::logs) / "evidence.jsonl";
}

Evidence record_evidence(const Workspace& ws, const TaskRef& task, EvidenceKind kind, const std::string& kernel,
                         const fs::path& file, const json& summary, int round) {
  std::error_code ec;
  fs::path abs = file.is_absolute() ? file : ws.root() / file;
  if (!fs::exists(abs, ec)) {
    throw Error(ExitCode::not_found, fmt::format("evidence file {} does not exist", abs.string()));
  }
  Evidence e;
  e.kind = kind;
  e.kernel = kernel;
  if (auto id = try_parse_iter_id(kernel)) e.iter = id->number_name();
  e.round = round;
  e.file = ws.display(abs);
  e.sha256 = sha256_file(abs);
  e.timestamp = now_iso8601();
  e.summary = summary.is_object() ? summary : json::object();
  append_line(evidence_log_path(ws, task), dump_compact(e.to_json()), /*durable=*/true, {}, ws.root());
  return e;
}

std::vector<Evidence> read_evidence(const Workspace& ws, const TaskRef& task) {
  count_state_read(StateDoc::evidence);
  std::vector<Evidence> out;
  auto text = read_file(evidence_log_path(ws, task));
  if (!text) return out;
  size_t s = 0;
  while (s < text->size()) {
    size_t e = text->find('\n', s);
    if (e == std::string::npos) break;  // a torn last line is ignored
    std::string_view line(text->data() + s, e - s);
    s = e + 1;
    if (auto j = try_parse_json(line)) {
      if (auto ev = Evidence::from_json(*j)) out.push_back(std::move(*ev));
    }
  }
  return out;
}

std::optional<fs::path> intact_file(const Workspace& ws, const Evidence& e) {
  fs::path abs = fs::path(e.file).is_absolute() ? fs::path(e.file) : ws.root() / e.file;
  std::error_code ec;
  if (!fs::exists(abs, ec)) return std::nullopt;
  try {
    if (sha256_file(abs) != e.sha256) return std::nullopt;
  } catch (const Error&) {
    return std::nullopt;
  }
  return abs;
}

std::optional<Evidence> latest_valid_evidence(const Workspace& ws, const TaskRef& task, EvidenceKind kind,
                                              const std::string& kernel) {
  auto all = read_evidence(ws, task);
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    if (it->kind != kind) continue;
    if (!kernel.empty() && it->kernel != kernel) continue;
    if (intact_file(ws, *it)) return *it;
  }
  return std::nullopt;
}

}  // namespace croq
