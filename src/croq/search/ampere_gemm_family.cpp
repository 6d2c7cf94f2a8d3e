// The ampere_gemm kernel family (ampere_gemm_family.hpp).
#include "croq/search/ampere_gemm_family.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "croq/search/gemm_family_common.hpp"

namespace croq {

namespace {

int get(const FamilyConfig& c, const char* name) { return gemm::int_param(c, name).value_or(0); }
using gemm::ceil_div;

const char* k_order[] = {"BM", "BN", "BK", "WARPS_M", "WARPS_N", "STAGES", "RASTER", "GROUP"};

bool known_arch(const std::string& arch) {
  return arch.empty() || arch == "sm_80" || arch == "sm_86" || arch == "sm_87" || arch == "sm_89" ||
         arch.rfind("sm_90", 0) == 0;
}

}  // namespace

bool AmpereGemmFamily::supports(const FamilyProblem& p) const {
  return p.op == "matmul" && known_arch(p.arch) && gemm::dtype_bit(p.dtype) != 0 && p.m > 0 && p.n > 0 && p.k > 0;
}

std::vector<ParamSpec> AmpereGemmFamily::params() const {
  return {
      {"BM", {"64", "128", "256"}, true, "tiling", "CTA tile rows"},
      {"BN", {"64", "128", "256"}, true, "tiling", "CTA tile columns"},
      {"BK", {"32", "64"}, false, "tiling", "K depth of one pipeline stage"},
      {"WARPS_M", {"1", "2", "4"}, true, "compute", "warps along M (each owns BM/WARPS_M rows)"},
      {"WARPS_N", {"1", "2", "4"}, true, "compute", "warps along N (each owns BN/WARPS_N columns)"},
      {"STAGES", {"2", "3", "4", "5"}, false, "pipeline", "cp.async pipeline depth"},
      {"RASTER", {"0", "1", "2"}, false, "memory",
       "tile order: 0 row by row, 1 bands of GROUP tile-rows, 2 bands of GROUP tile-columns"},
      {"GROUP", {"1", "2", "4", "8", "16"}, false, "memory", "band width of the grouped tile order"},
  };
}

long long AmpereGemmFamily::smem_bytes(const FamilyConfig& c) {
  return static_cast<long long>(get(c, "STAGES")) * (get(c, "BM") + get(c, "BN")) * get(c, "BK") * 2;
}

int AmpereGemmFamily::register_estimate(const FamilyConfig& c) {
  const int wm = get(c, "BM") / std::max(1, get(c, "WARPS_M"));
  const int wn = get(c, "BN") / std::max(1, get(c, "WARPS_N"));
  const int mi = wm / 16, ni = wn / 8;
  return mi * ni * 4 + mi * 4 + ni * 2 + 32;
}

long long AmpereGemmFamily::smem_limit(const std::string& arch) {
  if (arch.rfind("sm_90", 0) == 0) return 232448;
  if (arch == "sm_80" || arch == "sm_87") return 166912;
  return 101376;  // sm_86, sm_89 (and unknown targets: the smallest of the family's GPUs)
}

std::optional<std::string> AmpereGemmFamily::violation(const FamilyConfig& c, const FamilyProblem& p) const {
  if (p.op != "matmul") return fmt::format("ampere_gemm computes matmul, not {}", p.op);
  if (!known_arch(p.arch)) return fmt::format("ampere_gemm needs sm_80 or later; the target is {}", p.arch);
  if (gemm::dtype_bit(p.dtype) == 0)
    return fmt::format("ampere_gemm computes f16/bf16 inputs into f32 or the input type, not {}", p.dtype.canonical);
  if (p.m <= 0 || p.n <= 0 || p.k <= 0) return "the problem has an empty dimension";
  if (auto bad = gemm::check_listed_values(c, params())) return bad;
  const int bm = get(c, "BM"), bn = get(c, "BN");
  const int wm_count = get(c, "WARPS_M"), wn_count = get(c, "WARPS_N");
  const int warps = wm_count * wn_count;
  if (bm % (16 * wm_count) != 0 || bn % (16 * wn_count) != 0)
    return fmt::format("warp tiles of {}x{} are not multiples of 16x16", bm / wm_count, bn / wn_count);
  if (warps < 2) return "at least 2 warps per CTA";
  const int mi = bm / wm_count / 16, ni = bn / wn_count / 8;
  if (mi * ni * 4 > 128)
    return fmt::format("{} f32 accumulators per thread exceed 128: the warp tile {}x{} is too large", mi * ni * 4,
                       bm / wm_count, bn / wn_count);
  const int threads = warps * 32;
  const int reg_cap = std::min(255, 65536 / threads);
  if (register_estimate(c) > reg_cap)
    return fmt::format("about {} registers per thread needed, {} available with {} threads per CTA",
                       register_estimate(c), reg_cap, threads);
  const long long smem = smem_bytes(c), limit = smem_limit(p.arch);
  if (smem > limit)
    return fmt::format("needs {} bytes of shared memory, more than the {} a block may use on {}", smem, limit,
                       p.arch.empty() ? "the smallest target" : p.arch);
  if (ceil_div(p.m, bm) * ceil_div(p.n, bn) > 0x7FFFFFFFLL) return "more tiles than one grid dimension holds";
  return std::nullopt;
}

FamilyConfig AmpereGemmFamily::default_config(const FamilyProblem& p) const {
  FamilyConfig c{{"BM", "128"}, {"BN", "128"},    {"BK", "32"},     {"WARPS_M", "2"},
                 {"WARPS_N", "2"}, {"STAGES", "4"}, {"RASTER", "1"}, {"GROUP", "8"}};
  const long long sms = gemm::typical_sm_count(p.arch);
  if (ceil_div(p.m, 128) * ceil_div(p.n, 128) < sms) {
    c["BM"] = "64";
    c["BN"] = "64";
  }
  return c;
}

std::string AmpereGemmFamily::render_source(const FamilyConfig& c, const FamilyProblem& p) const {
  return gemm::render_config(name(), template_path(), k_order, c, p);
}

std::vector<std::string> AmpereGemmFamily::build_flags(const FamilyConfig&, const FamilyProblem& p) const {
  std::string sm = "80";
  if (p.arch == "sm_86" || p.arch == "sm_87" || p.arch == "sm_89") sm = p.arch.substr(3);
  if (p.arch.rfind("sm_90", 0) == 0) sm = "90";
  return {fmt::format("-gencode=arch=compute_{0},code=sm_{0}", sm), "-std=c++17"};
}

std::vector<std::string> AmpereGemmFamily::params_for_bottleneck(const std::string& bottleneck) const {
  if (bottleneck == "compute_bound") return {"WARPS_M", "WARPS_N", "BN", "BM", "BK"};
  if (bottleneck == "memory_bound") return {"BM", "BN", "RASTER", "GROUP", "STAGES"};
  if (bottleneck == "latency_bound") return {"STAGES", "BK", "WARPS_M", "WARPS_N"};
  if (bottleneck == "launch_bound") return {"BM", "BN", "STAGES"};
  return {"STAGES", "BN", "BM", "GROUP", "BK"};
}

}  // namespace croq
