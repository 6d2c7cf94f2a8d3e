// Checkpoint verification: does what was built match what was planned? (the seeds'
// checkpoint_write.sh verify, exit 3 on significant drift). Compares the planned iteration number
// with the built one and the plan's levers with the lines that changed between the candidate's
// source and its base's source.
#pragma once
#include <string>
#include <vector>

#include "croq/ledger/documents.hpp"
#include "croq/util/json.hpp"

namespace croq {

struct LineDiff {
  std::vector<std::string> added;    // lines of the candidate not in the base (multiset difference)
  std::vector<std::string> removed;  // lines of the base not in the candidate
};
LineDiff diff_lines(const std::string& base, const std::string& candidate);
// Identifiers of #define lines and constexpr constants among changed lines: the "macros" a change
// touched ("MATMUL_STAGES", "kStages", ...).
std::vector<std::string> changed_macros(const LineDiff& diff);

struct DriftReport {
  bool significant = false;
  std::vector<std::string> findings;
  std::vector<std::string> levers_found;
  std::vector<std::string> levers_missing;
  std::vector<std::string> changed_macros;
  size_t added = 0;
  size_t removed = 0;
  json to_json() const;
};

// base_source / candidate_source: file contents ("" when missing; `*_present` says which).
DriftReport assess_drift(const Checkpoint& plan, int built_iter, bool candidate_present,
                         const std::string& candidate_source, bool base_present, const std::string& base_source);

}  // namespace croq
