// Parsing of ptxas resource reports and compiler error lines (resources.hpp).
#include "croq/build/resources.hpp"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <optional>
#include <regex>

#include "croq/util/text.hpp"

namespace croq {

json KernelResources::to_json() const {
  return json{{"kernel", kernel},         {"symbol", symbol},           {"arch", arch},
              {"registers", registers},   {"shared_bytes", shared_bytes}, {"stack_bytes", stack_bytes},
              {"spill_stores", spill_stores}, {"spill_loads", spill_loads}, {"barriers", barriers}};
}

namespace {

// Removes the parameter list and the return type of a demangled function name, keeping template
// arguments: "void ns::k<int>(float*, int)" -> "ns::k<int>".
std::string strip_signature(const std::string& demangled) {
  // The parameter list is the last top-level "(...)" group.
  int depth_angle = 0, depth_paren = 0;
  size_t params = std::string::npos;
  for (size_t i = 0; i < demangled.size(); ++i) {
    char c = demangled[i];
    if (c == '<') ++depth_angle;
    else if (c == '>') --depth_angle;
    else if (c == '(') {
      // "(anonymous namespace)" is part of the name, not a parameter list.
      if (demangled.compare(i, 21, "(anonymous namespace)") == 0) { i += 20; continue; }
      if (depth_angle == 0 && depth_paren == 0) params = i;
      ++depth_paren;
    } else if (c == ')') --depth_paren;
  }
  std::string name = params == std::string::npos ? demangled : demangled.substr(0, params);
  // The return type ("void ") precedes the name at top level.
  depth_angle = 0;
  size_t last_space = std::string::npos;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    if (c == '<') ++depth_angle;
    else if (c == '>') --depth_angle;
    else if (c == '(' && name.compare(i, 21, "(anonymous namespace)") == 0) i += 20;
    else if (c == ' ' && depth_angle == 0) last_space = i;
  }
  if (last_space != std::string::npos) name = name.substr(last_space + 1);
  return name;
}

std::optional<long> number_before(const std::string& line, const std::regex& re) {
  std::smatch m;
  if (std::regex_search(line, m, re)) return std::stol(m[1].str());
  return std::nullopt;
}

}  // namespace

std::string kernel_display_name(const std::string& symbol) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(symbol.c_str(), nullptr, nullptr, &status), std::free);
  if (status != 0 || !out) return symbol;
  return strip_signature(out.get());
}

std::vector<KernelResources> parse_ptxas_resources(std::string_view compiler_output) {
  static const std::regex entry_re(R"(Compiling entry function '([^']+)' for '([^']+)')");
  static const std::regex props_re(R"(Function properties for (\S+))");
  static const std::regex stack_re(R"((\d+) bytes stack frame)");
  static const std::regex spill_st_re(R"((\d+) bytes spill stores)");
  static const std::regex spill_ld_re(R"((\d+) bytes spill loads)");
  static const std::regex regs_re(R"(Used (\d+) registers)");
  static const std::regex smem_re(R"((\d+) bytes smem)");
  static const std::regex bar_re(R"(used (\d+) barriers)");

  std::vector<KernelResources> out;
  constexpr size_t k_none = static_cast<size_t>(-1);
  size_t current = k_none;             // index in `out` of the entry being reported (k_none: none)
  bool props_for_current = false;      // the last "Function properties" line named the entry
  for (const std::string& line : split_lines(compiler_output)) {
    std::smatch m;
    if (std::regex_search(line, m, entry_re)) {
      KernelResources k;
      k.symbol = m[1].str();
      k.arch = m[2].str();
      k.kernel = kernel_display_name(k.symbol);
      out.push_back(std::move(k));
      current = out.size() - 1;
      props_for_current = false;
      continue;
    }
    if (std::regex_search(line, m, props_re)) {
      props_for_current = current != k_none && out[current].symbol == m[1].str();
      continue;
    }
    if (line.find("bytes stack frame") != std::string::npos) {
      if (current != k_none && props_for_current) {
        KernelResources& k = out[current];
        k.stack_bytes = number_before(line, stack_re).value_or(0);
        k.spill_stores = number_before(line, spill_st_re).value_or(0);
        k.spill_loads = number_before(line, spill_ld_re).value_or(0);
      }
      props_for_current = false;
      continue;
    }
    if (line.find("Used ") != std::string::npos && current != k_none) {
      KernelResources& k = out[current];
      if (auto r = number_before(line, regs_re)) k.registers = int(*r);
      if (auto s = number_before(line, smem_re)) k.shared_bytes = *s;
      if (auto b = number_before(line, bar_re)) k.barriers = int(*b);
      current = k_none;  // the "Used" line closes the entry's report
    }
  }
  return out;
}

std::vector<std::string> first_error_lines(std::string_view compiler_output, size_t max_lines) {
  static const std::regex error_re(R"((^|[\s:(])(error|fatal error|Error|ERROR|fatal)\b[^a-z_]|^error\b|undefined reference)");
  std::vector<std::string> lines = split_lines(compiler_output);
  std::vector<std::string> out;
  for (size_t i = 0; i < lines.size() && out.size() < max_lines; ++i) {
    const std::string& line = lines[i];
    if (!std::regex_search(line, error_re)) continue;
    if (line.find("errors detected in the compilation") != std::string::npos) continue;
    out.push_back(preview(trim(line), 400));
    // nvcc and g++ quote the offending source line right after the diagnostic.
    if (i + 1 < lines.size() && out.size() < max_lines) {
      const std::string& next = lines[i + 1];
      if (!next.empty() && (next[0] == ' ' || next[0] == '\t') && !std::regex_search(next, error_re) &&
          trim(next).size() > 1) {
        out.push_back(preview(trim(next), 400));
        ++i;
      }
    }
  }
  if (out.empty()) {
    std::vector<std::string> tail;
    for (auto it = lines.rbegin(); it != lines.rend() && tail.size() < std::min<size_t>(max_lines, 6); ++it) {
      if (!trim(*it).empty()) tail.push_back(preview(trim(*it), 400));
    }
    out.assign(tail.rbegin(), tail.rend());
  }
  return out;
}

}  // namespace croq
