// Kernel origin patterns and the choice of the profiled row (kernel_select.hpp).
#include "croq/profile/kernel_select.hpp"

#include <cmath>
#include <regex>

#include <fmt/format.h>

#include "croq/profile/metrics.hpp"
#include "croq/util/error.hpp"
#include "croq/util/text.hpp"

namespace croq::profile {

const char* kernel_origin_name(KernelOrigin o) {
  switch (o) {
    case KernelOrigin::candidate: return "candidate";
    case KernelOrigin::library: return "library";
    case KernelOrigin::harness: return "harness";
  }
  return "candidate";
}

KernelOrigin kernel_origin(const std::string& name) {
  static const std::regex library(
      R"((^|[^a-z])(nvjet_|cublas|cutlass::|cutlass_|xmma|sm\d+_xmma|splitkreduce|gemv2?[nt]?_kernel|gemmsn|gemmk1|)"
      R"(ampere_[a-z0-9]*gemm|volta_[a-z0-9]*gemm|turing_[a-z0-9]*gemm|hopper_[a-z0-9]*gemm|magma_|cudnn))",
      std::regex::ECMAScript | std::regex::optimize);
  static const std::regex harness(
      R"((^|[^a-z])(croq_(harness|fill|init|poison|flush|l2flush|reference|ref|verify|compare|rand|random|check)[a-z0-9_]*|init|initialize|fill|rand|random|curand|poison|flush|reference|verify|memset))"
      R"(([^a-z]|$))",
      std::regex::ECMAScript | std::regex::optimize);
  std::string n = to_lower(name);
  if (std::regex_search(n, library)) return KernelOrigin::library;
  if (std::regex_search(n, harness)) return KernelOrigin::harness;
  return KernelOrigin::candidate;
}

KernelSelection select_kernel(const NcuCsv& csv, const std::string& pattern) {
  KernelSelection s;
  std::vector<double> durations;
  std::vector<KernelOrigin> origins;
  for (const auto& k : csv.kernels) {
    ProfileMetrics m = extract_metrics(k);
    durations.push_back(m.duration_us ? *m.duration_us : -1);
    origins.push_back(kernel_origin(k.name));
  }
  std::vector<size_t> eligible;
  if (!pattern.empty()) {
    std::regex re;
    try {
      re = std::regex(pattern, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      throw Error(ExitCode::usage, fmt::format("--kernel \"{}\" is not a valid regular expression: {}", pattern, e.what()));
    }
    for (size_t i = 0; i < csv.kernels.size(); ++i) {
      if (std::regex_search(csv.kernels[i].name, re)) eligible.push_back(i);
    }
    if (eligible.empty()) {
      std::string names;
      for (const auto& k : csv.kernels) names += (names.empty() ? "" : ", ") + preview(k.name, 60);
      throw Error(ExitCode::not_found, fmt::format("no kernel in the CSV matches --kernel \"{}\" (kernels: {})", pattern, names),
                  "give a pattern that matches one of the kernel names above");
    }
  } else {
    for (size_t i = 0; i < csv.kernels.size(); ++i) {
      if (origins[i] == KernelOrigin::candidate) eligible.push_back(i);
    }
    if (eligible.empty()) {
      s.only_non_candidates = true;
      for (size_t i = 0; i < csv.kernels.size(); ++i) eligible.push_back(i);
    }
  }
  size_t best = eligible.front();
  for (size_t i : eligible) {
    if (durations[i] > durations[best]) best = i;
  }
  s.index = best;
  if (csv.kernels.size() == 1) {
    s.reason = "the only kernel in the CSV";
  } else if (!pattern.empty()) {
    s.reason = eligible.size() == 1 ? fmt::format("the only kernel matching --kernel \"{}\"", pattern)
                                    : fmt::format("the longest of {} kernels matching --kernel \"{}\"", eligible.size(), pattern);
  } else if (s.only_non_candidates) {
    s.reason = fmt::format("every kernel in the CSV looks like a library or harness kernel; took the longest ({})",
                           kernel_origin_name(origins[best]));
  } else {
    s.reason = eligible.size() == 1
                   ? "the only kernel that is not a library or harness kernel"
                   : fmt::format("the longest of {} kernels that are not library or harness kernels", eligible.size());
  }
  for (size_t i = 0; i < csv.kernels.size(); ++i) {
    s.rows.push_back({{"id", csv.kernels[i].id},
                      {"kernel", csv.kernels[i].name},
                      {"origin", kernel_origin_name(origins[i])},
                      {"duration_us", durations[i] >= 0 ? json(std::round(durations[i] * 1000) / 1000) : json(nullptr)},
                      {"chosen", i == best}});
  }
  return s;
}

}  // namespace croq::profile
