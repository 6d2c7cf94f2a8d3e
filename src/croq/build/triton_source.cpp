// Reading Triton sources (triton_source.hpp).
#include "croq/build/triton_source.hpp"

#include <regex>

#include <fmt/format.h>

#include "croq/util/text.hpp"
#include "croq/workspace/ids.hpp"

namespace croq {

namespace {

const std::regex& decorator_re() {
  static const std::regex re(R"(^\s*@\s*([A-Za-z_][A-Za-z0-9_]*(\s*\.\s*[A-Za-z_][A-Za-z0-9_]*)*))");
  return re;
}

std::string last_name(std::string dotted) {
  std::string out;
  for (char c : dotted) {
    if (c == '.') out.clear();
    else if (c != ' ' && c != '\t') out += c;
  }
  return out;
}

}  // namespace

std::vector<std::string> triton_jit_kernels(const std::string& source) {
  static const std::regex def_re(R"(^\s*(async\s+)?def\s+([A-Za-z_][A-Za-z0-9_]*)\s*\()");
  std::vector<std::string> out;
  bool pending_jit = false;
  for (const std::string& line : split_lines(source)) {
    std::smatch m;
    if (std::regex_search(line, m, decorator_re())) {
      if (last_name(m[1].str()) == "jit") pending_jit = true;
      continue;
    }
    if (std::regex_search(line, m, def_re)) {
      if (pending_jit) out.push_back(m[2].str());
      pending_jit = false;
    }
  }
  return out;
}

std::vector<TritonDecorator> triton_autotune_decorators(const std::string& source) {
  std::vector<TritonDecorator> out;
  int n = 0;
  for (const std::string& line : split_lines(source)) {
    ++n;
    std::smatch m;
    if (std::regex_search(line, m, decorator_re()) && last_name(m[1].str()) == "autotune") {
      out.push_back({n, trim(line)});
    }
  }
  return out;
}

std::string triton_kernel_regex(const std::vector<std::string>& kernels) {
  if (kernels.empty()) return {};
  std::string alt;
  for (const auto& k : kernels) alt += (alt.empty() ? "" : "|") + k;
  return "^(" + alt + ")$";
}

std::string triton_autotune_refusal(const std::string& source, const std::string& kernel) {
  const auto found = triton_autotune_decorators(source);
  if (found.empty()) return {};
  auto id = try_parse_iter_id(kernel);
  if (id && id->number == 0) return {};
  return fmt::format(
      "line {}: {}: @triton.autotune is allowed only in iter000 (the baseline); {} must pin one configuration "
      "(BLOCK_* constants, num_warps, num_stages: the one iter000's autotune chose, reported in its measurement "
      "as candidate.autotune)",
      found.front().line, found.front().text, kernel);
}

}  // namespace croq
