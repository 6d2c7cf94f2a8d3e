// Round records and their two encodings (records.hpp).
#include "croq/ledger/records.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "croq/util/number.hpp"
#include "croq/util/text.hpp"
#include "croq/workspace/ids.hpp"

namespace croq {

const char* decision_name(Decision d) {
  switch (d) {
    case Decision::BASELINE: return "BASELINE";
    case Decision::KEEP: return "KEEP";
    case Decision::DISCARD: return "DISCARD";
    case Decision::COMPILE_FAIL: return "COMPILE_FAIL";
    case Decision::VERIFY_FAIL: return "VERIFY_FAIL";
    case Decision::RUNTIME_FAIL: return "RUNTIME_FAIL";
    case Decision::SEGFAULT: return "SEGFAULT";
    case Decision::HANG: return "HANG";
  }
  return "?";
}

std::optional<Decision> parse_decision(const std::string& text) {
  std::string u = text;
  std::transform(u.begin(), u.end(), u.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  for (Decision d : {Decision::BASELINE, Decision::KEEP, Decision::DISCARD, Decision::COMPILE_FAIL,
                     Decision::VERIFY_FAIL, Decision::RUNTIME_FAIL, Decision::SEGFAULT, Decision::HANG}) {
    if (u == decision_name(d)) return d;
  }
  return std::nullopt;
}

bool is_failure(Decision d) {
  return d == Decision::COMPILE_FAIL || d == Decision::VERIFY_FAIL || d == Decision::RUNTIME_FAIL ||
         d == Decision::SEGFAULT || d == Decision::HANG;
}

bool is_measured(Decision d) { return d == Decision::BASELINE || d == Decision::KEEP || d == Decision::DISCARD; }

const std::vector<std::string>& bottleneck_names() {
  static const std::vector<std::string> names = {"memory_bound", "compute_bound", "latency_bound",
                                                 "launch_bound", "mixed"};
  return names;
}

bool is_valid_bottleneck(const std::string& text) {
  const auto& n = bottleneck_names();
  return std::find(n.begin(), n.end(), text) != n.end();
}

const std::vector<std::string>& idea_categories() {
  static const std::vector<std::string> c = {"tiling", "pipeline", "memory", "compute", "misc"};
  return c;
}

json RoundRecord::to_json() const {
  json j = json::object();
  j["round"] = round;
  j["iter"] = iter;
  j["kernel"] = kernel;
  if (tflops) j["tflops"] = *tflops;
  else j["tflops"] = nullptr;
  j["decision"] = decision_name(decision);
  j["bottleneck"] = bottleneck;
  j["idea"] = idea;
  j["category"] = category;
  j["expected_gain"] = expected_gain;
  j["timestamp"] = timestamp;
  for (auto it = extra.begin(); it != extra.end(); ++it) {
    if (!j.contains(it.key())) j[it.key()] = it.value();
  }
  return j;
}

std::optional<std::string> id_of_kernel_name(const std::string& name) {
  auto digits = [&](size_t from, size_t& end) {
    end = from;
    while (end < name.size() && std::isdigit(static_cast<unsigned char>(name[end]))) ++end;
    return end - from;
  };
  size_t end = 0;
  if (name.rfind("iter", 0) == 0) {
    const size_t n = digits(4, end);
    if (n < 3 || n > 6) return std::nullopt;
    if (end == name.size()) return name;
    if (name[end] != '_' || end + 1 == name.size()) return std::nullopt;
    return name.substr(0, end);
  }
  if (name.rfind("attempt", 0) == 0 && name.size() >= 11) {
    for (size_t i = 7; i < 11; ++i) {
      if (name[i] < 'A' || name[i] > 'Z') return std::nullopt;
    }
    if (name.size() == 11) return name;
    if (name[11] != '_' || name.size() == 12) return std::nullopt;
    return name.substr(0, 11);
  }
  return std::nullopt;
}

std::optional<RoundRecord> RoundRecord::from_json(const json& o, std::string* why) {
  auto fail = [&](const std::string& w) -> std::optional<RoundRecord> {
    if (why) *why = w;
    return std::nullopt;
  };
  if (!o.is_object()) return fail("not a JSON object");
  RoundRecord r;
  auto round = get_integer(o, "round");
  if (round && (*round < 0 || *round > k_max_round_number)) {
    return fail(fmt::format("round {} is outside 0..{}", *round, k_max_round_number));
  }
  r.round = round ? static_cast<int>(*round) : 0;
  r.iter = get_string(o, "iter").value_or("");
  r.kernel = get_string(o, "kernel").value_or("");
  if (r.iter.empty() && !r.kernel.empty()) {
    // Hand-written variant: only the kernel name; derive the id part before the tag.
    if (auto id = id_of_kernel_name(r.kernel)) r.iter = *id;
  }
  if (r.iter.empty()) return fail("no \"iter\" or \"kernel\" field");
  // Hand-written variant: the full kernel name in "iter" ("iter030_bn64"): the id is the part
  // before the tag, the name the kernel's when none is given.
  if (auto id = id_of_kernel_name(r.iter); id && *id != r.iter) {
    if (r.kernel.empty()) r.kernel = r.iter;
    r.iter = *id;
  }
  r.tflops = get_number(o, "tflops");
  if (r.tflops && !std::isfinite(*r.tflops)) r.tflops.reset();
  auto dec = get_string(o, "decision");
  if (!dec) return fail("no \"decision\" field");
  auto d = parse_decision(*dec);
  if (!d) return fail("unknown decision '" + *dec + "'");
  r.decision = *d;
  r.bottleneck = get_string(o, "bottleneck").value_or("");
  r.idea = get_string(o, "idea").value_or(get_string(o, "idea_summary").value_or(""));
  r.category = get_string(o, "category").value_or("");
  r.expected_gain = get_string(o, "expected_gain").value_or("");
  r.timestamp = get_string(o, "timestamp").value_or("");
  static const char* seed_fields[] = {"round", "iter", "kernel", "tflops", "decision", "bottleneck",
                                      "idea", "category", "expected_gain", "timestamp"};
  for (auto it = o.begin(); it != o.end(); ++it) {
    bool seed = false;
    for (const char* f : seed_fields) seed = seed || it.key() == f;
    if (!seed) r.extra[it.key()] = it.value();
  }
  return r;
}

std::optional<int> RoundRecord::iter_number() const {
  if (iter.rfind("iter", 0) != 0 || iter.size() < 7) return std::nullopt;
  std::string digits = iter.substr(4);
  auto us = digits.find('_');
  if (us != std::string::npos) digits = digits.substr(0, us);
  if (digits.empty() || digits.size() > 6 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    return std::nullopt;
  }
  return std::stoi(digits);
}

std::optional<int> RoundRecord::attempt_index() const {
  if (iter.rfind("attempt", 0) != 0 || iter.size() < 11) return std::nullopt;
  return parse_attempt_letters(iter.substr(7, 4));
}

std::string RoundRecord::source() const {
  if (auto s = get_string(extra, "source")) return *s;
  return "reported";
}

bool figures_differ(double a, double b) { return std::fabs(a - b) > 1e-6 * std::max(std::fabs(a), std::fabs(b)); }

std::optional<double> RoundRecord::edited_figure() const {
  if (!tflops || source() != "measured" || !extra.contains("measurement") || !extra["measurement"].is_object()) {
    return std::nullopt;
  }
  const json& m = extra["measurement"];
  if (!m.contains("tflops") || !m["tflops"].is_number()) return std::nullopt;
  const double measured = m["tflops"].get<double>();
  return figures_differ(*tflops, measured) ? std::optional<double>(measured) : std::nullopt;
}

std::string tsv_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    switch (c) {
      case '\t': out += "\\t"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\\': out += "\\\\"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          // Other control bytes (ESC starts terminal escape sequences) never reach the file raw.
          out += fmt::format("\\x{:02x}", c);
        } else if (c == 0xc2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
                   static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
          // The C1 controls U+0080..U+009F (UTF-8 C2 80..C2 9F): CSI (U+009B) is an escape too.
          out += fmt::format("\\xc2\\x{:02x}", static_cast<unsigned char>(text[++i]));
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string tsv_unescape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size()) {
      char n = text[i + 1];
      if (n == 't') { out += '\t'; ++i; continue; }
      if (n == 'n') { out += '\n'; ++i; continue; }
      if (n == 'r') { out += '\r'; ++i; continue; }
      if (n == '\\') { out += '\\'; ++i; continue; }
      if (n == 'x' && i + 3 < text.size() && hex_digit(text[i + 2]) >= 0 && hex_digit(text[i + 3]) >= 0) {
        out += static_cast<char>(hex_digit(text[i + 2]) * 16 + hex_digit(text[i + 3]));
        i += 3;
        continue;
      }
    }
    out += text[i];
  }
  return out;
}

std::string format_tflops(std::optional<double> tflops) {
  if (!tflops) return "0.00";
  return fmt::format("{:.2f}", *tflops);
}

std::string tsv_row(const RoundRecord& r) {
  return fmt::format("{}\t{}\t{}\t{}\t{}\t{}", tsv_escape(r.iter), tsv_escape(r.kernel),
                     format_tflops(r.tflops), decision_name(r.decision), tsv_escape(r.bottleneck),
                     tsv_escape(r.idea));
}

namespace {

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> cols;
  size_t s = 0;
  while (true) {
    size_t e = line.find('\t', s);
    cols.push_back(line.substr(s, e == std::string::npos ? std::string::npos : e - s));
    if (e == std::string::npos) break;
    s = e + 1;
  }
  return cols;
}

std::string trim_cell(std::string s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == ' ')) s.pop_back();
  size_t i = 0;
  while (i < s.size() && s[i] == ' ') ++i;
  return s.substr(i);
}

// The field a results.tsv column croq does not read is kept under: its own name, or "tsv_<name>"
// when croq gives that name a meaning of its own (source, measurement, schema, ...): a row of
// another tool's table never says where a figure came from (the reader marks it source: tsv).
std::string tsv_column_field(const std::string& name, const std::string& lower) {
  static const std::set<std::string> reserved = {"schema", "source", "measurement", "planned_iter", "task_uid",
                                                 "closed_by", "attempt", "reason", "build_log"};
  return reserved.count(lower) ? "tsv_" + name : name;
}

}  // namespace

std::vector<RoundRecord> parse_results_tsv(const std::string& content,
                                           std::vector<std::string>* warnings) {
  std::vector<RoundRecord> out;
  // Column positions; -1 when absent.
  int c_round = -1, c_iter = 0, c_kernel = 1, c_tflops = 2, c_decision = 3, c_bottleneck = 4, c_idea = 5;
  int c_category = -1, c_gain = -1, c_timestamp = -1;
  size_t width = 6;                                  // columns of a row as the header (or variant) says
  std::vector<std::pair<int, std::string>> others;   // other named columns: kept in the record's extra
  bool first_row = true;  // the first non-blank line: a header, or the row that shows the variant
  size_t s = 0;
  int line_no = 0;
  while (s < content.size()) {
    size_t e = content.find('\n', s);
    std::string line = content.substr(s, e == std::string::npos ? std::string::npos : e - s);
    s = e == std::string::npos ? content.size() : e + 1;
    ++line_no;
    if (trim_cell(line).empty()) continue;
    auto cols = split_tabs(line);
    for (auto& c : cols) c = trim_cell(c);
    if (first_row) {
      first_row = false;
      std::string first = cols[0];
      std::transform(first.begin(), first.end(), first.begin(), ::tolower);
      if (first == "iter" || first == "round") {
        c_round = c_iter = c_kernel = c_tflops = c_decision = c_bottleneck = c_idea = -1;
        width = cols.size();
        for (size_t i = 0; i < cols.size(); ++i) {
          std::string h = cols[i];
          std::transform(h.begin(), h.end(), h.begin(), ::tolower);
          int idx = static_cast<int>(i);
          if (h == "round") c_round = idx;
          else if (h == "iter") c_iter = idx;
          else if (h == "kernel") c_kernel = idx;
          else if (h == "tflops") c_tflops = idx;
          else if (h == "decision") c_decision = idx;
          else if (h == "bottleneck" || h == "bottleneck_before") c_bottleneck = idx;
          else if (h == "idea_summary" || h == "idea" || h == "description") c_idea = idx;
          else if (h == "category") c_category = idx;
          else if (h == "expected_gain") c_gain = idx;
          else if (h == "timestamp") c_timestamp = idx;
          else if (!cols[i].empty()) others.emplace_back(idx, tsv_column_field(cols[i], h));
        }
        // A column the reader maps under another name keeps its original name too
        // (bottleneck_before, description): every field of the original row is kept.
        for (int idx : {c_bottleneck, c_idea}) {
          if (idx < 0) continue;
          std::string h = cols[static_cast<size_t>(idx)];
          std::transform(h.begin(), h.end(), h.begin(), ::tolower);
          if (h != "bottleneck" && h != "idea_summary" && h != "idea") others.emplace_back(idx, cols[static_cast<size_t>(idx)]);
        }
        continue;
      }
      // No header: tell the variant from the first row (a round number in front, or no kernel
      // column: the decision one column early).
      auto is_int = [](const std::string& v) {
        return !v.empty() && std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
      };
      if (cols.size() >= 7 && is_int(cols[0]) && parse_decision(cols[4])) {
        c_round = 0; c_iter = 1; c_kernel = 2; c_tflops = 3; c_decision = 4; c_bottleneck = 5; c_idea = 6;
        width = 7;
      } else if (cols.size() >= 5 && parse_decision(cols[2]) && !parse_decision(cols[3])) {
        c_kernel = -1; c_iter = 0; c_tflops = 1; c_decision = 2; c_bottleneck = 3; c_idea = 4;
        width = 5;
      }
    }
    // More cells than columns: unescaped tabs in a hand-written idea; its cells are joined back.
    if (c_idea >= 0 && cols.size() > width && static_cast<size_t>(c_idea) < cols.size()) {
      const size_t excess = cols.size() - width;
      std::string joined = cols[static_cast<size_t>(c_idea)];
      for (size_t i = 1; i <= excess; ++i) joined += "\t" + cols[static_cast<size_t>(c_idea) + i];
      cols[static_cast<size_t>(c_idea)] = joined;
      cols.erase(cols.begin() + c_idea + 1, cols.begin() + c_idea + 1 + static_cast<long>(excess));
    }
    auto col = [&](int idx) -> std::string {
      if (idx < 0 || static_cast<size_t>(idx) >= cols.size()) return {};
      return cols[static_cast<size_t>(idx)];
    };
    RoundRecord r;
    r.iter = col(c_iter);
    r.kernel = col(c_kernel);
    if (r.iter.empty() && !r.kernel.empty()) {
      if (auto id = id_of_kernel_name(r.kernel)) r.iter = *id;
    }
    // iter column sometimes holds the full kernel name
    if (auto id = id_of_kernel_name(r.iter); id && *id != r.iter) {
      if (r.kernel.empty()) r.kernel = r.iter;
      r.iter = *id;
    }
    auto dec = parse_decision(col(c_decision));
    if (r.iter.empty() || !dec || (!r.iter_number() && !r.attempt_index())) {
      if (warnings) warnings->push_back(fmt::format("results.tsv line {}: unreadable row skipped", line_no));
      continue;
    }
    r.decision = *dec;
    if (std::string t = col(c_tflops); !t.empty() && t != "-" && t != "n/a") {
      if (auto v = parse_decimal_number(t)) {
        r.tflops = *v;
      } else if (warnings) {
        warnings->push_back(fmt::format("results.tsv line {}: tflops '{}' is not a number", line_no, preview(t)));
      }
    }
    if (c_round >= 0) {
      if (auto v = parse_decimal_integer(col(c_round)); v && *v >= 0 && *v <= k_max_round_number) {
        r.round = static_cast<int>(*v);
      }
    } else {
      r.round = static_cast<int>(out.size());
    }
    r.bottleneck = tsv_unescape(col(c_bottleneck));
    r.idea = tsv_unescape(col(c_idea));
    r.category = tsv_unescape(col(c_category));
    r.expected_gain = tsv_unescape(col(c_gain));
    r.timestamp = tsv_unescape(col(c_timestamp));
    r.iter = tsv_unescape(r.iter);
    r.kernel = tsv_unescape(r.kernel);
    for (const auto& [idx, name] : others) {
      if (static_cast<size_t>(idx) < cols.size() && !r.extra.contains(name)) r.extra[name] = tsv_unescape(col(idx));
    }
    r.extra["source"] = "tsv";
    out.push_back(std::move(r));
  }
  return out;
}

JsonlParse parse_idea_log(std::string_view content, int first_line_number) {
  JsonlParse out;
  size_t s = 0;
  int line_no = first_line_number - 1;
  while (s < content.size()) {
    size_t e = content.find('\n', s);
    bool last_unterminated = e == std::string_view::npos;
    std::string_view line = content.substr(s, last_unterminated ? std::string_view::npos : e - s);
    s = last_unterminated ? content.size() : e + 1;
    ++line_no;
    bool blank = std::all_of(line.begin(), line.end(), [](char c) { return c == ' ' || c == '\t' || c == '\r'; });
    if (blank) continue;
    std::string err;
    auto parsed = try_parse_json(line, &err);
    std::string why;
    std::optional<RoundRecord> rec;
    if (parsed) rec = RoundRecord::from_json(*parsed, &why);
    if (!rec) {
      ++out.invalid_lines;
      if (last_unterminated) {
        out.torn_tail = true;
        out.warnings.push_back(fmt::format("idea-log.jsonl line {}: torn last line skipped (an interrupted write)", line_no));
      } else {
        out.warnings.push_back(fmt::format("idea-log.jsonl line {}: {} — line skipped", line_no,
                                           parsed ? why : "not valid JSON: " + preview(err, 120)));
      }
      continue;
    }
    out.records.push_back(std::move(*rec));
  }
  return out;
}

}  // namespace croq
