// Shared pieces of the GEMM kernel families (gemm_family_common.hpp).
#include "croq/search/gemm_family_common.hpp"

#include <algorithm>
#include <charconv>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/paths.hpp"

namespace croq::gemm {

std::optional<int> int_param(const FamilyConfig& c, const std::string& name) {
  auto it = c.find(name);
  if (it == c.end()) return std::nullopt;
  const std::string& s = it->second;
  int v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

bool cpu_has_avx512() {
  static const bool has = [] {
    auto text = read_file("/proc/cpuinfo");
    return text && text->find(" avx512f") != std::string::npos;
  }();
  return has;
}

std::optional<std::string> check_listed_values(const FamilyConfig& c, const std::vector<ParamSpec>& specs) {
  for (const auto& spec : specs) {
    auto it = c.find(spec.name);
    if (it == c.end()) return fmt::format("parameter {} is missing", spec.name);
    if (std::find(spec.values.begin(), spec.values.end(), it->second) == spec.values.end())
      return fmt::format("{}={} is not one of {}", spec.name, it->second, fmt::join(spec.values, ", "));
  }
  for (const auto& [name, value] : c) {
    bool known = std::any_of(specs.begin(), specs.end(), [&](const ParamSpec& s) { return s.name == name; });
    if (!known) return fmt::format("unknown parameter {}", name);
  }
  return std::nullopt;
}

int dtype_bit(const DtypePair& d) {
  using S = ScalarType;
  if (d.compute != S::f32) return 0;
  if (d.input == S::f16 && d.output == S::f32) return 1;
  if (d.input == S::f16 && d.output == S::f16) return 2;
  if (d.input == S::bf16 && d.output == S::f32) return 4;
  if (d.input == S::bf16 && d.output == S::bf16) return 8;
  return 0;
}

std::string render_config(const std::string& family, const std::string& template_relpath,
                          std::span<const char* const> order, const FamilyConfig& c, const FamilyProblem& p) {
  std::vector<std::pair<std::string, std::string>> defines;
  for (const char* name : order) {
    auto it = c.find(name);
    if (it != c.end()) defines.emplace_back(std::string("CROQ_") + name, it->second);
  }
  defines.emplace_back("CROQ_DTYPES", std::to_string(dtype_bit(p.dtype)));
  defines.emplace_back("CROQ_BLAYOUTS", p.b_col_major ? "2" : "1");
  return render_template(family, template_relpath, defines, p);
}

std::string render_template(const std::string& family, const std::string& template_relpath,
                            const std::vector<std::pair<std::string, std::string>>& defines, const FamilyProblem& p) {
  const auto path = find_project_dir("kernels") / template_relpath;
  auto text = read_file(path);
  if (!text) {
    throw Error(ExitCode::not_found, fmt::format("the {} template {} could not be read", family, path.string()),
                "set CROQ_HOME to the croq source tree");
  }
  std::string out = fmt::format("// {} configuration for {} {}x{}x{} {} (B {}), rendered by croq\n", family,
                                p.op.empty() ? "matmul" : p.op, p.m, p.n, p.k, p.dtype.canonical,
                                p.b_col_major ? "col" : "row");
  for (const auto& [name, value] : defines) out += fmt::format("#define {} {}\n", name, value);
  out += fmt::format("#line 1 \"{}\"\n", path.filename().string());
  out += *text;
  return out;
}

int typical_sm_count(const std::string& arch) {
  if (arch.rfind("sm_90", 0) == 0) return 132;
  if (arch == "sm_80" || arch == "sm_87") return 108;
  if (arch == "sm_86") return 84;
  if (arch == "sm_89") return 128;
  return 108;
}

std::optional<std::string> split_k_refusal(const FamilyConfig& c, const FamilyProblem& p, int bk, long long tiles,
                                           long long workspace_bytes) {
  const int split = int_param(c, "SPLIT_K").value_or(1);
  if (split <= 1) return std::nullopt;
  if (int_param(c, "PERSISTENT").value_or(0) != 1)
    return "SPLIT_K>1 waits for other CTAs' partial sums, which needs every CTA resident: PERSISTENT=1";
  const long long kb = ceil_div(p.k, bk);
  if (split > kb)
    return fmt::format("SPLIT_K={} exceeds the {} k blocks of K={} (BK={}): slices would be empty", split, kb, p.k, bk);
  if (workspace_bytes > k_max_split_workspace)
    return fmt::format("SPLIT_K={} would keep {} MiB of partial sums in the workspace (limit {} MiB): the problem "
                       "has enough tiles without splitting K",
                       split, workspace_bytes >> 20, k_max_split_workspace >> 20);
  if (static_cast<long long>(split) * tiles > (1LL << 31) / 2)
    return "the problem has more work units than the kernel can index";
  return std::nullopt;
}

std::optional<FamilyConfig> first_wave_or_smallest(const std::vector<SizedConfig>& largest_first,
                                                   const std::function<bool(const FamilyConfig&)>& legal, long long sms) {
  for (const auto& t : largest_first) {
    if (t.blocks >= sms && legal(t.config)) return t.config;
  }
  for (auto it = largest_first.rbegin(); it != largest_first.rend(); ++it) {
    if (legal(it->config)) return it->config;
  }
  return std::nullopt;
}

}  // namespace croq::gemm
