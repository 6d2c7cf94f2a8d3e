// Plan-versus-build comparison (drift.hpp).
#include "croq/session/drift.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <regex>

#include "croq/util/text.hpp"
#include "croq/workspace/ids.hpp"

namespace croq {

namespace {

std::string normalise(const std::string& line) {
  // Whitespace-insensitive comparison.
  std::string out;
  bool space = false;
  for (char c : line) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = true;
      continue;
    }
    if (space && !out.empty()) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

}  // namespace

LineDiff diff_lines(const std::string& base, const std::string& candidate) {
  std::map<std::string, int> counts;
  for (const auto& l : split_lines(base)) {
    auto n = normalise(l);
    if (!n.empty()) counts[n]++;
  }
  LineDiff d;
  for (const auto& l : split_lines(candidate)) {
    auto n = normalise(l);
    if (n.empty()) continue;
    auto it = counts.find(n);
    if (it != counts.end() && it->second > 0) it->second--;
    else d.added.push_back(n);
  }
  for (const auto& [line, left] : counts) {
    for (int i = 0; i < left; ++i) d.removed.push_back(line);
  }
  return d;
}

std::vector<std::string> changed_macros(const LineDiff& diff) {
  static const std::regex define_re(R"(^#\s*define\s+([A-Za-z_][A-Za-z0-9_]*))");
  static const std::regex const_re(R"((?:constexpr|const)\s+[A-Za-z_:<>0-9 ]*?\b([A-Za-z_][A-Za-z0-9_]*)\s*=)");
  std::vector<std::string> out;
  auto scan = [&](const std::vector<std::string>& lines) {
    for (const auto& l : lines) {
      std::smatch m;
      if (std::regex_search(l, m, define_re) || std::regex_search(l, m, const_re)) {
        std::string name = m[1];
        if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
      }
    }
  };
  scan(diff.added);
  scan(diff.removed);
  return out;
}

json DriftReport::to_json() const {
  return {{"significant", significant},       {"findings", findings},
          {"levers_found", levers_found},     {"levers_missing", levers_missing},
          {"changed_macros", changed_macros}, {"diff", {{"added", added}, {"removed", removed}}}};
}

DriftReport assess_drift(const Checkpoint& plan, int built_iter, bool candidate_present,
                         const std::string& candidate_source, bool base_present, const std::string& base_source) {
  DriftReport r;
  const int planned = try_parse_iter_number(plan.iter).value_or(-1);
  if (planned >= 0 && planned != built_iter) {
    r.significant = true;
    r.findings.push_back(fmt::format("planned {} but built {}", iter_number_name(planned), iter_number_name(built_iter)));
  }
  if (!candidate_present) {
    r.significant = true;
    r.findings.push_back(fmt::format("no source for {} in srcs/", iter_number_name(built_iter)));
    return r;
  }
  if (!base_present) {
    r.findings.push_back("the base kernel's source was not found: levers cannot be checked");
    return r;
  }
  LineDiff d = diff_lines(base_source, candidate_source);
  r.added = d.added.size();
  r.removed = d.removed.size();
  r.changed_macros = changed_macros(d);
  if (d.added.empty() && d.removed.empty()) {
    r.significant = true;
    r.findings.push_back("the candidate is identical to its base: nothing was implemented");
    return r;
  }
  std::string changed;
  for (const auto& l : d.added) changed += to_lower(l) + "\n";
  for (const auto& l : d.removed) changed += to_lower(l) + "\n";
  for (const auto& lever : plan.levers) {
    if (changed.find(to_lower(lever)) != std::string::npos) r.levers_found.push_back(lever);
    else r.levers_missing.push_back(lever);
  }
  if (!plan.levers.empty() && r.levers_found.empty()) {
    r.significant = true;
    r.findings.push_back(fmt::format("none of the planned levers ({}) appears in the changed lines",
                                     fmt::join(plan.levers, ", ")));
  } else if (!r.levers_missing.empty()) {
    r.findings.push_back(fmt::format("planned levers not touched: {}", fmt::join(r.levers_missing, ", ")));
  }
  std::vector<std::string> unplanned;
  for (const auto& m : r.changed_macros) {
    bool named = std::any_of(plan.levers.begin(), plan.levers.end(),
                             [&](const std::string& l) { return to_lower(m).find(to_lower(l)) != std::string::npos ||
                                                                to_lower(l).find(to_lower(m)) != std::string::npos; });
    if (!named) unplanned.push_back(m);
  }
  if (!unplanned.empty()) {
    r.findings.push_back(fmt::format("changed but not in the plan: {}", fmt::join(unplanned, ", ")));
  }
  return r;
}

}  // namespace croq
