// The hopper_gemm kernel family (hopper_gemm_family.hpp): its parameter space, the constraint
// checker that mirrors the template's static_asserts and adds what only the problem knows
// (cluster vs tile grid, layout-dependent swizzle rules), defaults per problem, and rendering.
#include "croq/search/hopper_gemm_family.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "croq/search/gemm_family_common.hpp"

namespace croq {

namespace {

int get(const FamilyConfig& c, const char* name) { return gemm::int_param(c, name).value_or(0); }

using gemm::ceil_div;

const char* k_order[] = {"BM",        "BN",        "BK",       "STAGES",   "CONSUMERS", "PINGPONG",
                         "PERSISTENT", "RASTER",    "GROUP",    "CLUSTER_M", "CLUSTER_N", "EPILOGUE",
                         "SWIZZLE",    "MMA_DEPTH", "SPLIT_K",  "STREAM_K",  "PROMOTE_EVERY", "SCALE_STAGE"};

bool is_fp8(const FamilyProblem& p) { return p.dtype.input == ScalarType::e4m3; }
bool is_blockscaled(const FamilyProblem& p) { return p.op == "blockscaled"; }
// Two-level accumulation: the block-scaled operator always; dense e4m3 where K is long enough for the
// WGMMA accumulators' reduced precision to show: measured on the H200, unpromoted e4m3 kernels pass
// croq's verification at K = 4096 and fail it at K = 8192 (docs/fp8.md, "Two-level accumulation").
constexpr int64_t k_fp8_promote_k = 4096;
// The block-scaled kernel with MMA_DEPTH 1 holds two sets of WGMMA sums and the promoted sums
// (64-row consumers: ping-pong ones spill).
bool blockscaled_overlap_fits(const FamilyConfig& c) {
  return gemm::int_param(c, "PINGPONG").value_or(0) != 1 &&
         3 * HopperGemmFamily::accumulator_registers(c) <= HopperGemmFamily::max_accumulators(c);
}
bool promotes(const FamilyProblem& p) { return is_blockscaled(p) || (is_fp8(p) && p.k > k_fp8_promote_k); }

// MMA_DEPTH of a promoting configuration: promoting every stage waits for each stage's WGMMAs (0),
// except in the block-scaled kernel where its three sets of registers fit (1: each promotion
// overlapped with the next block); promoting every 2 or 4 keeps a group in flight between (1).
std::string promoting_mma_depth(const FamilyProblem& p, const FamilyConfig& c) {
  if (gemm::int_param(c, "PROMOTE_EVERY").value_or(1) > 1) return "1";
  return is_blockscaled(p) && blockscaled_overlap_fits(c) ? "1" : "0";
}

// e4m3 problems are computed with B "row.col" (N x K), the only layout FP8 WGMMA reads (croq tries
// it first for fp8 inputs): the family checks and renders them so.
FamilyProblem as_measured(FamilyProblem p) {
  if (is_fp8(p)) p.b_col_major = true;
  return p;
}

// e4m3 stages: BK 128 (one 128-byte swizzle row), as many stages as fit up to `max_stages`.
FamilyConfig fp8_stages(FamilyConfig c, int max_stages = 6) {
  c["BK"] = "128";
  c["SWIZZLE"] = "128";
  c["STAGES"] = "2";
  for (int s = max_stages; s >= 2; --s) {
    c["STAGES"] = std::to_string(s);
    if (HopperGemmFamily::smem_bytes(c, 1) <= HopperGemmFamily::k_smem_limit) break;
  }
  return c;
}

// 256x128 tiles in waves (default_config) from a block-scaled configuration: the drained kernel
// whose consumers hold two m64 atoms each, staged scales, the TMA epilogue, A multicast to a 1x2
// cluster where the grid has two tile columns, 3 stages beside two epilogue slots per consumer.
FamilyConfig blockscaled_waves_of(FamilyConfig c, bool cluster_n) {
  c["BM"] = "256";
  c["BN"] = "128";
  c["MMA_DEPTH"] = "0";
  c["CLUSTER_M"] = "1";
  c["CLUSTER_N"] = cluster_n ? "2" : "1";
  c["EPILOGUE"] = "1";
  c["SCALE_STAGE"] = "1";
  return fp8_stages(c, 3);
}

}  // namespace

int HopperGemmFamily::dtype_bit(const DtypePair& d) {
  if (const int b = gemm::dtype_bit(d)) return b;
  if (d.compute != ScalarType::f32 || d.input != ScalarType::e4m3) return 0;
  if (d.output == ScalarType::f16) return 16;
  if (d.output == ScalarType::bf16) return 32;
  return 0;
}

bool HopperGemmFamily::supports(const FamilyProblem& p) const {
  if (p.op != "matmul" && !(is_blockscaled(p) && std::string(p.dtype.canonical) == "e4m3bf16")) return false;
  if (!p.arch.empty() && p.arch.rfind("sm_90", 0) != 0) return false;
  if (is_fp8(p) && p.k % 16 != 0) return false;
  return dtype_bit(p.dtype) != 0 && p.m > 0 && p.n > 0 && p.k > 0;
}

std::vector<ParamSpec> HopperGemmFamily::params() const {
  return {
      {"BM", {"64", "128", "192", "256"}, true, "tiling", "CTA tile rows (64 x CONSUMERS x m64 WGMMA atoms)"},
      {"BN", {"64", "96", "128", "160", "192", "224", "256"}, true, "tiling", "CTA tile columns = WGMMA N"},
      {"BK", {"32", "64", "128"}, false, "tiling", "K depth of one pipeline stage"},
      {"STAGES", {"2", "3", "4", "5", "6", "7", "8"}, false, "pipeline", "shared-memory stages the TMA producer runs ahead"},
      {"CONSUMERS", {"1", "2", "3"}, true, "compute",
       "consumer warpgroups beside the producer warpgroup (2: setmaxnreg moves registers to them; 3: "
       "cooperative 192-row tiles, at most 64 x 192 per consumer)"},
      {"PINGPONG", {"0", "1"}, true, "compute",
       "0: the consumers split each tile (cooperative); 1: they take whole tiles in turn, one's epilogue "
       "overlapping the other's MMAs"},
      {"PERSISTENT", {"0", "1"}, true, "pipeline", "one CTA per SM looping over tiles (1) or one CTA per tile (0)"},
      {"RASTER", {"0", "1", "2", "3"}, false, "memory",
       "tile order: 0 row by row, 1 bands of GROUP tile-rows, 2 bands of GROUP tile-columns, 3 as 1 with "
       "every other band walked backwards (snake)"},
      {"GROUP", {"1", "2", "4", "8", "16"}, false, "memory", "band width of the grouped tile order"},
      {"CLUSTER_M", {"1", "2"}, true, "memory", "CTAs per cluster along M sharing B tiles by TMA multicast"},
      {"CLUSTER_N", {"1", "2"}, true, "memory", "CTAs per cluster along N sharing A tiles by TMA multicast"},
      {"EPILOGUE", {"0", "1", "2"}, true, "memory",
       "0: stores from registers; 1: swizzled shared memory (stmatrix) and TMA tensor stores; 2: registers, "
       "16-bit outputs transposed across each lane quad so every thread stores 16 contiguous bytes"},
      {"SWIZZLE", {"32", "64", "128"}, false, "memory", "TMA/WGMMA shared-memory swizzle width in bytes"},
      {"MMA_DEPTH", {"0", "1"}, false, "compute",
       "WGMMA groups kept in flight when a stage is released (the block-scaled kernel: 1 promotes each k block "
       "while the next one's WGMMAs run, with a second set of WGMMA sums)"},
      {"SPLIT_K", {"1", "2", "3", "4", "6", "8"}, true, "tiling",
       "k slices per output tile, each its own work unit, reduced in slice order through the workspace "
       "(fills the GPU when there are fewer tiles than SMs and K is long)"},
      {"STREAM_K", {"0", "1"}, true, "tiling",
       "1: the tiles of the last one to two waves (all of them below a wave) are cut into equal contiguous k "
       "ranges, one per CTA, so no CTA idles in a partial last wave; partial sums are added in k order by the CTA "
       "holding each tile's last k block",
       "0"},
      {"PROMOTE_EVERY", {"1", "2", "4", "8", "16"}, false, "compute",
       "where the kernel promotes (e4m3 with K > 4096; the block-scaled operator: every stage): k blocks between "
       "promotions of the WGMMA sums into f32 registers. 1 waits for each stage's WGMMAs (MMA_DEPTH=0; the "
       "block-scaled kernel may overlap, MMA_DEPTH=1); 2 to 16 "
       "let the tensor cores accumulate that many BK of K (16 x BK 128 = 2048 at most: 32 failed verification at "
       "K = 32768 on the H200) at their reduced precision and keep one WGMMA group in "
       "flight between promotions (MMA_DEPTH=1); 1 where the kernel does not promote",
       "1"},
      {"SCALE_STAGE", {"0", "1"}, true, "memory",
       "the block-scaled kernel's scales: 0 read by each consumer thread from global memory while its stage "
       "loads; 1 staged in shared memory with each stage by a producer warp (cp.async, 528 bytes a stage at "
       "128x128), read with LDS, as cuBLASLt's block-scaled kernel has them; 0 outside the block-scaled operator",
       "0"},
  };
}

long long HopperGemmFamily::smem_bytes(const FamilyConfig& c) { return smem_bytes(c, 2); }

long long HopperGemmFamily::smem_bytes(const FamilyConfig& c, int elem_bytes) {
  const long long stages = get(c, "STAGES"), bm = get(c, "BM"), bn = get(c, "BN"), bk = get(c, "BK");
  const long long bars = ceil_div((2 * stages + 2) * 8, 128) * 128;
  // SCALE_STAGE 1: a slot per stage of BM A scales and the B scales of the 128-wide blocks a tile
  // touches (BN/128 + 2), f32, in 16-byte steps (the template's SCALE_SLOT_BYTES).
  const long long scales = get(c, "SCALE_STAGE") == 1 ? stages * (ceil_div((bm + bn / 128 + 2) * 4, 16) * 16) : 0;
  // The TMA epilogue's 8 KB chunk slots, two per consumer; the block-scaled waves keep one where two
  // do not fit (the template's EPI_SLOTS).
  auto with_slots = [&](long long slots) {
    const long long epi = get(c, "EPILOGUE") == 1 ? get(c, "CONSUMERS") * slots * 64 * 32 * 4 : 0;
    return 1024 + stages * (bm + bn) * bk * elem_bytes + epi + scales + bars;
  };
  const long long two = with_slots(2);
  return two > k_smem_limit && blockscaled_waves(c) ? with_slots(1) : two;
}

bool HopperGemmFamily::blockscaled_waves(const FamilyConfig& c) {
  const int consumers = std::max(1, get(c, "CONSUMERS"));
  return get(c, "SCALE_STAGE") == 1 && get(c, "MMA_DEPTH") == 0 && get(c, "PINGPONG") != 1 &&
         get(c, "BM") / consumers / 64 >= 2;
}

int HopperGemmFamily::accumulator_registers(const FamilyConfig& c) {
  const int split = get(c, "PINGPONG") == 1 ? 1 : std::max(1, get(c, "CONSUMERS"));
  return (get(c, "BM") / split / 64) * get(c, "BN") / 2;
}

int HopperGemmFamily::max_accumulators(const FamilyConfig& c) {
  const bool split = get(c, "SPLIT_K") > 1, stream = get(c, "STREAM_K") == 1;
  if (get(c, "CONSUMERS") == 3) return split || stream ? 64 : 96;
  return stream ? (blockscaled_waves(c) ? 192 : 128) : split ? 160 : 192;
}

int HopperGemmFamily::effective_split(const FamilyConfig& c, const FamilyProblem& p) {
  const long long kb = ceil_div(p.k, std::max(1, get(c, "BK")));
  return static_cast<int>(std::min<long long>(std::max(1, get(c, "SPLIT_K")), kb));
}

long long HopperGemmFamily::split_workspace_bytes(const FamilyConfig& c, const FamilyProblem& p) {
  const int split = effective_split(c, p);
  if (split <= 1) return 0;
  const int bm = get(c, "BM"), bn = get(c, "BN"), cm = get(c, "CLUSTER_M"), cn = get(c, "CLUSTER_N");
  const long long tiles = ceil_div(ceil_div(p.m, bm), cm) * cm * ceil_div(ceil_div(p.n, bn), cn) * cn;
  const int groups = get(c, "PINGPONG") == 1 ? 1 : get(c, "CONSUMERS");
  return tiles * (split - 1) * (static_cast<long long>(bm) * bn * 4 + groups * 8);
}

std::optional<std::string> HopperGemmFamily::violation(const FamilyConfig& c, const FamilyProblem& p_in) const {
  const FamilyProblem p = as_measured(p_in);
  if (p.op != "matmul" && !is_blockscaled(p))
    return fmt::format("hopper_gemm computes matmul and the block-scaled operator, not {}", p.op);
  if (is_blockscaled(p) && std::string(p.dtype.canonical) != "e4m3bf16")
    return fmt::format("the block-scaled operator is e4m3 -> bf16, not {}", p.dtype.canonical);
  if (!p.arch.empty() && p.arch.rfind("sm_90", 0) != 0)
    return fmt::format("hopper_gemm needs sm_90a (WGMMA, TMA, setmaxnreg); the target is {}", p.arch);
  if (dtype_bit(p.dtype) == 0)
    return fmt::format("hopper_gemm computes f16/bf16 inputs into f32 or the input type, and e4m3 into f16 or bf16, "
                       "not {}",
                       p.dtype.canonical);
  const int eb = is_fp8(p) ? 1 : 2;
  if (eb == 1 && p.k % 16 != 0)
    return fmt::format("e4m3 rows of K={} bytes are not 16-byte aligned, as TMA needs: K must be a multiple of 16", p.k);
  if (p.m <= 0 || p.n <= 0 || p.k <= 0) return "the problem has an empty dimension";
  if (auto bad = gemm::check_listed_values(c, params())) return bad;
  if (is_blockscaled(p) && get(c, "BK") != 128)
    return "the block-scaled kernel promotes once per 128-deep scale block: BK=128";
  if (!is_blockscaled(p) && get(c, "SCALE_STAGE") != 0)
    return fmt::format("SCALE_STAGE stages the block-scaled operator's scales; {} has none to stage: SCALE_STAGE=0",
                       p.op);
  const int promote_every = get(c, "PROMOTE_EVERY");
  if (!promotes(p) && promote_every != 1)
    return fmt::format("PROMOTE_EVERY applies where the kernel promotes (e4m3 with K > {}, the block-scaled operator): "
                       "PROMOTE_EVERY=1",
                       k_fp8_promote_k);
  if (is_blockscaled(p) && promote_every != 1)
    return "the block-scaled kernel promotes every stage (one 128-deep scale block each): PROMOTE_EVERY=1";
  if (promotes(p)) {
    const std::string what = is_blockscaled(p)
                                 ? std::string("the block-scaled kernel")
                                 : fmt::format("e4m3 with K > {} (two-level accumulation)", k_fp8_promote_k);
    const bool overlap = is_blockscaled(p) && get(c, "MMA_DEPTH") == 1;
    if (overlap && !blockscaled_overlap_fits(c)) {
      if (get(c, "PINGPONG") == 1)
        return "the block-scaled kernel with MMA_DEPTH=1 spills with ping-pong consumers (two m64 atoms each, three "
               "sets of sums and their scales): PINGPONG=0 or MMA_DEPTH=0";
      return fmt::format("the block-scaled kernel with MMA_DEPTH=1 keeps two sets of WGMMA sums (alternate k blocks) and "
                         "the promoted sums: 3 x {} registers per consumer thread exceed {} (MMA_DEPTH=0 drains each "
                         "block instead)",
                         accumulator_registers(c), max_accumulators(c));
    }
    if (promote_every == 1 && get(c, "MMA_DEPTH") != 0 && !is_blockscaled(p))
      return fmt::format("{} promoting every stage (PROMOTE_EVERY=1) waits for each stage's WGMMAs before promoting "
                         "their sums: MMA_DEPTH=0 (or PROMOTE_EVERY=2 or more)",
                         what);
    if (blockscaled_waves(c)) {
      if (accumulator_registers(c) + get(c, "BN") / 2 > max_accumulators(c))
        return fmt::format("{} in waves keeps one m64 atom's WGMMA sums besides the promoted sums: {} + {} registers "
                           "per consumer thread exceed {}",
                           what, accumulator_registers(c), get(c, "BN") / 2, max_accumulators(c));
    } else if (2 * accumulator_registers(c) > max_accumulators(c)) {
      return fmt::format("{} keeps a second set of f32 sums (promotion): 2 x {} registers per consumer thread exceed {}",
                         what, accumulator_registers(c), max_accumulators(c));
    }
    // The block-scaled kernel also keeps its rows' and columns' scales in registers: ptxas (CUDA
    // 13.0) spills its overlapped ping-pong consumers (blockscaled_overlap_fits); the drained
    // consumers fit up to 2 x 96 sums (128x192) since each promotes with one FFMA per sum;
    // tests/nvcc/fp8_compile_test.cpp compiles them.
  }

  const int bm = get(c, "BM"), bn = get(c, "BN"), bk = get(c, "BK");
  const int consumers = get(c, "CONSUMERS"), sw = get(c, "SWIZZLE");
  const int cm = get(c, "CLUSTER_M"), cn = get(c, "CLUSTER_N");
  const int atom = sw / eb;  // input elements per swizzle row
  const bool pingpong = get(c, "PINGPONG") == 1;
  if (pingpong && consumers != 2) return "PINGPONG=1 alternates tiles between two consumers: it needs CONSUMERS=2";
  if (!pingpong && bm % (64 * consumers) != 0)
    return fmt::format("BM={} cannot be split into {} consumer warpgroups of m64 WGMMA atoms", bm, consumers);
  if (accumulator_registers(c) > max_accumulators(c))
    return fmt::format("{} f32 accumulators per consumer thread (rows per consumer / 64 x BN/2) exceed {}{}: the "
                       "consumer would spill",
                       accumulator_registers(c), max_accumulators(c),
                       consumers == 3 ? " (three consumers: 128 registers per thread)"
                       : get(c, "SPLIT_K") > 1 || get(c, "STREAM_K") == 1 ? " (with a cross-CTA reduction)"
                                                                           : "");
  if (bk % atom != 0)
    return fmt::format("BK={} is not a multiple of the {}-byte swizzle row ({} elements)", bk, sw, atom);
  if (!p.b_col_major && bn % atom != 0)
    return fmt::format("row-major B is read N-major: BN={} must be a multiple of the {}-byte swizzle row ({} elements)",
                       bn, sw, atom);
  if ((bm / cn) % 8 != 0) return fmt::format("A slices of BM/CLUSTER_N={} rows are not multiples of 8", bm / cn);
  const int b_slice = p.b_col_major ? bn / cm : bk / cm;
  if (b_slice % 8 != 0) return fmt::format("B multicast slices of {} rows are not multiples of 8", b_slice);
  const long long smem = smem_bytes(c, eb);
  if (smem > k_smem_limit)
    return fmt::format("needs {} bytes of shared memory, more than the {} a block may use on sm_90", smem,
                       k_smem_limit);
  const long long tiles_m = ceil_div(p.m, bm), tiles_n = ceil_div(p.n, bn);
  if (cm > tiles_m)
    return fmt::format("CLUSTER_M={} exceeds the {} tile rows of the grid", cm, tiles_m);
  if (cn > tiles_n)
    return fmt::format("CLUSTER_N={} exceeds the {} tile columns of the grid", cn, tiles_n);
  if (tiles_m * tiles_n > (1LL << 31) / 2) return "the problem has more tiles than the kernel can index";
  if (get(c, "EPILOGUE") == 2 && p.dtype.output == ScalarType::f32)
    return "EPILOGUE=2 transposes 16-bit outputs; for f32 outputs it is EPILOGUE=0";
  const int split = get(c, "SPLIT_K");
  if (get(c, "STREAM_K") == 1) {
    if (get(c, "PERSISTENT") != 1)
      return "STREAM_K=1 waits for other CTAs' partial sums, which needs every CTA resident: PERSISTENT=1";
    if (pingpong) return "STREAM_K=1 needs cooperative consumers (PINGPONG=0)";
    if (split > 1) return "STREAM_K=1 and SPLIT_K>1 both cut tiles along K: choose one";
  }
  if (split > 1) return gemm::split_k_refusal(c, p, bk, tiles_m * tiles_n, split_workspace_bytes(c, p));
  return std::nullopt;
}

namespace {

// One tile arrangement the default may start from.
struct TileChoice {
  int bm, bn, consumers, pingpong;
};

// A coarse cost model of one configuration on an H100/H200-class part, in SM clocks, used only to
// pick a starting point (the search measures from there). Per k block of 64 a tile costs the
// larger of its tensor-core time (4096 dense FLOP/clock at 76 % of peak) and its operand traffic
// at 45 bytes/clock per SM from L2 (where these figures come from: docs/hopper-gemm-family.md).
// Units run in waves of `sms`; each wave pays a pipeline fill; split-K adds the partial-sum
// traffic and a flag round trip; the epilogue writes the tile once.
double estimate_clocks(const TileChoice& t, int split, const FamilyProblem& p, int sms) {
  const double kb = std::ceil(static_cast<double>(p.k) / 64.0);
  const double tiles = std::ceil(static_cast<double>(p.m) / t.bm) * std::ceil(static_cast<double>(p.n) / t.bn);
  const double units = tiles * split;
  const double waves = std::ceil(units / sms);
  const double kb_slice = std::ceil(kb / split);
  const double per_kb = std::max(t.bm * t.bn * 64.0 * 2 / 4096 / 0.76, (t.bm + t.bn) * 64.0 * 2 / 45);
  const double out_bytes = p.dtype.output == ScalarType::f32 ? 4 : 2;
  const double epilogue = t.bm * t.bn * out_bytes / 64;
  const double fill = 1500;
  const double reduce = split > 1 ? 2000 + (split - 1) * t.bm * t.bn * 4.0 / 45 + t.bm * t.bn * 4.0 / 64 : 0;
  // Ping-pong hides the epilogue behind the other consumer's MMAs once a CTA has two units.
  const bool hidden = t.pingpong && units >= 2.0 * sms;
  return waves * (kb_slice * per_kb + fill + (hidden ? 0 : epilogue) + reduce);
}

}  // namespace

namespace {

// A configuration of the given arrangement with the family's usual settings (persistent, grouped
// order, 128-byte swizzle, BK 64) and as many stages as fit, up to 6: a deep ring hides TMA latency
// and the epilogue. The default and the alternatives are all built this way.
FamilyConfig arrangement(const TileChoice& t, int split, int cluster_m, int epilogue, int max_stages = 6) {
  FamilyConfig c;
  c["BM"] = std::to_string(t.bm);
  c["BN"] = std::to_string(t.bn);
  c["BK"] = "64";
  c["CONSUMERS"] = std::to_string(t.consumers);
  c["PINGPONG"] = std::to_string(t.pingpong);
  c["PERSISTENT"] = "1";
  c["RASTER"] = "1";
  c["GROUP"] = "8";
  c["CLUSTER_M"] = std::to_string(cluster_m);
  c["CLUSTER_N"] = "1";
  c["EPILOGUE"] = std::to_string(epilogue);
  c["SWIZZLE"] = "128";
  c["MMA_DEPTH"] = "1";
  c["SPLIT_K"] = std::to_string(split);
  c["STREAM_K"] = "0";
  c["PROMOTE_EVERY"] = "1";
  c["SCALE_STAGE"] = "0";
  c["STAGES"] = "2";
  for (int s = max_stages; s >= 2; --s) {
    c["STAGES"] = std::to_string(s);
    if (HopperGemmFamily::smem_bytes(c) <= HopperGemmFamily::k_smem_limit) break;
  }
  return c;
}

}  // namespace

std::vector<Alternative> HopperGemmFamily::alternatives(const FamilyProblem& p) const {
  const int sms = gemm::typical_sm_count(p.arch.empty() ? "sm_90a" : p.arch);
  const bool f32_out = p.dtype.output == ScalarType::f32;
  const int reg_epilogue = f32_out ? 0 : 2;
  auto tiles = [&](int tm, int tn) { return ceil_div(p.m, tm) * ceil_div(p.n, tn); };
  std::vector<Alternative> out;
  const FamilyConfig def = default_config(p);
  auto add = [&](std::string name, std::string tag, FamilyConfig c) {
    if (is_fp8(p)) c = fp8_stages(c, std::max(2, std::min(8, get(c, "STAGES"))));
    if (promotes(p) && get(c, "PROMOTE_EVERY") == 1) c["MMA_DEPTH"] = promoting_mma_depth(p, c);
    if (c == def || violation(c, p)) return;
    for (const auto& a : out) {
      if (a.config == c) return;
    }
    out.push_back({std::move(name), std::move(tag), std::move(c)});
  };
  // Which alternatives are offered where, and the measurements behind each choice:
  // docs/hopper-gemm-family.md ("Alternatives").
  // The block-scaled kernel whose default drains each k block (split-K leaves no room for a second
  // set of WGMMA sums): one slice per tile, each promotion overlapped with the next block's WGMMAs.
  const bool bs_waves = is_blockscaled(p) && blockscaled_waves(def);
  if (is_blockscaled(p) && get(def, "MMA_DEPTH") == 0 && !bs_waves) {
    FamilyConfig c = def;
    c["SPLIT_K"] = "1";
    add("one slice per tile, promotion overlapped with the next k block's WGMMAs", "bs_overlap", c);
  }
  // A block-scaled default of 256x128 tiles in waves: first the 128x128 kernel overlapping each
  // promotion with the next k block (the default before the waves), then the waves with B multicast
  // to a 2x1 cluster instead of A to a 1x2; the overlapped kernel's archetypes follow (below).
  const FamilyConfig bs_base = bs_waves ? default_config(p, false) : def;
  if (bs_waves) {
    // Where the cluster tiles leave the last wave partial, stream-K over it and the full wave before
    // (the template's defaults for the block-scaled operator: one loop, a share's reduce last): at
    // 8192^3 (15.5 waves) 1.007 x cuBLASLt against the default's 0.995 on an H100, at 4096x7168x7168
    // (6.8 waves) 0.993 against 1.000 (docs/fp8.md).
    const long long clusters = sms / (get(def, "CLUSTER_M") * get(def, "CLUSTER_N"));
    const long long units = ceil_div(ceil_div(p.m, get(def, "BM")), get(def, "CLUSTER_M")) *
                            ceil_div(ceil_div(p.n, get(def, "BN")), get(def, "CLUSTER_N"));
    if (clusters > 0 && units % clusters != 0) {
      FamilyConfig sk = def;
      sk["STREAM_K"] = "1";
      add("256x128 tiles in waves, stream-K over the partial last wave and the full wave before it", "bs_w_sk", sk);
    }
    add("128x128, each promotion overlapped with the next k block's WGMMAs", "bs_o128x128", bs_base);
    FamilyConfig c21 = def;
    c21["CLUSTER_M"] = "2";
    c21["CLUSTER_N"] = "1";
    add("256x128 tiles in waves with B multicast to a 2x1 cluster", "bs_w_c21", c21);
  }
  // The overlapped block-scaled kernel holds three sets of sums, so none of the large tiles below
  // fits it: its own archetypes are the same tile without the default's 2x1 cluster (or with one,
  // where the default has none) and ping-pong consumers of 128x64, drained (each epilogue under the
  // other consumer's MMAs).
  if (is_blockscaled(p) && get(bs_base, "MMA_DEPTH") == 1) {
    // The drained kernel on the widest tile it holds (two consumers of 64 x 192, 96 + 96 sums): each
    // k block's WGMMAs waited for, then promoted while the other consumer's WGMMAs run; per FLOP a
    // third less TMA traffic into shared memory than 128 x 128.
    FamilyConfig wide = bs_base;
    wide["BN"] = "192";
    wide["MMA_DEPTH"] = "0";
    wide["EPILOGUE"] = "2";  // 5 stages of 128x192 leave no room for the TMA epilogue's slots
    add("drained 128x192 (each k block waited for, promoted under the other consumer's WGMMAs)", "bs_d128x192", wide);
    FamilyConfig c = bs_base;
    if (get(bs_base, "CLUSTER_M") == 2) {
      c["CLUSTER_M"] = "1";
      add("the same tile without a cluster", "bs_c11", c);
    } else {
      c["CLUSTER_M"] = "2";
      add("the same tile, B multicast to a 2x1 cluster", "bs_c21", c);
    }
    add("ping-pong 128x64, each k block drained before its promotion", "bs_pp128x64",
        arrangement({128, 64, 2, 1}, 1, 1, reg_epilogue));
    // The default with its scales read by each consumer thread from global memory (SCALE_STAGE 0)
    // and the ring one stage deeper, last: the family's default until the H200 measured the staged scales.
    FamilyConfig direct = bs_base;
    direct["SCALE_STAGE"] = "0";
    direct = fp8_stages(direct);
    add("the scales read by each consumer from global memory, one stage more", "bs_direct_scales", direct);
  }
  // Where the default is not the waves (their grid fills the waves less well, or split-K), they
  // come last: 256x128 tiles in waves, A multicast to a 1x2 cluster where there are two tile columns.
  if (is_blockscaled(p) && !bs_waves && get(def, "SPLIT_K") == 1 && ceil_div(p.m, 128) >= 2) {
    add("256x128 tiles in waves (each consumer's two m64 atoms drained and promoted in turn)", "bs_w256x128",
        blockscaled_waves_of(def, ceil_div(p.n, 128) >= 2));
  }
  // Dense e4m3 with long K (the default promotes every 16 k blocks, one WGMMA group in flight
  // between promotions): every 8 and every 4 as well (closer to the library's error: at K = 32768
  // max abs 0.58-0.65 every 4 against 0.90-1.15 every 16, cuBLASLt 0.53), and the other of the two
  // tiles that hold both sets of sums, 128x192 and 128x128 with two consumers.
  if (promotes(p) && !is_blockscaled(p)) {
    for (const char* every : {"8", "4"}) {
      FamilyConfig c = def;
      c["PROMOTE_EVERY"] = every;
      c["MMA_DEPTH"] = "1";
      add(fmt::format("promotion every {} k blocks, one WGMMA group in flight", every), fmt::format("prom{}", every), c);
    }
    const int other_bn = get(def, "BN") == 192 ? 128 : 192;
    FamilyConfig other = arrangement({128, other_bn, 2, 0}, get(def, "SPLIT_K"), 1, 2);
    other["PROMOTE_EVERY"] = def.at("PROMOTE_EVERY");
    add(fmt::format("cooperative 128x{}, promotion every {} k blocks", other_bn, def.at("PROMOTE_EVERY")),
        fmt::format("co128x{}_prom{}", other_bn, def.at("PROMOTE_EVERY")), other);
  }
  // The large tiles: less L2->SM traffic per FLOP (256x192 is the largest tile two consumers
  // hold); the ping-pong 128x192 kernel hides each tile's epilogue under the other consumer's MMAs.
  auto add_large_tiles = [&] {
    add("cooperative 256x192", "co256x192", arrangement({256, 192, 2, 0}, 1, 1, 1));
    add("ping-pong 128x192, TMA-store epilogue", "pp128x192", arrangement({128, 192, 2, 1}, 1, 1, 1));
  };
  // Where there are many waves of them, their last wave costs little: they go first.
  const bool many_large_waves = tiles(256, 192) >= 4 * sms;
  if (many_large_waves) add_large_tiles();
  if (tiles(128, 128) >= sms) {
    // Enough tiles for the big archetypes, fastest first on the large typical shapes (the plain
    // ping-pong kernel is one CLUSTER_M step from the first, so not listed).
    add("ping-pong 128x128 with a 2x1 cluster", "pp128_c21", arrangement({128, 128, 2, 1}, 1, 2, reg_epilogue));
    add("cooperative 128x256 with a 2x1 cluster", "co128x256_c21", arrangement({128, 256, 2, 0}, 1, 2, 1));
    add("cooperative 128x256, TMA-store epilogue", "co128x256", arrangement({128, 256, 2, 0}, 1, 1, 1));
  }
  if (tiles(128, 256) >= sms) {
    // A wave of 128x256 tiles (stream-K is one step from this default). cuBLAS's 192x192 with
    // three consumers comes last: three consumers get no register reallocation (ptxas caps
    // 512-thread kernels at 128 registers), so each holds at most 64 x 192.
    if (!many_large_waves) add_large_tiles();
    add("cooperative 192x192, three consumers, 2x1 cluster", "co192x192_3c_c21",
        arrangement({192, 192, 3, 0}, 1, 2, 1));
  } else if (tiles(128, 128) >= sms) {
    // A wave of 128x128 tiles but not of 128x256 (the default: ping-pong 128x128): cuBLAS's own
    // tile there, 256x128 with a cluster. Stream-K is not offered (it lost in both of the
    // template's orders: docs/hopper-gemm-family.md).
    add("cooperative 256x128 with a 2x1 cluster", "co256x128_c21", arrangement({256, 128, 2, 0}, 1, 2, 1));
  } else {
    // Fewer tiles than SMs: the tile and split-K choices the cost model ranks next after the
    // default, and small tiles paired with a cluster (operand loads shared by TMA multicast).
    struct Ranked {
      double clocks;
      TileChoice t;
      int split;
    };
    std::vector<Ranked> ranked;
    const TileChoice choices[] = {{128, 256, 2, 0}, {128, 128, 2, 0}, {128, 64, 2, 0}, {64, 128, 1, 0}, {64, 64, 1, 0}};
    for (const auto& ch : choices) {
      for (int s : {1, 2, 3, 4, 6, 8}) {
        if (s > ceil_div(p.k, 64)) break;
        if (s > 1 && tiles(ch.bm, ch.bn) * s > 2LL * sms) break;
        ranked.push_back({estimate_clocks(ch, s, p, sms), ch, s});
      }
    }
    std::sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) { return a.clocks < b.clocks; });
    int taken = 0;
    for (const auto& r : ranked) {
      if (taken == 3) break;
      const size_t before = out.size();
      add(fmt::format("{}x{} tile{}", r.t.bm, r.t.bn, r.split > 1 ? fmt::format(", split-K {}", r.split) : ""),
          fmt::format("t{}x{}_s{}", r.t.bm, r.t.bn, r.split), arrangement(r.t, r.split, 1, reg_epilogue));
      taken += out.size() > before;
    }
    add("64x128 tile with a 2x1 cluster", "t64x128_c21", arrangement({64, 128, 1, 0}, 1, 2, reg_epilogue));
    // cuBLAS's choice at 1024x1024x4096 (ncu: 128x64, 8 stages), which single steps from the
    // default (BN, then STAGES twice) do not reach within a tune's rounds.
    add("128x64 tile, 8 stages", "t128x64_st8", arrangement({128, 64, 2, 0}, 1, 1, reg_epilogue, 8));
    // Stream-K is not offered either (it lost to the same tile without it).
  }
  return out;
}

FamilyConfig HopperGemmFamily::default_config(const FamilyProblem& p) const { return default_config(p, true); }

FamilyConfig HopperGemmFamily::default_config(const FamilyProblem& p, bool waves) const {
  const int sms = gemm::typical_sm_count(p.arch.empty() ? "sm_90a" : p.arch);
  const bool f32_out = p.dtype.output == ScalarType::f32;
  auto tiles = [&](int tm, int tn) { return ceil_div(p.m, tm) * ceil_div(p.n, tn); };
  // With a full wave of 128x256 tiles, the cooperative 128x256 kernel with a TMA-store epilogue;
  // with a full wave of 128x128 tiles, the ping-pong 128x128 kernel; below that, the tile and
  // split-K count the cost model above prefers, so that small and long-K problems fill the GPU
  // (the measurements behind these: docs/hopper-gemm-family.md, "Default configuration").
  TileChoice t{128, 256, 2, 0};
  int split = 1;
  int epilogue = 1;
  if (tiles(128, 256) < sms) {
    if (tiles(128, 128) >= sms) {
      t = {128, 128, 2, 1};
      epilogue = f32_out ? 0 : 2;
    } else {
      const TileChoice choices[] = {{128, 256, 2, 0}, {128, 128, 2, 0}, {128, 64, 2, 0}, {64, 128, 1, 0}, {64, 64, 1, 0}};
      double best = -1;
      for (const auto& ch : choices) {
        for (int s : {1, 2, 3, 4, 6, 8}) {
          if (s > ceil_div(p.k, 64)) break;
          if (s > 1 && tiles(ch.bm, ch.bn) * s > 2LL * sms) break;  // enough units already
          const double est = estimate_clocks(ch, s, p, sms);
          if (best < 0 || est < best * 0.97) {  // a clear gain, else keep the simpler choice
            best = est;
            t = ch;
            split = s;
          }
        }
      }
      epilogue = f32_out ? 0 : 2;
    }
  }
  FamilyConfig c = arrangement(t, split, 1, epilogue);
  if (is_fp8(p)) c = fp8_stages(c);
  if (promotes(p)) {
    // 128 x 128 tiles, each consumer 64 rows (64 + 64 f32 registers with the promoted sums),
    // split-K while the tiles are far from a wave and K is long. Dense e4m3 with a wave of tiles
    // takes 128 x 192 (two consumers of 64 x 192, 96 + 96 registers): the tile every tune kept at
    // the 7 promoted typical shapes on the H200 (docs/fp8.md, "Two-level accumulation").
    int s = 1;
    const long long t128 = tiles(128, 128);
    while (s < 4 && t128 * s * 2 <= sms * 3 / 2 && ceil_div(p.k, 128) >= 4LL * s * 2) s *= 2;
    // (where its last wave fills about as well: not at 512x8192x8192 or 4096x1024x8192, 1.3 and 1.5
    // waves of 128 x 192 against 1.9 of 128 x 128, where the tunes kept 128 x 128).
    auto wave_fill = [&](int tm, int tn) {
      const long long t = tiles(tm, tn);
      return static_cast<double>(t) / static_cast<double>(ceil_div(t, static_cast<long long>(sms)) * sms);
    };
    const bool wide = !is_blockscaled(p) && s == 1 && wave_fill(128, 192) >= 0.95 * wave_fill(128, 128);
    c = fp8_stages(arrangement({128, wide ? 192 : 128, 2, 0}, s, 1, 2));
    // The block-scaled kernel promotes every stage (one scale block each). It promotes a block while
    // the next block's WGMMAs run (MMA_DEPTH 1, two sets of WGMMA sums) where the three sets of
    // registers fit: on the H200 that is 1.6-1.7 x draining each block (1027-1064 against 630 TFLOPS
    // at 8192^3, 1017-1039 against 620 at 4096x7168x7168, with the pair-wise promotion ptxas does not
    // serialize; docs/fp8.md). Dense e4m3 promotes every 16 k blocks with one WGMMA group in
    // flight between promotions: on the H200, 128 x 192 at 8192^3 measured 0.955 x cuBLASLt FP8
    // against 0.934 every 8, 0.892 every 4 (0.57 every block, 128 x 128), and passed at K = 32768
    // (max abs error 1.15; every 32 failed there; docs/fp8.md).
    c["PROMOTE_EVERY"] = is_blockscaled(p) ? "1" : "16";
    c["MMA_DEPTH"] = promoting_mma_depth(p, c);
    // The overlapped block-scaled kernel multicasts B to a 2x1 cluster where the grid has two tile
    // rows: `croq tune` kept that (its first alternative then) at 4096x7168x7168 and 8192^3 on the
    // H200, 0.850 and 0.849 x cuBLASLt against 0.832 and 0.823 without; by hand with the
    // descriptors computed once per stage, 0.897 and 0.890 (docs/fp8.md).
    if (is_blockscaled(p) && get(c, "MMA_DEPTH") == 1 && get(c, "SPLIT_K") == 1 && ceil_div(p.m, get(c, "BM")) >= 2)
      c["CLUSTER_M"] = "2";
    // The block-scaled kernel stores its tile through the chunked TMA epilogue where the slots fit
    // beside its ring (6 stages of 128x128: 230528 bytes): against the register epilogue on the H200,
    // 0.910 against 0.885 x cuBLASLt at 8192^3, 0.914 against 0.902 at 4096x7168x7168, 0.912 against
    // 0.792 at 8192x8192x2048; time against K put 60 us of a launch outside the main loop with the
    // register epilogue, 15 with this one (docs/fp8.md).
    if (is_blockscaled(p)) {
      FamilyConfig tma = c;
      tma["EPILOGUE"] = "1";
      if (!violation(tma, p)) c = tma;
      // Its scales are staged in shared memory with each stage (SCALE_STAGE 1: a producer warp's
      // cp.async, LDS in the consumers) instead of read by every consumer thread from global
      // memory, with as many stages as then fit (5 of 128x128 beside the TMA epilogue): on the H200
      // 0.939 against 0.870 x cuBLASLt at 8192^3 by hand, 0.954 against 0.882 at 4096x7168x7168,
      // and staged with the drained and the register-epilogue kernels too (docs/fp8.md).
      FamilyConfig staged = c;
      staged["SCALE_STAGE"] = "1";
      staged = fp8_stages(staged, get(c, "STAGES"));
      if (get(staged, "STAGES") >= 4 && !violation(staged, p)) c = staged;
      // 256x128 tiles in waves: each consumer's two m64 atoms issued, drained and promoted one after
      // the other (one set of WGMMA sums, 64 + 128 registers), the next k block's stage waited for under
      // the last wave, A multicast to a 1x2 cluster, 3 stages beside two epilogue slots per consumer.
      // Per k block shared memory takes 48 KB from TMA and gives 96 KB to the WGMMAs for 1024
      // tensor-core cycles, where 128x128 takes 32 and gives 48 for 512. Where the grid of them fills
      // the GPU's waves as well as 128x128 (the same rows, split evenly): on an H100, 0.997 x cuBLASLt
      // at 8192^3 against 0.960 for the overlapped 128x128 in the same call; with 4 stages and one
      // slot 0.990 / 0.996 at 8192^3 / 4096x7168x7168, with the 2x1 cluster 0.970 / 0.985
      // (docs/fp8.md). Measured at K 7168 and 8192, so taken from K 4096: at shorter K the time per tile
      // weighs more, and the overlapped 128x128 stores each tile under the next one's first k block
      // (0.990 x cuBLASLt at 8192x8192x2048), which the waves do not.
      const long long t256 = tiles(256, 128), t128 = tiles(128, 128);
      if (waves && get(c, "SPLIT_K") == 1 && p.k >= 4096 && 2 * t256 == t128 && t256 >= sms &&
          ceil_div(p.n, 128) >= 2 && wave_fill(256, 128) >= wave_fill(128, 128)) {
        const FamilyConfig w = blockscaled_waves_of(c, true);
        if (get(w, "STAGES") == 3 && !violation(w, p)) c = w;
      }
    }
  }
  if (violation(c, p)) {
    // Fall back to the smallest configuration, legal for every supported problem.
    c["BM"] = "64";
    c["BN"] = "64";
    c["CONSUMERS"] = "1";
    c["PINGPONG"] = "0";
    c["STAGES"] = "4";
    c["SPLIT_K"] = "1";
    c["EPILOGUE"] = "0";
    if (is_fp8(p)) c = fp8_stages(c, 4);
    if (promotes(p)) c["MMA_DEPTH"] = "0";
  }
  return c;
}

std::string HopperGemmFamily::render_source(const FamilyConfig& c, const FamilyProblem& p_in) const {
  const FamilyProblem p = as_measured(p_in);
  if (!is_fp8(p)) return gemm::render_config(name(), template_path(), k_order, c, p);
  // e4m3: one-byte elements, its dtype bit, B "row.col" only.
  std::vector<std::pair<std::string, std::string>> defines;
  for (const char* n : k_order) {
    auto it = c.find(n);
    if (it != c.end()) defines.emplace_back(std::string("CROQ_") + n, it->second);
  }
  defines.emplace_back("CROQ_ELEM_BYTES", "1");
  if (is_blockscaled(p)) defines.emplace_back("CROQ_BLOCKSCALE", "1");
  else if (promotes(p)) defines.emplace_back("CROQ_PROMOTE", "1");
  defines.emplace_back("CROQ_DTYPES", std::to_string(dtype_bit(p.dtype)));
  defines.emplace_back("CROQ_BLAYOUTS", "2");
  return gemm::render_template(name(), template_path(), defines, p);
}

std::vector<std::string> HopperGemmFamily::build_flags(const FamilyConfig&, const FamilyProblem&) const {
  return {"-gencode=arch=compute_90a,code=sm_90a", "-std=c++17"};
}

std::vector<std::string> HopperGemmFamily::params_for_bottleneck(const std::string& bottleneck) const {
  if (bottleneck == "compute_bound")
    return {"BN", "CONSUMERS", "STREAM_K", "PINGPONG", "BM", "MMA_DEPTH", "PROMOTE_EVERY", "EPILOGUE", "STAGES"};
  if (bottleneck == "memory_bound") return {"CLUSTER_M", "CLUSTER_N", "RASTER", "GROUP", "BN", "BM", "EPILOGUE", "STAGES"};
  if (bottleneck == "latency_bound")
    return {"SPLIT_K", "STREAM_K", "STAGES", "BK", "MMA_DEPTH", "PROMOTE_EVERY", "CONSUMERS", "PERSISTENT", "EPILOGUE"};
  if (bottleneck == "launch_bound") return {"SPLIT_K", "STREAM_K", "BM", "BN", "PERSISTENT", "CLUSTER_M", "STAGES"};
  return {"STAGES", "BN", "CLUSTER_M", "SPLIT_K", "STREAM_K", "GROUP", "EPILOGUE", "BM", "BK"};  // mixed
}

}  // namespace croq
