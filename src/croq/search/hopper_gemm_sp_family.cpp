// The hopper_gemm_sp kernel family (hopper_gemm_sp_family.hpp): its parameter space, the
// constraint checker that mirrors the template's static_asserts and adds what only the problem
// knows (dtype-dependent shared memory and swizzle widths, cluster vs tile grid), defaults per
// problem, and rendering.
#include "croq/search/hopper_gemm_sp_family.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <vector>
#include <fmt/format.h>

#include "croq/search/gemm_family_common.hpp"

namespace croq {

namespace {

int get(const FamilyConfig& c, const char* name) { return gemm::int_param(c, name).value_or(0); }

using gemm::ceil_div;

const char* k_order[] = {"BM",        "BN",        "BK",       "STAGES",    "CONSUMERS", "PINGPONG",
                         "PERSISTENT", "RASTER",    "GROUP",    "CLUSTER_M", "CLUSTER_N", "EPILOGUE",
                         "SWIZZLE_A",  "SWIZZLE_B", "MMA_DEPTH", "META",     "SPLIT_K",   "SPLIT_TAIL",
                         "PROMOTE",    "PROMOTE_SUB"};

bool is_sparse_op(const std::string& op) { return op == "gemm_sp"; }

}  // namespace

int HopperGemmSpFamily::dtype_bit(const DtypePair& d) {
  using S = ScalarType;
  if (d.compute != S::f32) return 0;
  if (d.input == S::f16) return d.output == S::f32 ? 1 : d.output == S::f16 ? 2 : 0;
  if (d.input == S::bf16) return d.output == S::f32 ? 4 : d.output == S::bf16 ? 8 : 0;
  if (d.input == S::e4m3) return d.output == S::f16 ? 16 : d.output == S::bf16 ? 32 : d.output == S::f32 ? 64 : 0;
  return 0;
}

int HopperGemmSpFamily::input_bytes(const DtypePair& d) { return d.input == ScalarType::e4m3 ? 1 : 2; }

bool HopperGemmSpFamily::supports(const FamilyProblem& p) const {
  if (!is_sparse_op(p.op)) return false;
  if (!p.arch.empty() && p.arch.rfind("sm_90", 0) != 0) return false;
  return dtype_bit(p.dtype) != 0 && p.m > 0 && p.n > 0 && p.k > 0 && p.k % 8 == 0;
}

std::vector<ParamSpec> HopperGemmSpFamily::params() const {
  return {
      {"BM", {"64", "128", "192", "256"}, true, "tiling", "CTA tile rows (64 x m64 WGMMA atoms per consumer)"},
      {"BN", {"64", "96", "128", "160", "192", "224", "256"}, true, "tiling", "CTA tile columns = WGMMA N"},
      {"BK", {"64", "128"}, false, "tiling",
       "logical K of one pipeline stage (2 or 4 sparse k32 WGMMAs for 16-bit inputs, 1 or 2 k64 for e4m3)"},
      {"STAGES", {"2", "3", "4", "5", "6", "7", "8"}, false, "pipeline",
       "shared-memory stages the TMA producer runs ahead"},
      {"CONSUMERS", {"1", "2"}, true, "compute",
       "consumer warpgroups beside the producer warpgroup (2: setmaxnreg moves registers to them)"},
      {"PINGPONG", {"0", "1"}, true, "compute",
       "0: the consumers split each tile (cooperative); 1: they take whole tiles in turn, one's epilogue "
       "overlapping the other's MMAs"},
      {"PERSISTENT", {"0", "1"}, true, "pipeline", "one CTA per SM looping over tiles (1) or one CTA per tile (0)"},
      {"RASTER", {"0", "1", "2", "3"}, false, "memory",
       "tile order: 0 row by row, 1 bands of GROUP tile-rows, 2 bands of GROUP tile-columns, 3 as 1 with "
       "every other band walked backwards (snake)"},
      {"GROUP", {"1", "2", "4", "8", "16"}, false, "memory", "band width of the grouped tile order"},
      {"CLUSTER_M", {"1", "2"}, true, "memory", "CTAs per cluster along M sharing B tiles by TMA multicast"},
      {"CLUSTER_N", {"1", "2"}, true, "memory", "CTAs per cluster along N sharing compressed A tiles by TMA multicast"},
      {"EPILOGUE", {"0", "1", "2"}, true, "memory",
       "0: stores from registers; 1: swizzled shared memory (stmatrix) and TMA tensor stores; 2: registers, "
       "16-bit outputs transposed across each lane quad so every thread stores 16 contiguous bytes"},
      {"SWIZZLE_A", {"32", "64", "128"}, false, "memory",
       "shared-memory swizzle of the compressed A tile in bytes (at most a tile row: BK/2 elements)"},
      {"SWIZZLE_B", {"64", "128"}, false, "memory",
       "shared-memory swizzle of the B tile in bytes (at most a tile row: BK elements; a sparse WGMMA reads 64 "
       "bytes of K)"},
      {"MMA_DEPTH", {"0", "1"}, false, "compute",
       "WGMMA groups kept in flight when a stage is released (1: the next block's metadata goes to a second "
       "register set)"},
      {"META", {"0", "1", "2"}, true, "memory",
       "sparse metadata: 0 TMA'd with the stage, each WGMMA's word read from shared memory before it; 1 TMA'd, "
       "the stage's words read at once before its first WGMMA (hoisted); 2 not staged: each thread loads its "
       "words for the next k block from L2 into registers while the current block's WGMMAs run"},
      {"SPLIT_K", {"1", "2", "3", "4", "5", "6", "8"}, true, "tiling",
       "k slices per output tile, each its own work unit, reduced in slice order through the workspace "
       "(fills the GPU when there are fewer tiles than SMs and K is long)"},
      {"SPLIT_TAIL", {"0", "1"}, true, "tiling",
       "with SPLIT_K>1: 0 splits every tile; 1 only the tiles of the last, partly filled wave (or the last "
       "wave and a half) when their slices end the kernel sooner, the others computed whole first (1024 tiles "
       "on 132 SMs: 7.8 waves instead of 8 with the last 100 in 5 slices)",
       "0"},
      {"PROMOTE", {"0", "1", "2", "4", "8", "16"}, true, "compute",
       "e4m3 only: every PROMOTE k blocks the WGMMA accumulators are added into separate f32 registers and the "
       "next WGMMA starts afresh (0: off). An FP8 WGMMA accumulates with reduced precision, so without this the "
       "error grows with K; it doubles the accumulator registers",
       "0"},
      {"PROMOTE_SUB", {"0", "1"}, true, "compute",
       "with PROMOTE=1 (e4m3): 1 computes each k block one m64 x BN/2 sub-tile at a time into a small WGMMA "
       "accumulator added into the f32 tile sums at once (1.25-1.5 x the tile's accumulator registers instead of "
       "2 x; needs MMA_DEPTH=0 and two consumers, each waiting for its sub-tile while the other computes)",
       "0"},
  };
}

long long HopperGemmSpFamily::smem_bytes(const FamilyConfig& c, int es) {
  const long long stages = get(c, "STAGES"), bm = get(c, "BM"), bn = get(c, "BN"), bk = get(c, "BK");
  const long long ab = bm * (bk / 2) * es + bn * bk * es;
  const long long e = get(c, "META") == 2 ? 0 : (bm / 64) * (bk / 64) * 512;
  const long long epi = get(c, "EPILOGUE") == 1 ? get(c, "CONSUMERS") * 2LL * 8192 : 0;
  const long long bars = ceil_div((2 * stages + 2) * 8, 128) * 128;
  const long long keep = get(c, "CONSUMERS") * 128LL * 16;  // the metadata keep-alive scratch
  return 1024 + stages * (ab + e) + epi + bars + keep;
}

int HopperGemmSpFamily::accumulator_registers(const FamilyConfig& c) {
  const int split = get(c, "PINGPONG") == 1 ? 1 : std::max(1, get(c, "CONSUMERS"));
  return (get(c, "BM") / split / 64) * get(c, "BN") / 2;
}

int HopperGemmSpFamily::accumulator_registers(const FamilyConfig& c, const DtypePair& d) {
  const int tile = accumulator_registers(c);
  if (input_bytes(d) != 1 || get(c, "PROMOTE") == 0) return tile;
  return get(c, "PROMOTE_SUB") == 1 ? tile + get(c, "BN") / 4 : 2 * tile;
}

bool HopperGemmSpFamily::needs_promotion(const FamilyProblem& p, int split) {
  if (input_bytes(p.dtype) != 1) return false;
  return ceil_div(p.k, std::max(1, split)) > k_promote_above_k;
}

std::optional<FamilyConfig> HopperGemmSpFamily::with_promotion(FamilyConfig c, const DtypePair& d) {
  if (input_bytes(d) != 1) return std::nullopt;
  const int bk = std::max(64, get(c, "BK"));
  c["PROMOTE"] = std::to_string(std::max(1, k_promote_interval_k / bk));
  c["PROMOTE_SUB"] = "0";
  if (accumulator_registers(c, d) <= max_accumulators(c, d)) return c;
  c["PROMOTE"] = "1";
  c["PROMOTE_SUB"] = "1";
  c["MMA_DEPTH"] = "0";
  const bool two = get(c, "CONSUMERS") == 2 && get(c, "PINGPONG") == 0;
  const bool one_atom = accumulator_registers(c) == get(c, "BN") / 2;
  if (two && one_atom && (get(c, "BN") / 2) % 32 == 0 && accumulator_registers(c, d) <= max_accumulators(c, d))
    return c;
  return std::nullopt;
}

bool HopperGemmSpFamily::metadata_squeezes(const FamilyConfig& c, const DtypePair& d) {
  const int meta = get(c, "META");
  const bool pingpong = get(c, "PINGPONG") == 1;
  const bool wide_k = input_bytes(d) == 2 && get(c, "BK") == 128;
  const bool pingpong_transpose = pingpong && get(c, "EPILOGUE") == 2 && d.output != ScalarType::f32;
  return wide_k || pingpong_transpose || meta == 0 || (meta == 2 && pingpong);
}

int HopperGemmSpFamily::max_accumulators(const FamilyConfig& c, const DtypePair& d) {
  const int base = get(c, "SPLIT_K") > 1 ? 160 : 192;
  return metadata_squeezes(c, d) ? base - 32 : base;
}

int HopperGemmSpFamily::effective_split(const FamilyConfig& c, const FamilyProblem& p) {
  const long long kb = ceil_div(p.k, std::max(1, get(c, "BK")));
  return static_cast<int>(std::min<long long>(std::max(1, get(c, "SPLIT_K")), kb));
}

int HopperGemmSpFamily::shortest_split(const FamilyConfig& c, const FamilyProblem& p) {
  return get(c, "SPLIT_TAIL") == 1 ? 1 : effective_split(c, p);
}

int HopperGemmSpFamily::tail_dp_units(int units, int split, int clusters) {
  if (split <= 1 || clusters <= 0 || units <= clusters) return 0;
  const int r = units % clusters;
  if (r == 0) return units;
  int best_tail = 0;
  double best = 0;
  for (int tail = r; tail <= r + clusters && tail <= units; tail += clusters) {
    const double whole = ceil_div(tail, clusters);
    const double sliced = static_cast<double>(ceil_div(static_cast<long long>(tail) * split, clusters)) / split;
    if (whole - sliced > best + 1e-9) {
      best = whole - sliced;
      best_tail = tail;
    }
  }
  return units - best_tail;
}

long long HopperGemmSpFamily::split_workspace_bytes(const FamilyConfig& c, const FamilyProblem& p) {
  const int split = effective_split(c, p);
  if (split <= 1) return 0;
  const int bm = get(c, "BM"), bn = get(c, "BN"), cm = get(c, "CLUSTER_M"), cn = get(c, "CLUSTER_N");
  long long tiles = ceil_div(ceil_div(p.m, bm), cm) * cm * ceil_div(ceil_div(p.n, bn), cn) * cn;
  // A split tail is under two waves: the template sizes its slots for 2 x SMs tiles at most.
  if (get(c, "SPLIT_TAIL") == 1)
    tiles = std::min<long long>(tiles, 2LL * gemm::typical_sm_count(p.arch.empty() ? "sm_90a" : p.arch));
  const int groups = get(c, "PINGPONG") == 1 ? 1 : get(c, "CONSUMERS");
  return tiles * (split - 1) * (static_cast<long long>(bm) * bn * 4 + groups * 8);
}

std::optional<std::string> HopperGemmSpFamily::violation(const FamilyConfig& c, const FamilyProblem& p) const {
  if (!is_sparse_op(p.op)) return fmt::format("hopper_gemm_sp computes the 2:4 sparse gemm_sp, not {}", p.op);
  if (!p.arch.empty() && p.arch.rfind("sm_90", 0) != 0)
    return fmt::format("hopper_gemm_sp needs sm_90a (sparse WGMMA, TMA, setmaxnreg); the target is {}", p.arch);
  if (dtype_bit(p.dtype) == 0)
    return fmt::format("hopper_gemm_sp computes f16/bf16 inputs into f32 or the input type and e4m3 into f16, bf16 "
                       "or f32, not {}",
                       p.dtype.canonical);
  if (p.m <= 0 || p.n <= 0 || p.k <= 0) return "the problem has an empty dimension";
  if (p.k % 8 != 0) return fmt::format("K={} is not a multiple of 8, which 2:4 metadata needs", p.k);
  if (auto bad = gemm::check_listed_values(c, params())) return bad;

  const int es = input_bytes(p.dtype);
  const int bm = get(c, "BM"), bn = get(c, "BN"), bk = get(c, "BK");
  const int consumers = get(c, "CONSUMERS");
  const int cm = get(c, "CLUSTER_M"), cn = get(c, "CLUSTER_N");
  const bool pingpong = get(c, "PINGPONG") == 1;
  if (pingpong && consumers != 2) return "PINGPONG=1 alternates tiles between two consumers: it needs CONSUMERS=2";
  if (!pingpong && bm % (64 * consumers) != 0)
    return fmt::format("BM={} cannot be split into {} consumer warpgroups of m64 WGMMA atoms", bm, consumers);
  const int promote = get(c, "PROMOTE");
  if (promote > 0 && es != 1)
    return "PROMOTE applies to e4m3 inputs (16-bit inputs accumulate in full f32 precision): PROMOTE=0";
  if (get(c, "PROMOTE_SUB") == 1) {
    if (promote != 1)
      return "PROMOTE_SUB=1 promotes each sub-tile after every k block: it needs PROMOTE=1";
    if (get(c, "MMA_DEPTH") != 0)
      return "PROMOTE_SUB=1 waits for each sub-tile's WGMMAs before the next: the same kernel needs MMA_DEPTH=0";
    if (consumers != 2 || pingpong)
      return "PROMOTE_SUB=1 leaves the tensor cores idle while a consumer waits for its sub-tile: it needs two "
             "cooperative consumers (CONSUMERS=2, PINGPONG=0) so that the other one computes meanwhile";
    if ((bn / 2) % 32 != 0) return fmt::format("PROMOTE_SUB=1 computes BN/2={} columns per WGMMA: BN/2 must be a multiple of 32", bn / 2);
    if (bm != 128)
      return fmt::format("PROMOTE_SUB=1 needs one m64 atom per consumer (BM=128 with two consumers, not {}): with two "
                         "atoms ptxas spills (92-116 bytes at 128 + 32 accumulators)",
                         bm);
  }
  if (accumulator_registers(c, p.dtype) > max_accumulators(c, p.dtype)) {
    return fmt::format("{} f32 accumulators per consumer thread (rows per consumer / 64 x BN/2{}) exceed {}{}{}: the "
                       "consumer would spill",
                       accumulator_registers(c, p.dtype),
                       promote == 0 ? ""
                       : get(c, "PROMOTE_SUB") == 1
                           ? ", plus BN/4 for the promoted sub-tile (PROMOTE_SUB=1)"
                           : ", twice with PROMOTE (or PROMOTE_SUB=1 with 1.25-1.5 times, where BN/2 is a multiple of 32)",
                       max_accumulators(c, p.dtype),
                       get(c, "SPLIT_K") > 1 ? " with split-K" : "",
                       metadata_squeezes(c, p.dtype)
                           ? " (metadata words in registers beside them: 16-bit inputs at BK=128, a ping-pong kernel "
                             "with the quad-transposed epilogue or with META=2, or META=0)"
                           : "");
  }
  const int a_row = bk / 2 * es, b_row = bk * es;
  if (get(c, "SWIZZLE_A") > a_row)
    return fmt::format("SWIZZLE_A={} is wider than a compressed A tile row ({} bytes at BK={}): the same kernel as "
                       "SWIZZLE_A={}",
                       get(c, "SWIZZLE_A"), a_row, bk, a_row);
  if (get(c, "SWIZZLE_B") > b_row)
    return fmt::format("SWIZZLE_B={} is wider than a B tile row ({} bytes at BK={}): the same kernel as SWIZZLE_B={}",
                       get(c, "SWIZZLE_B"), b_row, bk, b_row);
  if ((bm / cn) % 8 != 0) return fmt::format("A slices of BM/CLUSTER_N={} rows are not multiples of 8", bm / cn);
  if ((bn / cm) % 8 != 0) return fmt::format("B slices of BN/CLUSTER_M={} rows are not multiples of 8", bn / cm);
  const long long smem = smem_bytes(c, es);
  if (smem > k_smem_limit)
    return fmt::format("needs {} bytes of shared memory, more than the {} a block may use on sm_90", smem,
                       k_smem_limit);
  const long long tiles_m = ceil_div(p.m, bm), tiles_n = ceil_div(p.n, bn);
  if (cm > tiles_m) return fmt::format("CLUSTER_M={} exceeds the {} tile rows of the grid", cm, tiles_m);
  if (cn > tiles_n) return fmt::format("CLUSTER_N={} exceeds the {} tile columns of the grid", cn, tiles_n);
  if (tiles_m * tiles_n > (1LL << 31) / 2) return "the problem has more tiles than the kernel can index";
  if (get(c, "EPILOGUE") == 2 && p.dtype.output == ScalarType::f32)
    return "EPILOGUE=2 transposes 16-bit outputs; for f32 outputs it is EPILOGUE=0";
  const int split = get(c, "SPLIT_K");
  if (get(c, "SPLIT_TAIL") == 1 && split <= 1)
    return "SPLIT_TAIL=1 splits the last wave's tiles SPLIT_K ways: it needs SPLIT_K>1";
  if (split > 1) return gemm::split_k_refusal(c, p, bk, tiles_m * tiles_n, split_workspace_bytes(c, p));
  return std::nullopt;
}

namespace {

struct TileChoice {
  int bm, bn, consumers, pingpong;
};

// A coarse cost model on an H100/H200-class part, in SM clocks, to pick a starting point (the
// search measures from there). Per k block of 64 a tile costs the larger of its tensor-core time
// (sparse WGMMA: 8192 dense-equivalent FLOP per clock for 16-bit inputs, 16384 for e4m3, at ~70 %)
// and its operand traffic at ~31 bytes/clock per SM from L2: compressed A (BM x 32 elements, shared
// by the CLUSTER_N CTAs of a cluster), B (BN x 64, shared by CLUSTER_M) and the metadata (8 bytes
// per row). Fitted on the H200 (bench/gpu/gemm_sp_kernels.sh, f16, TMA-store epilogue, 2x1
// clusters: per k block 256 x 192 takes 1.33 times as long as 128 x 256 for 1.5 times the work,
// 256 x 128 4 % longer than 128 x 256); with the partial last wave it ranks 128 x 256 and 256 x 192
// within 1 % at 4096 x 8192 x 8192 and 4096^3 and 256 x 192 9-12 % ahead at 8192^3,
// 12288 x 12288 x 4096 and 12288 x 4096 x 4096, as measured. Units run in
// waves of `sms`, each wave pays a pipeline fill; split-K adds the partial-sum traffic and a flag
// round trip. `promo`: the clocks promotion adds to the tensor-core side per k block of 64
// (promotion_clocks below).
double estimate_clocks(const TileChoice& t, int split, const FamilyProblem& p, int sms, int cm = 1, int cn = 1,
                       double promo = 0) {
  const int es = HopperGemmSpFamily::input_bytes(p.dtype);
  const double kb = std::ceil(static_cast<double>(p.k) / 64.0);
  const double tiles = std::ceil(static_cast<double>(p.m) / t.bm) * std::ceil(static_cast<double>(p.n) / t.bn);
  const double units = tiles * split;
  const double waves = std::ceil(units / sms);
  const double kb_slice = std::ceil(kb / split);
  const double rate = es == 1 ? 16384 : 8192;
  const double bytes = t.bm * 32.0 * es / cn + t.bn * 64.0 * es / cm + t.bm * 8.0;
  const double per_kb = std::max(t.bm * t.bn * 64.0 * 2 / rate / 0.7 + promo, bytes / 31);
  const double out_bytes = p.dtype.output == ScalarType::f32 ? 4 : 2;
  const double epilogue = t.bm * t.bn * out_bytes / 64;
  const double fill = 1500;
  const double reduce = split > 1 ? 2000 + (split - 1) * t.bm * t.bn * 4.0 / 31 + t.bm * t.bn * 4.0 / 64 : 0;
  const bool hidden = t.pingpong && units >= 2.0 * sms;
  return waves * (kb_slice * per_kb + fill + (hidden ? 0 : epilogue) + reduce);
}

// What promotion (PROMOTE, e4m3) costs per k block of 64, in SM clocks, an estimate until measured:
// each promotion adds every WGMMA accumulator into the f32 sums, one FADD per accumulator and
// consumer thread, so each SM sub-partition issues CONSUMERS x (tile accumulators) of them (one
// warp of each consumer warpgroup runs there), and drains the warpgroup's WGMMA pipeline first
// (once for the whole tile, once per sub-tile with PROMOTE_SUB: 2 x the m64 atoms), ~64 clocks
// each. With two consumers the other warpgroup's WGMMAs keep the tensor cores busy meanwhile, so a
// quarter of that shows; with one consumer all of it.
double promotion_clocks(const FamilyConfig& c, const DtypePair& d) {
  const int promote = get(c, "PROMOTE");
  if (HopperGemmSpFamily::input_bytes(d) != 1 || promote == 0) return 0;
  const int consumers = std::max(1, get(c, "CONSUMERS"));
  const double acc = HopperGemmSpFamily::accumulator_registers(c);
  const double atoms = acc / (get(c, "BN") / 2.0);
  const bool sub = get(c, "PROMOTE_SUB") == 1;
  const double per_promotion = (consumers * acc + 64.0 * (sub ? 2 * atoms : 1)) * (consumers == 2 ? 0.25 : 1.0);
  return per_promotion * 64.0 / (promote * std::max(64, get(c, "BK")));
}

// A configuration of the given arrangement with the family's usual settings: persistent, grouped
// order, BK 64 for 16-bit inputs and 128 for e4m3 (two sparse WGMMAs per stage either way), the
// widest swizzles the tile rows allow, metadata hoisted, one WGMMA group left in flight when a stage
// is released (mma_depth), and as many stages as fit, up to max_stages. A 2x1 cluster falls back to
// none where the grid has a single tile row.
FamilyConfig arrangement(const TileChoice& t, int split, int cluster_m, int epilogue, const FamilyProblem& p,
                         int max_stages = 6, int mma_depth = 1) {
  const int es = HopperGemmSpFamily::input_bytes(p.dtype);
  const int bk = es == 1 ? 128 : 64;
  if (cluster_m > 1 && ceil_div(p.m, t.bm) < cluster_m) cluster_m = 1;
  FamilyConfig c;
  c["BM"] = std::to_string(t.bm);
  c["BN"] = std::to_string(t.bn);
  c["BK"] = std::to_string(bk);
  c["CONSUMERS"] = std::to_string(t.consumers);
  c["PINGPONG"] = std::to_string(t.pingpong);
  c["PERSISTENT"] = "1";
  c["RASTER"] = "1";
  c["GROUP"] = "8";
  c["CLUSTER_M"] = std::to_string(cluster_m);
  c["CLUSTER_N"] = "1";
  c["EPILOGUE"] = std::to_string(epilogue);
  c["SWIZZLE_A"] = std::to_string(std::min(128, bk / 2 * es));
  c["SWIZZLE_B"] = std::to_string(std::min(128, bk * es));
  c["MMA_DEPTH"] = std::to_string(mma_depth);
  c["META"] = "1";
  c["SPLIT_K"] = std::to_string(split);
  c["SPLIT_TAIL"] = "0";
  c["PROMOTE"] = "0";
  c["PROMOTE_SUB"] = "0";
  c["STAGES"] = "2";
  for (int s = max_stages; s >= 2; --s) {
    c["STAGES"] = std::to_string(s);
    if (HopperGemmSpFamily::smem_bytes(c, es) <= HopperGemmSpFamily::k_smem_limit) break;
  }
  return c;
}

const TileChoice k_small_choices[] = {
    {256, 192, 2, 0}, {128, 256, 2, 0}, {128, 128, 2, 0}, {128, 64, 2, 0}, {64, 128, 1, 0}, {64, 64, 1, 0}};

}  // namespace

FamilyConfig HopperGemmSpFamily::default_config(const FamilyProblem& p) const {
  const int sms = gemm::typical_sm_count(p.arch.empty() ? "sm_90a" : p.arch);
  const bool f32_out = p.dtype.output == ScalarType::f32;
  const int reg_epilogue = f32_out ? 0 : 2;
  auto tiles = [&](int tm, int tn) { return ceil_div(p.m, tm) * ceil_div(p.n, tn); };
  // With a full wave of 256 x 128 tiles: the cooperative tile among 128 x 256, 256 x 192 (two
  // consumers of 128 x 192, the most a consumer holds: the least L2 -> SM traffic per FLOP) and
  // 256 x 128 that the cost model prefers by 3 % or more in that order (the partial last wave and
  // the operand traffic decide: 128 x 256 at 4096 x 8192 x 8192 and 4096^3, 256 x 192 at 8192^3 and
  // 16384 x 8192 x 8192), in a 2x1 cluster (B
  // multicast) with the TMA-store epilogue, as measured fastest on the H200. With a wave of
  // 128 x 128 tiles but not of 256 x 128, the cooperative 128 x 256 tile the same way; below that,
  // the tile and split-K count the cost model prefers, so that small and long-K problems fill the
  // GPU.
  TileChoice t{256, 192, 2, 0};
  int split = 1;
  // e4m3 with long k slices promotes (needs_promotion): only tiles where promotion fits are
  // candidates, charged its cost.
  auto cheapest = [&](const std::vector<TileChoice>& choices, bool with_split, int cm, int epilogue) {
    double best = -1;
    for (const auto& ch : choices) {
      for (int s : {1, 2, 3, 4, 6, 8}) {
        if (s > 1 && !with_split) break;
        if (s > ceil_div(p.k, 64)) break;
        if (s > 1 && tiles(ch.bm, ch.bn) * s > 2LL * sms) break;  // enough units already
        double promo = 0;
        if (needs_promotion(p, s)) {
          const auto promoted = with_promotion(arrangement(ch, s, cm, epilogue, p), p.dtype);
          if (!promoted) continue;
          promo = promotion_clocks(*promoted, p.dtype);
        }
        const double est = estimate_clocks(ch, s, p, sms, cm, 1, promo);
        if (best < 0 || est < best * 0.97) {  // a clear gain, else keep the earlier choice
          best = est;
          t = ch;
          split = s;
        }
      }
    }
  };
  // Promotion where the configuration's k slices need it (and it fits; else the fallback below).
  auto finish = [&](FamilyConfig c) {
    if (needs_promotion(p, shortest_split(c, p)))
      if (auto promoted = with_promotion(c, p.dtype)) c = *promoted;
    return c;
  };
  FamilyConfig c;
  if (tiles(256, 128) >= sms) {
    // Promoted (e4m3, long K): 256 x 192 and 256 x 128 fit neither twice their accumulators nor
    // sub-tiles (two m64 atoms per consumer spill); 128 x 192 does (96 + 96), promoted every
    // k_promote_interval_k, 128 x 256 only per sub-tile (128 + 64) every k block. The whole
    // 128 x 192 tile was 11 % faster at 4096 x 8192 x 32768 on the H200 (the cost model, which
    // sees both bound by operand traffic, ranks them the other way), so it is the default there;
    // 128 x 256 per sub-tile is an alternative.
    if (needs_promotion(p, 1)) {
      t = {128, 192, 2, 0};
    } else {
      cheapest({{128, 256, 2, 0}, {256, 192, 2, 0}, {256, 128, 2, 0}}, false, 2, 1);
    }
    c = finish(arrangement(t, 1, 2, 1, p));
  } else if (tiles(128, 128) >= sms) {
    c = finish(arrangement({128, 256, 2, 0}, 1, 2, 1, p));
  } else {
    cheapest(std::vector<TileChoice>(std::begin(k_small_choices), std::end(k_small_choices)), true, 1, reg_epilogue);
    c = finish(arrangement(t, split, 1, reg_epilogue, p));
  }
  if (violation(c, p) || (needs_promotion(p, shortest_split(c, p)) && get(c, "PROMOTE") == 0)) {
    // The smallest configuration, legal for every supported problem (and promotion fits it).
    c = finish(arrangement({64, 64, 1, 0}, 1, 1, 0, p, 4));
  }
  return c;
}

std::vector<Alternative> HopperGemmSpFamily::alternatives(const FamilyProblem& p) const {
  const int sms = gemm::typical_sm_count(p.arch.empty() ? "sm_90a" : p.arch);
  const bool f32_out = p.dtype.output == ScalarType::f32;
  const int reg_epilogue = f32_out ? 0 : 2;
  auto tiles = [&](int tm, int tn) { return ceil_div(p.m, tm) * ceil_div(p.n, tn); };
  std::vector<Alternative> out;
  const FamilyConfig def = default_config(p);
  auto add = [&](std::string name, std::string tag, FamilyConfig c) {
    if (needs_promotion(p, shortest_split(c, p))) {  // e4m3 at long K: promoted, where it fits
      auto promoted = with_promotion(c, p.dtype);
      if (!promoted) return;
      c = *promoted;
      name += ", promoted";
      tag += "_pr";
    }
    if (c == def || violation(c, p)) return;
    for (const auto& a : out)
      if (a.config == c) return;
    out.push_back({std::move(name), std::move(tag), std::move(c)});
  };
  if (tiles(128, 128) >= sms) {
    // The large archetypes measured closest to the best on the H200: the three cooperative tiles in
    // a 2x1 cluster with TMA stores (whichever the default is not), 128 x 256 with the register
    // epilogue and no WGMMA group in flight at a release, the ping-pong kernels that hide each
    // tile's epilogue under the other consumer's MMAs (128 x 192: the best at short K), and
    // 256 x 192 without a cluster.
    add("cooperative 256x192, 2x1 cluster, TMA stores", "co256x192_c21_tma", arrangement({256, 192, 2, 0}, 1, 2, 1, p));
    add("cooperative 128x256, 2x1 cluster, TMA stores", "co128x256_c21_tma", arrangement({128, 256, 2, 0}, 1, 2, 1, p));
    add("cooperative 256x128, 2x1 cluster, TMA stores", "co256x128_c21_tma", arrangement({256, 128, 2, 0}, 1, 2, 1, p));
    add("cooperative 128x256, 2x1 cluster, register epilogue, MMA depth 0", "co128x256_c21_d0",
        arrangement({128, 256, 2, 0}, 1, 2, reg_epilogue, p, 6, 0));
    add("ping-pong 128x192, 2x1 cluster, TMA stores", "pp128x192_c21_tma", arrangement({128, 192, 2, 1}, 1, 2, 1, p));
    add("ping-pong 128x128, 2x1 cluster, TMA stores", "pp128x128_c21_tma", arrangement({128, 128, 2, 1}, 1, 2, 1, p));
    add("cooperative 256x192, TMA stores", "co256x192_tma", arrangement({256, 192, 2, 0}, 1, 1, 1, p));
    // Promoted (e4m3 at long K), where the wider tiles above do not fit promotion: 128 x 192, twice
    // its accumulators (96 + 96) with a WGMMA group in flight.
    if (needs_promotion(p, 1))
      add("cooperative 128x192, 2x1 cluster, TMA stores", "co128x192_c21_tma", arrangement({128, 192, 2, 0}, 1, 2, 1, p));
  } else {
    // Fewer 128 x 128 tiles than SMs: the tile and split-K choices the cost model ranks next
    // after the default, and small tiles paired with a cluster.
    struct Ranked {
      double clocks;
      TileChoice t;
      int split;
    };
    std::vector<Ranked> ranked;
    for (const auto& ch : k_small_choices) {
      for (int s : {1, 2, 3, 4, 6, 8}) {
        if (s > ceil_div(p.k, 64)) break;
        if (s > 1 && tiles(ch.bm, ch.bn) * s > 2LL * sms) break;
        double promo = 0;
        if (needs_promotion(p, s)) {
          const auto promoted = with_promotion(arrangement(ch, s, 1, reg_epilogue, p), p.dtype);
          if (!promoted) continue;
          promo = promotion_clocks(*promoted, p.dtype);
        }
        ranked.push_back({estimate_clocks(ch, s, p, sms, 1, 1, promo), ch, s});
      }
    }
    std::sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) { return a.clocks < b.clocks; });
    int taken = 0;
    for (const auto& r : ranked) {
      if (taken == 3) break;
      const size_t before = out.size();
      add(fmt::format("{}x{} tile{}", r.t.bm, r.t.bn, r.split > 1 ? fmt::format(", split-K {}", r.split) : ""),
          fmt::format("t{}x{}_s{}", r.t.bm, r.t.bn, r.split), arrangement(r.t, r.split, 1, reg_epilogue, p));
      taken += out.size() > before;
    }
    add("64x128 tile with a 2x1 cluster", "t64x128_c21", arrangement({64, 128, 1, 0}, 1, 2, reg_epilogue, p));
    add("128x64 tile, 8 stages", "t128x64_st8", arrangement({128, 64, 2, 0}, 1, 1, reg_epilogue, p, 8));
  }
  return out;
}

std::string HopperGemmSpFamily::render_source(const FamilyConfig& c, const FamilyProblem& p) const {
  std::vector<std::pair<std::string, std::string>> defines;
  for (const char* name : k_order) {
    auto it = c.find(name);
    if (it != c.end()) defines.emplace_back(std::string("CROQ_") + name, it->second);
  }
  defines.emplace_back("CROQ_DTYPES", std::to_string(dtype_bit(p.dtype)));
  FamilyProblem shown = p;
  shown.b_col_major = true;  // the template reads B "row.col" (N x K) only
  return gemm::render_template(name(), template_path(), defines, shown);
}

std::vector<std::string> HopperGemmSpFamily::build_flags(const FamilyConfig&, const FamilyProblem&) const {
  return {"-gencode=arch=compute_90a,code=sm_90a", "-std=c++17"};
}

std::vector<std::string> HopperGemmSpFamily::params_for_bottleneck(const std::string& bottleneck) const {
  if (bottleneck == "compute_bound") return {"BN", "BM", "PINGPONG", "META", "MMA_DEPTH", "EPILOGUE", "BK", "STAGES"};
  if (bottleneck == "memory_bound")
    return {"CLUSTER_M", "CLUSTER_N", "RASTER", "GROUP", "BM", "BN", "META", "EPILOGUE", "STAGES"};
  if (bottleneck == "latency_bound") return {"SPLIT_K", "STAGES", "BK", "META", "MMA_DEPTH", "CONSUMERS", "PERSISTENT"};
  if (bottleneck == "launch_bound") return {"SPLIT_K", "BM", "BN", "PERSISTENT", "CLUSTER_M", "STAGES"};
  return {"STAGES", "BN", "CLUSTER_M", "META", "SPLIT_K", "GROUP", "EPILOGUE", "BM", "BK"};  // mixed
}

}  // namespace croq
