// The croqtile_gemm_sp kernel family (croqtile_gemm_sp_family.hpp): its parameter space, the
// constraint checker (what the template, TMA, ptxas and the kernel's shape check accept), defaults
// per problem, and rendering.
#include "croq/search/croqtile_gemm_sp_family.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "croq/search/croqtile_gemm_family.hpp"
#include "croq/search/gemm_family_common.hpp"
#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/paths.hpp"
#include "croq/workspace/operators.hpp"

namespace croq {

namespace {

int get(const FamilyConfig& c, const char* name) { return gemm::int_param(c, name).value_or(0); }

using gemm::ceil_div;

// The template's macros in the order they are written.
const char* k_order[] = {"WARP_N", "CONSUMERS", "TILE_K", "STAGES", "META", "MMA_RUN", "REGCTRL", "GROUP"};

constexpr int k_warp_m = 64;  // the WGMMA M: rows of C per consumer warpgroup

// The pairs the family computes: 16-bit inputs into f32 or their own type, e4m3 into f16 or bf16
// (f32 accumulation throughout).
bool computes(const DtypePair& d) {
  using S = ScalarType;
  if (d.compute != S::f32) return false;
  if (d.input == S::f16) return d.output == S::f32 || d.output == S::f16;
  if (d.input == S::bf16) return d.output == S::f32 || d.output == S::bf16;
  if (d.input == S::e4m3) return d.output == S::f16 || d.output == S::bf16;
  return false;
}

}  // namespace

int CroqtileGemmSpFamily::input_bytes(const DtypePair& d) {
  if (!computes(d)) return 0;
  return d.input == ScalarType::e4m3 ? 1 : 2;
}

int CroqtileGemmSpFamily::warp_k(const DtypePair& d) { return input_bytes(d) == 1 ? 64 : 32; }

bool CroqtileGemmSpFamily::supports(const FamilyProblem& p) const {
  if (!is_sparse_operator(p.op)) return false;
  if (!p.arch.empty() && p.arch.rfind("sm_90", 0) != 0) return false;
  if (!computes(p.dtype)) return false;
  if (p.dtype.input == ScalarType::e4m3 && p.k > k_e4m3_max_k) return false;
  // The smallest tile the family has: 64 x 64 x (32 for 16-bit inputs, 64 for e4m3); its kernels
  // compute multiples of their tile.
  return p.m > 0 && p.n > 0 && p.k > 0 && p.m % 64 == 0 && p.n % 64 == 0 && p.k % warp_k(p.dtype) == 0;
}

std::vector<ParamSpec> CroqtileGemmSpFamily::params() const {
  return {
      {"WARP_N", {"64", "96", "128", "160", "192", "224", "256"}, true, "tiling",
       "columns of C per block: the sparse WGMMA N"},
      {"CONSUMERS", {"1", "2", "3"}, true, "compute",
       "consumer warpgroups beside the TMA producer; the block tile is 64*CONSUMERS x WARP_N"},
      {"TILE_K", {"32", "64", "128"}, false, "tiling",
       "dense K of one pipeline stage: TILE_K/2 packed values per row of A; a row of the A and of the B slice is "
       "one swizzle atom (32, 64 or 128 bytes: the swizzles follow), so TILE_K is 32 or 64 for 16-bit inputs, 64 or "
       "128 for e4m3"},
      {"STAGES", {"2", "3", "4", "5", "6", "7", "8"}, false, "pipeline",
       "slots of the shared-memory ring the producer runs ahead by"},
      {"META", {"0", "1"}, true, "memory",
       "0: each consumer thread loads its metadata words for a WGMMA straight from global memory (L2) as it issues "
       "it; 1: the producer TMAs each slice's metadata into the ring with A and B (TMA rows of TILE_K/8 bytes must "
       "be 16 or more: TILE_K 128, so e4m3 only)"},
      {"MMA_RUN", {"1", "2", "4"}, false, "compute",
       "K slices whose sparse WGMMAs a consumer issues back to back before it waits for them (one commit, one "
       "full wait) and releases their slots: 1 drains the tensor cores after every slice, 2 and 4 half and a "
       "quarter as often (the pinned choreo has no future of a sparse WGMMA, so a run ends in a full wait); K a "
       "multiple of MMA_RUN x TILE_K, more STAGES than MMA_RUN",
       "1"},
      {"REGCTRL", {"0", "1"}, true, "compute",
       "1: the producer warpgroup gives its registers to the consumers (setmaxnreg dec/inc)"},
      {"GROUP", {"1", "2", "4", "8", "16"}, false, "memory",
       "tile order: bands of GROUP tile-rows walked column by column, so neighbouring blocks share B (1: row "
       "by row)"},
  };
}

long long CroqtileGemmSpFamily::smem_bytes(const FamilyConfig& c, const DtypePair& d) {
  const long long eb = std::max(1, input_bytes(d));
  const long long tile_m = k_warp_m * get(c, "CONSUMERS"), wn = get(c, "WARP_N"), tk = get(c, "TILE_K");
  const long long slice = tile_m * (tk / 2) * eb + wn * tk * eb + (get(c, "META") == 1 ? tile_m * (tk / 8) : 0);
  return get(c, "STAGES") * slice;
}

int CroqtileGemmSpFamily::swizzle_a(const FamilyConfig& c, const DtypePair& d) {
  return get(c, "TILE_K") / 2 * std::max(1, input_bytes(d));
}

int CroqtileGemmSpFamily::swizzle_b(const FamilyConfig& c, const DtypePair& d) {
  return get(c, "TILE_K") * std::max(1, input_bytes(d));
}

std::optional<std::string> CroqtileGemmSpFamily::violation(const FamilyConfig& c, const FamilyProblem& p) const {
  if (!is_sparse_operator(p.op)) return fmt::format("croqtile_gemm_sp computes gemm_sp (2:4 sparse A), not {}", p.op);
  if (!p.arch.empty() && p.arch.rfind("sm_90", 0) != 0)
    return fmt::format("croqtile_gemm_sp needs sm_90a (sparse WGMMA, TMA); the target is {}", p.arch);
  if (!computes(p.dtype))
    return fmt::format("croqtile_gemm_sp computes f16/bf16 inputs into f32 or the input type and e4m3 into f16 or "
                       "bf16, not {}",
                       p.dtype.canonical);
  if (p.m <= 0 || p.n <= 0 || p.k <= 0) return "the problem has an empty dimension";
  if (p.dtype.input == ScalarType::e4m3 && p.k > k_e4m3_max_k)
    return fmt::format("e4m3 with K={} needs two-level accumulation (FP8 WGMMAs keep about 14 bits of their sum; "
                       "unpromoted kernels pass up to K={}), which this template does not have: use hopper_gemm_sp "
                       "(dsl cuda)",
                       p.k, k_e4m3_max_k);
  if (auto bad = gemm::check_listed_values(c, params())) return bad;

  const int eb = input_bytes(p.dtype);
  const int wn = get(c, "WARP_N"), consumers = get(c, "CONSUMERS"), tk = get(c, "TILE_K");
  const int tile_m = k_warp_m * consumers;
  if (p.m % tile_m != 0)
    return fmt::format("M={} is not a multiple of the block's {} rows (64 x CONSUMERS={})", p.m, tile_m, consumers);
  if (p.n % wn != 0) return fmt::format("N={} is not a multiple of WARP_N={}", p.n, wn);
  if (p.k % tk != 0) return fmt::format("K={} is not a multiple of TILE_K={}", p.k, tk);
  if (tk % warp_k(p.dtype) != 0)
    return fmt::format("TILE_K={} is not a multiple of the sparse WGMMA's K ({} for {} inputs)", tk, warp_k(p.dtype),
                       eb == 1 ? "e4m3" : "16-bit");
  // A slice row is one swizzle atom: the WGMMAs of a slice step through it linearly (choreo splits
  // wider rows into TMA regions the per-step operands do not follow).
  const int a_row = swizzle_a(c, p.dtype), b_row = swizzle_b(c, p.dtype);
  if (a_row < 32 || a_row > 128 || b_row > 128)
    return fmt::format("TILE_K={} makes {}-byte rows of packed A and {}-byte rows of B; each must be one swizzle atom "
                       "of 32 to 128 bytes (TILE_K {} for {} inputs)",
                       tk, a_row, b_row, eb == 1 ? "64 or 128" : "32 or 64", eb == 1 ? "e4m3" : "16-bit");
  const int run = get(c, "MMA_RUN");
  if ((p.k / tk) % run != 0)
    return fmt::format("MMA_RUN={} takes the K slices in runs of {}: K={} is not a multiple of {} x TILE_K={}", run, run,
                       p.k, run, tk);
  if (get(c, "STAGES") <= run)
    return fmt::format("MMA_RUN={} holds {} slots until its wait: STAGES={} leaves the producer none to fill the next "
                       "run's first slice with; more STAGES than MMA_RUN",
                       run, run, get(c, "STAGES"));
  if (get(c, "META") == 1 && tk / 8 < 16)
    return fmt::format("META=1 TMAs rows of TILE_K/8 = {} metadata bytes; TMA moves rows of 16 bytes or more: "
                       "TILE_K=128 (e4m3), or META=0",
                       tk / 8);
  // The same consumer arrangement and register budget as croqtile_gemm's.
  if (auto bad = CroqtileGemmFamily::regctrl_violation(c)) return bad;
  const int acc = CroqtileGemmFamily::accumulator_registers(c);
  const int max_acc = CroqtileGemmFamily::max_accumulators(c, smem_bytes(c, p.dtype));  // its smem is its ring
  if (acc > max_acc)
    return fmt::format("{} f32 accumulators per consumer thread (WARP_N/2) exceed the {} a thread of a {}-warpgroup "
                       "kernel holds: the consumer would spill",
                       acc, max_acc, consumers + 1);
  const long long smem = smem_bytes(c, p.dtype);
  if (smem > k_smem_limit)
    return fmt::format("needs {} bytes of shared memory ({} stages of packed A, metadata and B slices), more than the "
                       "{} a block may use on sm_90",
                       smem, get(c, "STAGES"), k_smem_limit);
  const long long tiles_m = ceil_div(p.m, tile_m);
  if (get(c, "GROUP") > 1 && get(c, "GROUP") > tiles_m)
    return fmt::format("GROUP={} exceeds the {} tile rows: every such order is the same", get(c, "GROUP"), tiles_m);
  if (tiles_m * ceil_div(p.n, wn) > (1LL << 31) / 2) return "the problem has more tiles than the kernel can index";
  return std::nullopt;
}

namespace {

// A configuration of the given tile with the family's usual settings (the deepest slice whose B
// rows fill a 128-byte swizzle atom: TILE_K 64 for 16-bit inputs, 128 for e4m3, the metadata
// staged by TMA where it can be), as many stages as fit, up to `max_stages`, and the slices waited
// for in runs of two where K and the stages allow (on the H200, 4096x8192x8192: +2.0 % in f16 and
// +1.5 % in e4m3 over a wait per slice; runs of four lost 6-8 %).
FamilyConfig arrangement(const FamilyProblem& p, int consumers, int warp_n, int max_stages = 6) {
  const int eb = CroqtileGemmSpFamily::input_bytes(p.dtype);
  FamilyConfig c;
  c["WARP_N"] = std::to_string(warp_n);
  c["CONSUMERS"] = std::to_string(consumers);
  c["TILE_K"] = eb == 1 && p.k % 128 == 0 ? "128" : eb == 1 ? "64" : p.k % 64 == 0 ? "64" : "32";
  c["META"] = c["TILE_K"] == "128" ? "1" : "0";
  c["MMA_RUN"] = "1";
  c["REGCTRL"] = "0";
  const long long tiles_m = ceil_div(p.m, 64LL * consumers);
  int group = 1;
  while (group * 2 <= 8 && group * 2 <= tiles_m) group *= 2;
  c["GROUP"] = std::to_string(group);
  c["STAGES"] = "2";
  for (int s = max_stages; s >= 2; --s) {
    c["STAGES"] = std::to_string(s);
    if (CroqtileGemmSpFamily::smem_bytes(c, p.dtype) <= CroqtileGemmSpFamily::k_smem_limit) break;
  }
  const int tk = std::stoi(c["TILE_K"]);
  if ((p.k / tk) % 2 == 0 && std::stoi(c["STAGES"]) > 2) c["MMA_RUN"] = "2";
  return c;
}

}  // namespace

FamilyConfig CroqtileGemmSpFamily::default_config(const FamilyProblem& p) const {
  const int sms = gemm::typical_sm_count(p.arch.empty() ? "sm_90a" : p.arch);
  // 128x256 with two consumers (the dense bundled kernel's arrangement) where the problem has a
  // wave of such tiles; smaller tiles below that, so that small problems fill the GPU; the first
  // legal for the problem's shape.
  const std::pair<int, int> arrangements[] = {{2, 256}, {2, 192}, {2, 128}, {1, 128}, {1, 64}};  // consumers, WARP_N
  std::vector<gemm::SizedConfig> tiles;
  for (auto [consumers, warp_n] : arrangements) {
    tiles.push_back({arrangement(p, consumers, warp_n), ceil_div(p.m, 64LL * consumers) * ceil_div(p.n, warp_n)});
  }
  if (auto c = gemm::first_wave_or_smallest(tiles, [&](const FamilyConfig& c) { return !violation(c, p); }, sms)) return *c;
  return arrangement(p, 1, 64);  // supports() guarantees it is legal; reached only for unsupported problems
}

std::vector<Alternative> CroqtileGemmSpFamily::alternatives(const FamilyProblem& p) const {
  std::vector<Alternative> out;
  const FamilyConfig def = default_config(p);
  auto add = [&](std::string name, std::string tag, FamilyConfig c) {
    if (c == def || violation(c, p)) return;
    for (const auto& a : out) {
      if (a.config == c) return;
    }
    out.push_back({std::move(name), std::move(tag), std::move(c)});
  };
  // The default waiting after every slice where it waits once per two (MMA_RUN 4, measured 6-8 %
  // slower, stays a single step), and once per two where K or the stages made it wait per slice.
  {
    const bool pairs = get(def, "MMA_RUN") == 2;
    FamilyConfig c = def;
    c["MMA_RUN"] = pairs ? "1" : "2";
    add(pairs ? "the default waiting after every K slice (MMA_RUN 1)" : "the default waiting once per 2 K slices (MMA_RUN 2)",
        pairs ? "run1" : "run2", c);
  }
  // The from-scratch baseline's tile (64 x 256, one consumer), now warp-specialised and staged.
  add("one consumer, 64x256 tiles", "c1_64x256", arrangement(p, 1, 256));
  // 1p3c: 192 x 128 tiles, three consumers.
  add("three consumers, 192x128 tiles (1p3c)", "c3_192x128", arrangement(p, 3, 128));
  add("two consumers, 128x192 tiles", "c2_128x192", arrangement(p, 2, 192));
  add("two consumers, 128x128 tiles", "c2_128x128", arrangement(p, 2, 128));
  // The other way to hand the metadata to the WGMMAs (e4m3 with 128-deep slices: from L2 instead of
  // the ring).
  FamilyConfig meta = def;
  meta["META"] = get(def, "META") == 1 ? "0" : "1";
  add(get(def, "META") == 1 ? "the default with the metadata read from L2" : "the default with the metadata staged by TMA",
      "meta", meta);
  return out;
}

std::string CroqtileGemmSpFamily::render_source(const FamilyConfig& c, const FamilyProblem& p) const {
  const auto path = find_project_dir("kernels") / template_path();
  auto text = read_file(path);
  if (!text) {
    throw Error(ExitCode::not_found, fmt::format("the croqtile_gemm_sp template {} could not be read", path.string()),
                "set CROQ_HOME to the croq source tree");
  }
  const auto in = CroqtileGemmFamily::choreo_type_name(p.dtype.input),
             outt = CroqtileGemmFamily::choreo_type_name(p.dtype.output);
  if (!computes(p.dtype) || !in || !outt) {
    throw Error(ExitCode::usage, fmt::format("croqtile_gemm_sp cannot render dtype {}", p.dtype.canonical));
  }
  std::string out = fmt::format("// croqtile_gemm_sp configuration for gemm_sp {}x{}x{} {} (B col), rendered by croq\n",
                                p.m, p.n, p.k, p.dtype.canonical);
  out += fmt::format("// croq-kernel: {{\"dtypes\": [\"{}\"], \"family\": \"croqtile_gemm_sp\", \"b_layout\": \"col\"}}\n",
                     p.dtype.canonical);
  out += fmt::format("#define CROQ_IN_T {}\n#define CROQ_OUT_T {}\n#define CROQ_WARP_M {}\n#define CROQ_WARP_K {}\n", *in,
                     *outt, k_warp_m, warp_k(p.dtype));
  out += fmt::format("#define CROQ_SWIZ_A {}\n#define CROQ_SWIZ_B {}\n", swizzle_a(c, p.dtype), swizzle_b(c, p.dtype));
  for (const char* name : k_order) {
    auto it = c.find(name);
    if (it != c.end()) out += fmt::format("#define CROQ_{} {}\n", name, it->second);
  }
  const auto [producer_regs, consumer_regs] = CroqtileGemmFamily::regctrl_targets(get(c, "CONSUMERS"));
  out += fmt::format("#define CROQ_PRODUCER_REGS {}\n#define CROQ_CONSUMER_REGS {}\n", producer_regs, consumer_regs);
  out += *text;
  return out;
}

std::vector<std::string> CroqtileGemmSpFamily::build_flags(const FamilyConfig&, const FamilyProblem&) const {
  return {};
}

std::vector<std::string> CroqtileGemmSpFamily::params_for_bottleneck(const std::string& bottleneck) const {
  if (bottleneck == "compute_bound") return {"WARP_N", "CONSUMERS", "MMA_RUN", "REGCTRL", "TILE_K", "STAGES"};
  if (bottleneck == "memory_bound") return {"GROUP", "META", "MMA_RUN", "WARP_N", "CONSUMERS", "STAGES"};
  if (bottleneck == "latency_bound") return {"STAGES", "MMA_RUN", "META", "TILE_K", "CONSUMERS", "REGCTRL"};
  if (bottleneck == "launch_bound") return {"WARP_N", "CONSUMERS", "STAGES"};
  return {"STAGES", "MMA_RUN", "WARP_N", "META", "GROUP", "CONSUMERS", "TILE_K", "REGCTRL"};  // mixed
}

}  // namespace croq
