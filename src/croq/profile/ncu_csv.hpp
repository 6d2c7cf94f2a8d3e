// Reading Nsight Compute CSV exports, in both forms ncu writes:
//
//  raw page   `ncu --import R --page raw --csv`: a header row of metric names ("ID", "Process ID",
//             ..., "Kernel Name", ..., "sm__throughput.avg.pct_of_peak_sustained_elapsed", ...),
//             a units row (its "ID" cell is empty), then one wide row per profiled kernel launch.
//  long form  `ncu --import R --section X --csv` (or `--page details --csv`): one metric per row,
//             with the columns "ID", "Kernel Name", "Block Size", "Grid Size", "Section Name",
//             "Metric Name", "Metric Unit", "Metric Value" (and rule rows whose Metric Name is
//             empty, kept as rule messages).
//  summary    `ncu --print-summary per-kernel --csv` (what the seeds' tools and their tests
//             produce): no "ID" column; one row per kernel (name, block, grid), section and metric,
//             with "Metric Name", "Metric Unit", "Minimum", "Maximum", "Average" (the Average is
//             read). Section metrics are keyed like the long form; a metric requested by name
//             (--metrics, section "Command line profiler metrics") is also keyed by its own name.
//
// Values are quoted and use ncu's default number format: '.' as the decimal point and ',' as the
// thousands separator ("2,297,056", "1,234.5"). A file whose numbers use a decimal comma
// ("22,46", "1.234,5": ncu run under a locale that formats numbers that way, or a spreadsheet
// re-export) is refused as a whole: a cell such as "1,234" cannot be read unambiguously in such a
// file, and guessing would silently scale figures by 1000.
//
// Lines ncu prints around the table ("==PROF== ...", "==WARNING== ...") are skipped. Everything
// else that does not fit the format (a truncated file, an unterminated quote, a row with fewer
// cells than the header, no kernel rows, missing identity columns) is an error that says what is
// wrong, never a partial result.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace croq::profile {

// One metric of one kernel: the text as written, its unit, and the number when it is one.
struct MetricValue {
  std::string text;
  std::string unit;
  std::optional<double> number;  // nullopt for "n/a", "no data", "(384, 1, 1)", names...
};

// Which of the two CSV forms a file is.
enum class CsvForm { raw_page, long_form, summary };
const char* csv_form_name(CsvForm form);

// One profiled kernel launch (one row of the raw page, or one ID of the long form).
struct KernelProfile {
  std::string id;            // ncu's launch ID within the report ("0", "1", ...); summary: the kernel's index
  std::string name;          // "Kernel Name" (demangled as ncu printed it)
  std::string block_size;    // "(384, 1, 1)"
  std::string grid_size;     // "(2, 66, 1)"
  std::string cc;            // "9.0" when present
  std::string process_name;
  // Raw page: keyed by the metric name ("sm__throughput.avg.pct_of_peak_sustained_elapsed").
  // Long form: keyed by "<Section Name>/<Metric Name>" ("GPU Speed Of Light Throughput/Duration").
  std::map<std::string, MetricValue> metrics;
  std::vector<std::string> rule_messages;  // long form: the "Rule Description" of rule rows

  const MetricValue* find(const std::string& key) const;
  std::optional<double> number(const std::string& key) const;
};

struct NcuCsv {
  CsvForm form = CsvForm::raw_page;
  std::vector<KernelProfile> kernels;  // in file order
  size_t columns = 0;                  // raw page: header width
};

// Splits CSV text into rows of cells (RFC 4180 quoting; "" inside quotes is a quote). Throws
// croq::Error(corrupt) on an unterminated quoted cell.
std::vector<std::vector<std::string>> split_csv(std::string_view text);

// Parses a number in ncu's format: "86.920222", "2,297,056", "1,234.5", "-3", "1.5e+06".
// nullopt for text that is not such a number (including decimal-comma forms such as "22,46").
std::optional<double> parse_ncu_number(std::string_view cell);
// True for a cell that reads as a number only with a decimal comma: "22,46", "1.234,5",
// "0,000123". Such a cell makes the whole file refused.
bool looks_like_decimal_comma(std::string_view cell);

// Parses either form (detected from the header). `origin` names the file in error messages.
// Throws croq::Error: usage (not an ncu CSV, missing columns, decimal-comma numbers, no kernels),
// corrupt (truncated: rows shorter than the header, an unterminated quote).
NcuCsv parse_ncu_csv(std::string_view text, const std::string& origin = "the CSV");

}  // namespace croq::profile
