// The round record: one stored round of a tuning task, as written to idea-log.jsonl (the source
// of truth) and shown as one row of results.tsv (a view). Field names are the seeds'; croq's own
// fields (schema, source, measurement provenance, base, params, ...) sit beside them in `extra`.
//
// idea-log.jsonl line (croq-round-v1):
//   {"round":3,"iter":"iter004","kernel":"iter004_stages4","tflops":512.3,"decision":"KEEP",
//    "bottleneck":"latency_bound","idea":"...","category":"pipeline","expected_gain":"+5%",
//    "timestamp":"2026-11-29T07:12:50.123Z","schema":"croq-round-v1","source":"measured",...}
// results.tsv (a header line, then one row per record):
//   iter  kernel  tflops  decision  bottleneck  idea_summary
// with tab, newline, carriage return and backslash in text escaped as \t \n \r \\.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "croq/util/json.hpp"

namespace croq {

enum class Decision { BASELINE, KEEP, DISCARD, COMPILE_FAIL, VERIFY_FAIL, RUNTIME_FAIL, SEGFAULT, HANG };
const char* decision_name(Decision d);
std::optional<Decision> parse_decision(const std::string& text);  // case-insensitive
// Failures store an attempt id instead of consuming an iteration number.
bool is_failure(Decision d);
// Decisions for which a TFLOPS figure exists.
bool is_measured(Decision d);

// The classifier's categories; "unknown" is refused everywhere.
const std::vector<std::string>& bottleneck_names();
bool is_valid_bottleneck(const std::string& text);
// "n/a" is allowed only for preparation records (round 0: the baseline and the starting kernel).
inline constexpr const char* k_no_bottleneck = "n/a";

const std::vector<std::string>& idea_categories();  // tiling pipeline memory compute misc

inline constexpr const char* k_round_schema = "croq-round-v1";
// Round numbers are 0 (preparation) .. k_max_round_number; larger ones are refused when written
// and make a record unreadable when read (they would not fit the counters that hold them).
inline constexpr int k_max_round_number = 1000000;

struct RoundRecord {
  int round = 0;
  std::string iter;      // "iter004" for measured rounds, "attemptAAAB" for failures
  std::string kernel;    // "iter004_stages4" / "attemptAAAB_stages6" / "iter000_cublas"
  std::optional<double> tflops;
  Decision decision = Decision::DISCARD;
  std::string bottleneck;
  std::string idea;
  std::string category;
  std::string expected_gain;
  std::string timestamp;
  json extra = json::object();  // every other field, preserved as read

  json to_json() const;
  // Tolerant: accepts the seeds' hand-written variants (numbers as strings, "iter" missing but
  // "kernel" present, ...). nullopt with `why` when the object is not a round record.
  static std::optional<RoundRecord> from_json(const json& object, std::string* why = nullptr);

  // iteration number for "iterNNN", nullopt for attempts and unparsable ids
  std::optional<int> iter_number() const;
  std::optional<int> attempt_index() const;
  std::string source() const;  // extra.source, "reported" if absent
  // A measured record carries its measurement's figure (extra.measurement.tflops): that figure when
  // the record's own differs from it (the log was edited), else nullopt.
  std::optional<double> edited_figure() const;
};
// Two TFLOPS figures that are not the same number (beyond the rounding of their JSON form).
bool figures_differ(double a, double b);

// The id part of a kernel name as other tools wrote it: "iter030_bn64" -> "iter030",
// "attemptAAAB_x" -> "attemptAAAB", an id alone -> itself; any tag is accepted (a reader keeps
// what was stored). nullopt when the name starts with neither.
std::optional<std::string> id_of_kernel_name(const std::string& name);

// results.tsv
inline constexpr const char* k_tsv_header = "iter\tkernel\ttflops\tdecision\tbottleneck\tidea_summary";
std::string tsv_escape(const std::string& text);
std::string tsv_unescape(const std::string& text);
std::string tsv_row(const RoundRecord& record);
std::string format_tflops(std::optional<double> tflops);

// Reads results.tsv in croq's form and the older hand-written variants (a leading round column,
// no kernel column, no header). Unreadable rows are skipped with a warning naming the line.
std::vector<RoundRecord> parse_results_tsv(const std::string& content,
                                           std::vector<std::string>* warnings);

// Reads idea-log.jsonl: one record per line; blank lines ignored; a torn last line (no
// newline, not valid JSON) and malformed lines are skipped with a warning naming the line.
struct JsonlParse {
  std::vector<RoundRecord> records;
  std::vector<std::string> warnings;
  int invalid_lines = 0;
  bool torn_tail = false;
};
JsonlParse parse_idea_log(std::string_view content, int first_line_number = 1);

}  // namespace croq
