// The hopper_gemm kernel family (hopper_gemm_family.hpp): its parameter space, the constraint
// checker that mirrors the template's static_asserts and adds what only the problem knows
// (cluster vs tile grid, layout-dependent swizzle rules), defaults per problem, and rendering.
#include "croq/search/hopper_gemm_family.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "croq/search/gemm_family_common.hpp"

namespace croq {

namespace {

int get(const FamilyConfig& c, const char* name) { return gemm::int_param(c, name).value_or(0); }

long long ceil_div(long long a, long long b) { return (a + b - 1) / b; }

const char* k_order[] = {"BM",     "BN",        "BK",        "STAGES",    "CONSUMERS", "PINGPONG", "PERSISTENT",
                         "RASTER", "GROUP",     "CLUSTER_M", "CLUSTER_N", "EPILOGUE",  "SWIZZLE",  "MMA_DEPTH"};

}  // namespace

bool HopperGemmFamily::supports(const ProblemDesc& p) const {
  if (p.op != "matmul") return false;
  if (!p.arch.empty() && p.arch.rfind("sm_90", 0) != 0) return false;
  return gemm::dtype_bit(p.dtype) != 0 && p.m > 0 && p.n > 0 && p.k > 0;
}

std::vector<ParamSpec> HopperGemmFamily::params() const {
  return {
      {"BM", {"64", "128", "256"}, true, "tiling", "CTA tile rows (64 x CONSUMERS x m64 WGMMA atoms)"},
      {"BN", {"64", "96", "128", "160", "192", "224", "256"}, true, "tiling", "CTA tile columns = WGMMA N"},
      {"BK", {"32", "64", "128"}, false, "tiling", "K depth of one pipeline stage"},
      {"STAGES", {"2", "3", "4", "5", "6"}, false, "pipeline", "shared-memory stages the TMA producer runs ahead"},
      {"CONSUMERS", {"1", "2"}, true, "compute",
       "consumer warpgroups beside the producer warpgroup (2: setmaxnreg moves registers to them)"},
      {"PINGPONG", {"0", "1"}, true, "compute",
       "0: the consumers split each tile (cooperative); 1: they take whole tiles in turn, one's epilogue "
       "overlapping the other's MMAs"},
      {"PERSISTENT", {"0", "1"}, true, "pipeline", "one CTA per SM looping over tiles (1) or one CTA per tile (0)"},
      {"RASTER", {"0", "1", "2"}, false, "memory",
       "tile order: 0 row by row, 1 bands of GROUP tile-rows, 2 bands of GROUP tile-columns"},
      {"GROUP", {"1", "2", "4", "8", "16"}, false, "memory", "band width of the grouped tile order"},
      {"CLUSTER_M", {"1", "2"}, true, "memory", "CTAs per cluster along M sharing B tiles by TMA multicast"},
      {"CLUSTER_N", {"1", "2"}, true, "memory", "CTAs per cluster along N sharing A tiles by TMA multicast"},
      {"EPILOGUE", {"0", "1"}, true, "memory",
       "0: stores from registers; 1: swizzled shared memory (stmatrix) and TMA tensor stores"},
      {"SWIZZLE", {"32", "64", "128"}, false, "memory", "TMA/WGMMA shared-memory swizzle width in bytes"},
      {"MMA_DEPTH", {"0", "1"}, false, "compute", "WGMMA groups kept in flight when a stage is released"},
  };
}

long long HopperGemmFamily::smem_bytes(const FamilyConfig& c) {
  const long long stages = get(c, "STAGES"), bm = get(c, "BM"), bn = get(c, "BN"), bk = get(c, "BK");
  const long long epi = get(c, "EPILOGUE") == 1 ? get(c, "CONSUMERS") * 2LL * 64 * 32 * 4 : 0;
  const long long bars = ceil_div((2 * stages + 2) * 8, 128) * 128;
  return 1024 + stages * (bm + bn) * bk * 2 + epi + bars;
}

int HopperGemmFamily::accumulator_registers(const FamilyConfig& c) {
  const int split = get(c, "PINGPONG") == 1 ? 1 : std::max(1, get(c, "CONSUMERS"));
  return (get(c, "BM") / split / 64) * get(c, "BN") / 2;
}

std::optional<std::string> HopperGemmFamily::violation(const FamilyConfig& c, const ProblemDesc& p) const {
  if (p.op != "matmul") return fmt::format("hopper_gemm computes matmul, not {}", p.op);
  if (!p.arch.empty() && p.arch.rfind("sm_90", 0) != 0)
    return fmt::format("hopper_gemm needs sm_90a (WGMMA, TMA, setmaxnreg); the target is {}", p.arch);
  if (gemm::dtype_bit(p.dtype) == 0)
    return fmt::format("hopper_gemm computes f16/bf16 inputs into f32 or the input type, not {}", p.dtype.canonical);
  if (p.m <= 0 || p.n <= 0 || p.k <= 0) return "the problem has an empty dimension";
  if (auto bad = gemm::check_listed_values(c, params())) return bad;

  const int bm = get(c, "BM"), bn = get(c, "BN"), bk = get(c, "BK");
  const int consumers = get(c, "CONSUMERS"), sw = get(c, "SWIZZLE");
  const int cm = get(c, "CLUSTER_M"), cn = get(c, "CLUSTER_N");
  const int atom = sw / 2;  // 16-bit elements per swizzle row
  const bool pingpong = get(c, "PINGPONG") == 1;
  if (pingpong && consumers != 2) return "PINGPONG=1 alternates tiles between two consumers: it needs CONSUMERS=2";
  if (!pingpong && bm % (64 * consumers) != 0)
    return fmt::format("BM={} cannot be split into {} consumer warpgroups of m64 WGMMA atoms", bm, consumers);
  if (accumulator_registers(c) > k_max_accumulators)
    return fmt::format("{} f32 accumulators per consumer thread (rows per consumer / 64 x BN/2) exceed {}: the "
                       "consumer would spill",
                       accumulator_registers(c), k_max_accumulators);
  if (bk % atom != 0)
    return fmt::format("BK={} is not a multiple of the {}-byte swizzle row ({} elements)", bk, sw, atom);
  if (!p.b_col_major && bn % atom != 0)
    return fmt::format("row-major B is read N-major: BN={} must be a multiple of the {}-byte swizzle row ({} elements)",
                       bn, sw, atom);
  if ((bm / cn) % 8 != 0) return fmt::format("A slices of BM/CLUSTER_N={} rows are not multiples of 8", bm / cn);
  const int b_slice = p.b_col_major ? bn / cm : bk / cm;
  if (b_slice % 8 != 0) return fmt::format("B multicast slices of {} rows are not multiples of 8", b_slice);
  const long long smem = smem_bytes(c);
  if (smem > k_smem_limit)
    return fmt::format("needs {} bytes of shared memory, more than the {} a block may use on sm_90", smem,
                       k_smem_limit);
  const long long tiles_m = ceil_div(p.m, bm), tiles_n = ceil_div(p.n, bn);
  if (cm > tiles_m)
    return fmt::format("CLUSTER_M={} exceeds the {} tile rows of the grid", cm, tiles_m);
  if (cn > tiles_n)
    return fmt::format("CLUSTER_N={} exceeds the {} tile columns of the grid", cn, tiles_n);
  if (tiles_m * tiles_n > (1LL << 31) / 2) return "the problem has more tiles than the kernel can index";
  return std::nullopt;
}

FamilyConfig HopperGemmFamily::default_config(const ProblemDesc& p) const {
  const long long sms = gemm::typical_sm_count(p.arch.empty() ? "sm_90a" : p.arch);
  // Largest tile that still gives every SM a tile: 128x256 (two consumers, 64x256 each), then
  // 128x128, then 64x128 with one consumer.
  int bm = 128, bn = 256, consumers = 2;
  auto tiles = [&](int tm, int tn) { return ceil_div(p.m, tm) * ceil_div(p.n, tn); };
  if (tiles(128, 256) < sms) {
    bn = 128;
    if (tiles(128, 128) < sms) {
      bm = 64;
      consumers = 1;
    }
  }
  FamilyConfig c;
  c["BM"] = std::to_string(bm);
  c["BN"] = std::to_string(bn);
  c["BK"] = "64";
  c["CONSUMERS"] = std::to_string(consumers);
  c["PINGPONG"] = "0";
  c["PERSISTENT"] = "1";
  c["RASTER"] = "1";
  c["GROUP"] = "8";
  c["CLUSTER_M"] = ceil_div(p.m, bm) >= 2 ? "2" : "1";
  c["CLUSTER_N"] = "1";
  c["EPILOGUE"] = "1";
  c["SWIZZLE"] = "128";
  c["MMA_DEPTH"] = "1";
  // As many stages as fit, up to 6 (a deep ring hides TMA latency and the epilogue).
  c["STAGES"] = "2";
  for (int s = 6; s >= 2; --s) {
    c["STAGES"] = std::to_string(s);
    if (smem_bytes(c) <= k_smem_limit) break;
  }
  if (violation(c, p)) {
    // Fall back to the smallest configuration, legal for every supported problem.
    c["CLUSTER_M"] = "1";
    c["BM"] = "64";
    c["BN"] = "64";
    c["CONSUMERS"] = "1";
    c["STAGES"] = "4";
  }
  return c;
}

std::string HopperGemmFamily::render_source(const FamilyConfig& c, const ProblemDesc& p) const {
  std::vector<std::pair<std::string, std::string>> defines;
  for (const char* name : k_order) {
    auto it = c.find(name);
    if (it != c.end()) defines.emplace_back(std::string("CROQ_") + name, it->second);
  }
  defines.emplace_back("CROQ_DTYPES", std::to_string(gemm::dtype_bit(p.dtype)));
  defines.emplace_back("CROQ_BLAYOUTS", p.b_col_major ? "2" : "1");
  return gemm::render_template(name(), template_path(), defines, p);
}

std::vector<std::string> HopperGemmFamily::build_flags(const FamilyConfig&, const ProblemDesc&) const {
  return {"-gencode=arch=compute_90a,code=sm_90a", "-std=c++17"};
}

std::vector<std::string> HopperGemmFamily::params_for_bottleneck(const std::string& bottleneck) const {
  if (bottleneck == "compute_bound") return {"BN", "CONSUMERS", "BM", "MMA_DEPTH", "EPILOGUE", "STAGES"};
  if (bottleneck == "memory_bound") return {"CLUSTER_M", "CLUSTER_N", "RASTER", "GROUP", "BN", "BM", "STAGES"};
  if (bottleneck == "latency_bound") return {"STAGES", "BK", "MMA_DEPTH", "CONSUMERS", "PERSISTENT", "EPILOGUE"};
  if (bottleneck == "launch_bound") return {"PERSISTENT", "BM", "BN", "CLUSTER_M", "STAGES"};
  return {"STAGES", "BN", "CLUSTER_M", "GROUP", "EPILOGUE", "BM", "BK"};  // mixed
}

}  // namespace croq
