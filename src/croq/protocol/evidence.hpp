// The evidence log of a task (logs/<key>/<model>/evidence.jsonl): one line per artifact a croq verb
// produced — a profile, a build, a checkpoint verification, a measurement, a SASS comparison —
// with the file's sha256. The protocol's guards decide from these entries and the files they
// name, never from flags a driver sets: a guard accepts an entry only if its file still exists
// with the recorded hash.
//
// Line (croq-evidence-v1):
//   {"kind":"profile","kernel":"iter004_stages4","iter":"iter004","round":5,
//    "file":"perf/<key>/<model>/ncu_iter004_stages4_round5.csv","sha256":"...",
//    "timestamp":"2026-11-29T07:12:50.123Z","summary":{"bottleneck":"latency_bound",...}}
#pragma once
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "croq/util/json.hpp"
#include "croq/workspace/workspace.hpp"

namespace croq {

enum class EvidenceKind { profile, build, verify, measure, sass_compare, baseline_profile, rerun };
const char* evidence_kind_name(EvidenceKind k);
std::optional<EvidenceKind> parse_evidence_kind(const std::string& s);

struct Evidence {
  EvidenceKind kind = EvidenceKind::profile;
  std::string kernel;   // the kernel the artifact is about ("iter004_stages4", "iter000_cublas")
  std::string iter;     // "iter004"
  int round = 0;
  std::string file;     // relative to the workspace root
  std::string sha256;
  std::string timestamp;
  json summary = json::object();

  json to_json() const;
  static std::optional<Evidence> from_json(const json& j);
};

fs::path evidence_log_path(const Workspace& ws, const TaskRef& task);

// Appends an entry for `file` (hashing it now). Throws Error if the file does not exist.
Evidence record_evidence(const Workspace& ws, const TaskRef& task, EvidenceKind kind, const std::string& kernel,
                         const fs::path& file, const json& summary = json::object(), int round = 0);

// All entries, oldest first (malformed lines skipped).
std::vector<Evidence> read_evidence(const Workspace& ws, const TaskRef& task);

// The entry's file (absolute) when it still exists with the recorded hash; nullopt otherwise.
std::optional<fs::path> intact_file(const Workspace& ws, const Evidence& e);

// The newest entry of `kind` for `kernel` (any kernel when empty) whose file still exists with
// the recorded hash.
std::optional<Evidence> latest_valid_evidence(const Workspace& ws, const TaskRef& task, EvidenceKind kind,
                                              const std::string& kernel = {});

}  // namespace croq
