// Nsight Compute CSV reader (ncu_csv.hpp): CSV splitting, ncu's number format, and the two forms.
#include "croq/profile/ncu_csv.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "croq/util/error.hpp"
#include "croq/util/text.hpp"

namespace croq::profile {

const char* csv_form_name(CsvForm form) {
  switch (form) {
    case CsvForm::raw_page: return "raw_page";
    case CsvForm::long_form: return "long_form";
    case CsvForm::summary: return "summary";
  }
  return "?";
}

const MetricValue* KernelProfile::find(const std::string& key) const {
  auto it = metrics.find(key);
  return it == metrics.end() ? nullptr : &it->second;
}

std::optional<double> KernelProfile::number(const std::string& key) const {
  const MetricValue* v = find(key);
  return v ? v->number : std::nullopt;
}

std::vector<std::vector<std::string>> split_csv(std::string_view text) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string cell;
  bool in_quotes = false;
  bool cell_started = false;   // the current cell has content or quotes (an empty line has none)
  size_t quote_line = 0;
  size_t line = 1;
  size_t i = 0;
  const size_t n = text.size();
  auto end_row = [&] {
    if (!row.empty() || cell_started) {
      row.push_back(std::move(cell));
      rows.push_back(std::move(row));
    }
    row.clear();
    cell.clear();
    cell_started = false;
  };
  while (i < n) {
    char c = text[i];
    if (in_quotes) {
      if (c == '"') {
        if (i + 1 < n && text[i + 1] == '"') {
          cell.push_back('"');
          i += 2;
          continue;
        }
        in_quotes = false;
        ++i;
        continue;
      }
      if (c == '\n') ++line;
      cell.push_back(c);
      ++i;
      continue;
    }
    // At the start of a line: skip ncu's own log lines ("==PROF== ...", "==WARNING== ...").
    if (row.empty() && !cell_started && c == '=' && i + 1 < n && text[i + 1] == '=') {
      while (i < n && text[i] != '\n') ++i;
      continue;
    }
    if (c == '"') {
      in_quotes = true;
      cell_started = true;
      quote_line = line;
      ++i;
      continue;
    }
    if (c == ',') {
      row.push_back(std::move(cell));
      cell.clear();
      cell_started = true;  // a following empty cell still belongs to this row
      ++i;
      continue;
    }
    if (c == '\r') {
      ++i;
      continue;
    }
    if (c == '\n') {
      end_row();
      ++line;
      ++i;
      continue;
    }
    cell.push_back(c);
    cell_started = true;
    ++i;
  }
  if (in_quotes) {
    throw Error(ExitCode::corrupt,
                fmt::format("unterminated quoted cell starting on line {}: the file is truncated", quote_line),
                "re-export the CSV (ncu --import <report>.ncu-rep --page raw --csv > file.csv)");
  }
  end_row();
  return rows;
}

namespace {

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// Splits "1,234,567" at `sep` and checks thousands grouping: first group 1-3 digits, then 3 each.
bool grouped(std::string_view s, char sep) {
  size_t p = s.find(sep);
  if (p == std::string_view::npos) return all_digits(s);
  if (p == 0 || p > 3 || !all_digits(s.substr(0, p))) return false;
  while (p != std::string_view::npos) {
    size_t q = s.find(sep, p + 1);
    std::string_view group = s.substr(p + 1, q == std::string_view::npos ? std::string_view::npos : q - p - 1);
    if (group.size() != 3 || !all_digits(group)) return false;
    p = q;
  }
  return true;
}

std::string_view strip_sign(std::string_view s) {
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) s.remove_prefix(1);
  return s;
}

}  // namespace

std::optional<double> parse_ncu_number(std::string_view cell) {
  std::string t = trim(cell);
  std::string_view s = strip_sign(t);
  if (s.empty()) return std::nullopt;
  // Exponent part.
  std::string_view mant = s;
  size_t e = s.find_first_of("eE");
  if (e != std::string_view::npos) {
    std::string_view ex = strip_sign(s.substr(e + 1));
    if (!all_digits(ex)) return std::nullopt;
    mant = s.substr(0, e);
  }
  std::string_view int_part = mant;
  size_t dot = mant.find('.');
  if (dot != std::string_view::npos) {
    std::string_view frac = mant.substr(dot + 1);
    if (!all_digits(frac)) return std::nullopt;
    int_part = mant.substr(0, dot);
  }
  if (!grouped(int_part, ',')) return std::nullopt;
  std::string plain;
  plain.reserve(t.size());
  for (char c : t) {
    if (c != ',') plain.push_back(c);
  }
  char* endp = nullptr;
  double v = std::strtod(plain.c_str(), &endp);
  if (endp != plain.c_str() + plain.size()) return std::nullopt;
  return v;
}

bool looks_like_decimal_comma(std::string_view cell) {
  std::string t = trim(cell);
  std::string_view s = strip_sign(t);
  size_t comma = s.rfind(',');
  if (comma != std::string_view::npos) {
    std::string_view frac = s.substr(comma + 1);
    std::string_view int_part = s.substr(0, comma);
    if (!all_digits(frac) || int_part.empty()) return false;
    if (int_part.find(',') != std::string_view::npos) return false;  // "1,234,567": English grouping
    // "22,46", "0,5", "86,920222": a comma followed by other than exactly three digits.
    if (frac.size() != 3 && all_digits(int_part)) return true;
    // "1.234,5" / "1.234,567": dot-grouped thousands before a decimal comma.
    if (int_part.find('.') != std::string_view::npos && grouped(int_part, '.')) return true;
    return false;
  }
  // "1.234.567": more than one dot can only be dot-grouped thousands.
  size_t first = s.find('.');
  if (first != std::string_view::npos && s.find('.', first + 1) != std::string_view::npos) {
    return grouped(s, '.');
  }
  return false;
}

namespace {

int column_index(const std::vector<std::string>& header, std::string_view name) {
  for (size_t i = 0; i < header.size(); ++i) {
    if (header[i] == name) return static_cast<int>(i);
  }
  return -1;
}

[[noreturn]] void refuse_decimal_comma(const std::string& origin, const std::string& column, const std::string& cell) {
  throw Error(ExitCode::usage,
              fmt::format("{} writes numbers with a decimal comma (\"{}\" in \"{}\"): such a file cannot be "
                          "read unambiguously (\"1,234\" could be 1234 or 1.234)",
                          origin, preview(cell, 40), preview(column, 80)),
              "re-export it with ncu's default number format, e.g. LC_ALL=C ncu --import <report>.ncu-rep "
              "--page raw --csv > file.csv");
}

[[noreturn]] void truncated_row(const std::string& origin, size_t row_number, size_t got, size_t want) {
  throw Error(ExitCode::corrupt,
              fmt::format("{}: row {} has {} cells but the header has {}: the file is truncated or was edited",
                          origin, row_number, got, want),
              "re-export the CSV from the .ncu-rep report (ncu --import <report>.ncu-rep --page raw --csv)");
}

MetricValue make_value(const std::string& text, const std::string& unit) {
  MetricValue v;
  v.text = text;
  v.unit = unit;
  v.number = parse_ncu_number(text);
  return v;
}

// The identity columns every form has.
struct Identity {
  int id = -1, name = -1, block = -1, grid = -1, cc = -1, process = -1;
};

Identity find_identity(const std::vector<std::string>& header) {
  Identity c;
  c.id = column_index(header, "ID");
  c.name = column_index(header, "Kernel Name");
  c.block = column_index(header, "Block Size");
  c.grid = column_index(header, "Grid Size");
  c.cc = column_index(header, "CC");
  c.process = column_index(header, "Process Name");
  return c;
}

std::string cell_at(const std::vector<std::string>& row, int i) {
  return i >= 0 && static_cast<size_t>(i) < row.size() ? row[static_cast<size_t>(i)] : std::string();
}

void fill_identity(KernelProfile& k, const std::vector<std::string>& row, const Identity& c) {
  k.id = cell_at(row, c.id);
  k.name = cell_at(row, c.name);
  k.block_size = cell_at(row, c.block);
  k.grid_size = cell_at(row, c.grid);
  k.cc = cell_at(row, c.cc);
  k.process_name = cell_at(row, c.process);
}

NcuCsv parse_raw(const std::vector<std::vector<std::string>>& rows, const std::string& origin) {
  NcuCsv out;
  out.form = CsvForm::raw_page;
  const auto& header = rows[0];
  out.columns = header.size();
  Identity c = find_identity(header);
  size_t first = 1;
  std::vector<std::string> units(header.size());
  if (rows.size() > 1 && cell_at(rows[1], c.id).empty()) {
    if (rows[1].size() != header.size()) truncated_row(origin, 2, rows[1].size(), header.size());
    units = rows[1];
    first = 2;
  }
  for (size_t r = first; r < rows.size(); ++r) {
    const auto& row = rows[r];
    if (row.size() != header.size()) truncated_row(origin, r + 1, row.size(), header.size());
    KernelProfile k;
    fill_identity(k, row, c);
    for (size_t i = 0; i < header.size(); ++i) {
      if (static_cast<int>(i) == c.id || static_cast<int>(i) == c.name) continue;
      if (looks_like_decimal_comma(row[i])) refuse_decimal_comma(origin, header[i], row[i]);
      k.metrics.emplace(header[i], make_value(row[i], units[i]));
    }
    out.kernels.push_back(std::move(k));
  }
  return out;
}

NcuCsv parse_long(const std::vector<std::vector<std::string>>& rows, const std::string& origin) {
  NcuCsv out;
  out.form = CsvForm::long_form;
  const auto& header = rows[0];
  out.columns = header.size();
  Identity c = find_identity(header);
  int section = column_index(header, "Section Name");
  int metric = column_index(header, "Metric Name");
  int unit = column_index(header, "Metric Unit");
  int value = column_index(header, "Metric Value");
  int rule_desc = column_index(header, "Rule Description");
  std::vector<std::string> missing;
  if (metric < 0) missing.push_back("Metric Name");
  if (unit < 0) missing.push_back("Metric Unit");
  if (value < 0) missing.push_back("Metric Value");
  if (!missing.empty()) {
    throw Error(ExitCode::usage,
                fmt::format("{} is a per-section CSV without the column(s) {}", origin, fmt::join(missing, ", ")),
                "export it with ncu --import <report>.ncu-rep --section <name> --csv (or --page raw --csv)");
  }
  std::map<std::string, size_t> by_id;  // launch ID (+ name) -> index in out.kernels
  for (size_t r = 1; r < rows.size(); ++r) {
    const auto& row = rows[r];
    // ncu leaves the trailing rule columns off metric rows ("...","Metric Value",) and the metric
    // columns empty on rule rows: every row must reach the Metric Value column, no further.
    if (row.size() < static_cast<size_t>(std::max({metric, unit, value})) + 1) {
      truncated_row(origin, r + 1, row.size(), header.size());
    }
    std::string key = cell_at(row, c.id) + "\x1f" + cell_at(row, c.name);
    auto it = by_id.find(key);
    if (it == by_id.end()) {
      KernelProfile k;
      fill_identity(k, row, c);
      out.kernels.push_back(std::move(k));
      it = by_id.emplace(key, out.kernels.size() - 1).first;
    }
    KernelProfile& k = out.kernels[it->second];
    std::string mname = cell_at(row, metric);
    if (mname.empty()) {
      std::string d = cell_at(row, rule_desc);
      if (!d.empty()) k.rule_messages.push_back(d);
      continue;
    }
    const std::string& text = row[static_cast<size_t>(value)];
    if (looks_like_decimal_comma(text)) refuse_decimal_comma(origin, mname, text);
    std::string sec = cell_at(row, section);  // the section column may lie past a short row's end
    k.metrics.emplace(sec + "/" + mname, make_value(text, row[static_cast<size_t>(unit)]));
  }
  return out;
}

// `--print-summary per-kernel --csv`: one row per (kernel, section, metric), the Average read.
NcuCsv parse_summary(const std::vector<std::vector<std::string>>& rows, const std::string& origin) {
  NcuCsv out;
  out.form = CsvForm::summary;
  const auto& header = rows[0];
  out.columns = header.size();
  Identity c = find_identity(header);
  int section = column_index(header, "Section Name");
  int metric = column_index(header, "Metric Name");
  int unit = column_index(header, "Metric Unit");
  int value = column_index(header, "Average");
  int pid = column_index(header, "Process ID");
  std::vector<std::string> missing;
  if (unit < 0) missing.push_back("Metric Unit");
  if (value < 0) missing.push_back("Average");
  if (!missing.empty()) {
    throw Error(ExitCode::usage,
                fmt::format("{} is a summary CSV without the column(s) {}", origin, fmt::join(missing, ", ")),
                "export it with ncu --import <report>.ncu-rep --print-summary per-kernel --csv (or --page raw --csv)");
  }
  const size_t need = static_cast<size_t>(std::max({metric, unit, value, c.name})) + 1;
  std::map<std::string, size_t> by_kernel;
  for (size_t r = 1; r < rows.size(); ++r) {
    const auto& row = rows[r];
    if (row.size() < need) truncated_row(origin, r + 1, row.size(), header.size());
    std::string key = cell_at(row, pid) + "\x1f" + cell_at(row, c.name) + "\x1f" + cell_at(row, c.block) + "\x1f" +
                      cell_at(row, c.grid);
    auto it = by_kernel.find(key);
    if (it == by_kernel.end()) {
      KernelProfile k;
      fill_identity(k, row, c);
      k.id = std::to_string(out.kernels.size());
      out.kernels.push_back(std::move(k));
      it = by_kernel.emplace(key, out.kernels.size() - 1).first;
    }
    KernelProfile& k = out.kernels[it->second];
    const std::string mname = cell_at(row, metric);
    if (mname.empty()) continue;
    const std::string& text = row[static_cast<size_t>(value)];
    if (looks_like_decimal_comma(text)) refuse_decimal_comma(origin, mname, text);
    const MetricValue v = make_value(text, row[static_cast<size_t>(unit)]);
    const std::string sec = cell_at(row, section);
    k.metrics.emplace(sec + "/" + mname, v);
    if (sec.empty() || sec == "Command line profiler metrics" || mname.find("__") != std::string::npos) {
      k.metrics.emplace(mname, v);
    }
  }
  return out;
}

}  // namespace

NcuCsv parse_ncu_csv(std::string_view text, const std::string& origin) {
  if (trim(text).empty()) {
    throw Error(ExitCode::usage, fmt::format("{} is empty: ncu wrote no profile", origin),
                "check the ncu log: the kernel filter or the NVTX range may have matched no launch");
  }
  // ncu prints the profiled program's own output and its log lines before the table when both go
  // to one stream: the table starts at the header line ("ID",... or ID,...).
  size_t start = 0;
  bool found_header = false;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    std::string_view line = text.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    std::string_view t = line;
    while (!t.empty() && (t.front() == ' ' || t.front() == '\t' || t.front() == '\xef' || t.front() == '\xbb' ||
                          t.front() == '\xbf')) {
      t.remove_prefix(1);  // blanks and a UTF-8 byte-order mark
    }
    const bool summary_header = t.find("Kernel Name") != std::string_view::npos &&
                                t.find("Metric Name") != std::string_view::npos &&
                                t.find("Average") != std::string_view::npos;
    if (starts_with(t, "\"ID\",") || starts_with(t, "ID,") || summary_header) {
      start = pos;
      found_header = true;
      break;
    }
    if (end == std::string_view::npos) break;
    pos = end + 1;
  }
  if (found_header) text = text.substr(start);
  auto rows = split_csv(text);
  if (rows.empty()) {
    throw Error(ExitCode::usage, fmt::format("{} holds no CSV rows (only ncu log lines)", origin),
                "ncu profiled no kernel: check the kernel filter and the NVTX range");
  }
  const auto& header = rows[0];
  Identity c = find_identity(header);
  if (c.id < 0 && c.name >= 0 && column_index(header, "Metric Name") >= 0 && column_index(header, "Average") >= 0) {
    NcuCsv out = parse_summary(rows, origin);
    if (out.kernels.empty()) {
      throw Error(ExitCode::usage, fmt::format("{} has a header but no kernel rows: the profile is empty", origin),
                  "ncu captured no launch: check the --kernel-name filter and the NVTX range (croq_candidate)");
    }
    return out;
  }
  std::vector<std::string> missing;
  if (c.id < 0) missing.push_back("ID");
  if (c.name < 0) missing.push_back("Kernel Name");
  if (!missing.empty()) {
    throw Error(ExitCode::usage,
                fmt::format("{} is not an Nsight Compute CSV: its header lacks {} (it starts with \"{}\")", origin,
                            fmt::join(missing, " and "), preview(header.empty() ? "" : header[0], 40)),
                "export with ncu --import <report>.ncu-rep --page raw --csv");
  }
  bool long_form = column_index(header, "Metric Name") >= 0 || column_index(header, "Metric Value") >= 0 ||
                   column_index(header, "Section Name") >= 0;
  NcuCsv out = long_form ? parse_long(rows, origin) : parse_raw(rows, origin);
  if (out.kernels.empty()) {
    throw Error(ExitCode::usage,
                fmt::format("{} has a header but no kernel rows: the profile is empty", origin),
                "ncu captured no launch: check the --kernel-name filter and the NVTX range (croq_candidate)");
  }
  return out;
}

}  // namespace croq::profile
