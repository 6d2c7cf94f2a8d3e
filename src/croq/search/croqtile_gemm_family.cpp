// The croqtile_gemm kernel family (croqtile_gemm_family.hpp): its parameter space, the constraint
// checker (what the template, choreo, ptxas and the kernel's shape check accept), defaults per
// problem, and rendering.
#include "croq/search/croqtile_gemm_family.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "croq/search/gemm_family_common.hpp"
#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/paths.hpp"

namespace croq {

namespace {

int get(const FamilyConfig& c, const char* name) { return gemm::int_param(c, name).value_or(0); }

using gemm::ceil_div;

// The template's macros in the order they are written.
const char* k_order[] = {"WARP_N", "CONSUMERS", "TILE_K", "STAGES",     "SWIZ",  "MMA_DEPTH",
                         "MMA_RUN", "REGCTRL",  "PERSISTENT", "GROUP", "EPILOGUE"};

int out_bytes(const FamilyProblem& p) { return p.dtype.output == ScalarType::f32 ? 4 : 2; }

constexpr int k_warp_m = 64;  // the WGMMA M: rows of C per consumer warpgroup

}  // namespace

std::optional<std::string> CroqtileGemmFamily::choreo_type_name(ScalarType t) {
  switch (t) {
    case ScalarType::f16: return "f16";
    case ScalarType::bf16: return "bf16";
    case ScalarType::f32: return "f32";
    case ScalarType::e4m3: return "f8_e4m3";
    default: return std::nullopt;
  }
}

bool CroqtileGemmFamily::supports(const FamilyProblem& p) const {
  if (p.op != "matmul") return false;
  if (!p.arch.empty() && p.arch.rfind("sm_90", 0) != 0) return false;
  if (gemm::dtype_bit(p.dtype) == 0) return false;
  // The smallest tile the family has: 64 x 64 x 32 (its kernels compute multiples of their tile).
  return p.m > 0 && p.n > 0 && p.k > 0 && p.m % 64 == 0 && p.n % 32 == 0 && p.k % 32 == 0;
}

std::vector<ParamSpec> CroqtileGemmFamily::params() const {
  return {
      {"WARP_N", {"64", "96", "128", "160", "192", "224", "256"}, true, "tiling",
       "columns of C per block: the WGMMA N (MATMUL_WARP_N)"},
      {"CONSUMERS", {"1", "2", "3"}, true, "compute",
       "consumer warpgroups beside the TMA producer; the block tile is 64*CONSUMERS x WARP_N (1p1c/1p2c/1p3c)"},
      {"TILE_K", {"32", "64", "128"}, false, "tiling", "K depth of one pipeline stage (MATMUL_TILE_K)"},
      {"STAGES", {"2", "3", "4", "5", "6", "7", "8"}, false, "pipeline",
       "slots of the shared-memory ring the producer runs ahead by (MATMUL_STAGES)"},
      {"SWIZ", {"32", "64", "128"}, false, "memory", "TMA / WGMMA shared-memory swizzle width in bytes (MATMUL_SWIZ)"},
      {"MMA_DEPTH", {"0", "1"}, false, "compute",
       "1: a consumer issues two slices' WGMMAs before it waits for the first (wait depth 1), releasing a slot "
       "while the tensor cores work on the next; 0: it waits for each slice at once"},
      {"MMA_RUN", {"2", "4"}, false, "compute",
       "with MMA_DEPTH=1: K slices a consumer runs through before it drains the tensor cores (waits with depth 0); "
       "within a run each slice's WGMMAs are issued before the previous slice's are waited for. 4 drains half as "
       "often as 2 (the pairs of before); K a multiple of MMA_RUN x TILE_K",
       "2"},
      {"REGCTRL", {"0", "1"}, true, "compute",
       "1: the producer warpgroup gives its registers to the consumers (setmaxnreg dec/inc)"},
      {"PERSISTENT", {"0", "1"}, true, "pipeline",
       "1: one block per SM looping over the tiles, the TMA ring running on across them; 0: one block per tile"},
      {"GROUP", {"1", "2", "4", "8", "16"}, false, "memory",
       "tile order: bands of GROUP tile-rows walked column by column, so neighbouring blocks share B (1: row "
       "by row)"},
      {"EPILOGUE", {"0", "1", "2"}, true, "memory",
       "0: consumers store their accumulators to C from registers; 1: through shared memory and one TMA store "
       "of the block's tile; 2: the tile's columns in two halves (two accumulators), each stored in turn through "
       "one shared buffer of half the tile by a TMA store (fits beside the ring where the whole tile does not; "
       "persistent or not)"},
      {"STMATRIX", {"0", "1"}, false, "memory",
       "choreo's --stmatrix: the accumulators go to shared memory with stmatrix (1) or plain stores (0); "
       "only with EPILOGUE=1 or 2"},
  };
}

int CroqtileGemmFamily::accumulator_registers(const FamilyConfig& c) { return k_warp_m * get(c, "WARP_N") / 128; }

int CroqtileGemmFamily::launched_registers(const FamilyConfig& c, long long ring) {
  // ptxas compiles the kernel for its launch bounds (128 x (CONSUMERS + 1) threads): 65536 /
  // (threads x blocks a SM) registers, at most 255, in steps of 8 (248, 168, 128). choreo asks for
  // two blocks a SM where 256 threads or fewer and the block's shared memory (its buffers, 128
  // bytes an event, 2 KB of slack) fit twice in 228 KB: with one consumer and a short ring, 128
  // registers (a WARP_N=256 build then fails in ptxas: "Insufficient registers (128)"). The ring
  // alone decides it here, a bound from below on what choreo counts, so no such case is missed.
  // setmaxnreg (REGCTRL) moves registers between warpgroups at run time but does not raise the cap
  // (a REGCTRL=1 build of 128x256 uses the same 168).
  const int threads = 128 * (get(c, "CONSUMERS") + 1);
  const int blocks = threads <= 256 && 2 * ring <= k_choreo_smem_capacity ? 2 : 1;
  return std::min(255, 65536 / (threads * blocks)) / 8 * 8;
}

int CroqtileGemmFamily::max_accumulators(const FamilyConfig& c, long long ring) {
  return launched_registers(c, ring) - 40;
}

long long CroqtileGemmFamily::ring_bytes(const FamilyConfig& c) {
  return get(c, "STAGES") * (k_warp_m * get(c, "CONSUMERS") + get(c, "WARP_N")) * get(c, "TILE_K") * 2LL;
}

std::optional<std::string> CroqtileGemmFamily::regctrl_violation(const FamilyConfig& c) {
  // One consumer: choreo launches the 256 threads with two blocks per SM where their shared memory
  // allows (__launch_bounds__(256, 2): 128 registers a thread, a pool of 32768), and the producer's
  // 40 leave the consumer 216, not the 232 it asks for: setmaxnreg.inc waits for ever (the H200
  // measured that kernel at 768^3 as a HANG). Nor would registers help it: ptxas compiles the
  // consumer for the launch's 128 whatever setmaxnreg moves at run time.
  if (get(c, "REGCTRL") == 1 && get(c, "CONSUMERS") < 2)
    return "REGCTRL=1 moves registers from the producer to two or more consumers: with CONSUMERS=1 the block's "
           "register pool is too small for the consumer's target (its setmaxnreg would wait for ever), so REGCTRL=0";
  return std::nullopt;
}

std::pair<int, int> CroqtileGemmFamily::regctrl_targets(int consumers) {
  if (consumers >= 3) return {32, 160};  // 128*32 + 384*160 = 65536
  return {40, 232};                      // 128*40 + 256*232 = 64512
}

long long CroqtileGemmFamily::smem_bytes(const FamilyConfig& c, const FamilyProblem& p) {
  const long long tile_m = k_warp_m * get(c, "CONSUMERS"), wn = get(c, "WARP_N");
  const long long ring = ring_bytes(c);
  const int epi = get(c, "EPILOGUE");
  const long long epilogue = epi == 1 ? tile_m * wn * out_bytes(p) : epi == 2 ? tile_m * (wn / 2) * out_bytes(p) : 0;
  return ring + epilogue;
}

std::optional<std::string> CroqtileGemmFamily::violation(const FamilyConfig& c, const FamilyProblem& p) const {
  if (p.op != "matmul") return fmt::format("croqtile_gemm computes matmul, not {}", p.op);
  if (!p.arch.empty() && p.arch.rfind("sm_90", 0) != 0)
    return fmt::format("croqtile_gemm needs sm_90a (WGMMA, TMA); the target is {}", p.arch);
  if (gemm::dtype_bit(p.dtype) == 0)
    return fmt::format("croqtile_gemm computes f16/bf16 inputs into f32 or the input type, not {}", p.dtype.canonical);
  if (p.m <= 0 || p.n <= 0 || p.k <= 0) return "the problem has an empty dimension";
  if (auto bad = gemm::check_listed_values(c, params())) return bad;

  const int wn = get(c, "WARP_N"), consumers = get(c, "CONSUMERS"), tk = get(c, "TILE_K");
  const int sw = get(c, "SWIZ"), tile_m = k_warp_m * consumers;
  // The kernel computes multiples of its tile exactly (croq_shape_ok); other shapes it refuses.
  if (p.m % tile_m != 0)
    return fmt::format("M={} is not a multiple of the block's {} rows (64 x CONSUMERS={})", p.m, tile_m, consumers);
  if (p.n % wn != 0) return fmt::format("N={} is not a multiple of WARP_N={}", p.n, wn);
  if (p.k % tk != 0) return fmt::format("K={} is not a multiple of TILE_K={}", p.k, tk);
  const int run = get(c, "MMA_RUN");
  if (get(c, "MMA_DEPTH") == 0 && run != 2)
    return "MMA_RUN applies with MMA_DEPTH=1 (MMA_DEPTH=0 waits for each slice): MMA_RUN=2";
  if (get(c, "MMA_DEPTH") == 1 && (p.k / tk) % run != 0) {
    if (run == 2)
      return fmt::format("MMA_DEPTH=1 takes the K slices in pairs: K={} is an odd number of TILE_K={} slices", p.k, tk);
    return fmt::format("MMA_RUN={} takes the K slices in runs of {}: K={} is not a multiple of {} x TILE_K={}", run, run,
                       p.k, run, tk);
  }
  // A TMA box row is TILE_K 16-bit elements; the swizzle span may not exceed it.
  const int row_bytes = tk * 2;
  if (sw > row_bytes)
    return fmt::format("SWIZ={} exceeds the {}-byte rows of a TILE_K={} slice", sw, row_bytes, tk);
  const long long ring = ring_bytes(c);
  if (accumulator_registers(c) > max_accumulators(c, ring))
    return fmt::format("{} f32 accumulators per consumer thread (WARP_N/2) exceed the {} a thread of a {}-warpgroup "
                       "kernel holds{}: the consumer would spill",
                       accumulator_registers(c), max_accumulators(c, ring), consumers + 1,
                       launched_registers(c, ring) == 128 && consumers == 1
                           ? " (choreo launches its block two to a SM: 128 registers a thread; more STAGES or a "
                             "deeper TILE_K make it one, with 248)"
                           : "");
  const long long smem = smem_bytes(c, p);
  if (smem > k_smem_limit)
    return fmt::format("needs {} bytes of shared memory ({} stages of {}x{} and {}x{} tiles{}), more than the {} a "
                       "block may use on sm_90",
                       smem, get(c, "STAGES"), tile_m, tk, wn, tk,
                       get(c, "EPILOGUE") == 1   ? " and the epilogue tile"
                       : get(c, "EPILOGUE") == 2 ? " and the epilogue's half tile"
                                                 : "",
                       k_smem_limit);
  if (auto bad = regctrl_violation(c)) return bad;
  if (get(c, "EPILOGUE") == 1 && get(c, "PERSISTENT") == 1)
    return "EPILOGUE=1 stores the block's tile once, after the warpgroups: it needs PERSISTENT=0";
  if (get(c, "EPILOGUE") == 2) {
    if (get(c, "MMA_DEPTH") != 1 || run != 2)
      return "EPILOGUE=2 keeps two accumulators through the pairs of K slices of MMA_DEPTH=1, MMA_RUN=2";
    if (wn % 64 != 0)
      return fmt::format("EPILOGUE=2 splits the tile's columns in two halves of a multiple of 32: WARP_N={} is not "
                         "a multiple of 64",
                         wn);
  }
  if (get(c, "STMATRIX") == 0 && get(c, "EPILOGUE") == 0)
    return "STMATRIX=0 changes only the store to shared memory: it needs EPILOGUE=1 or 2";
  const long long tiles_m = ceil_div(p.m, tile_m);
  if (get(c, "GROUP") > 1 && get(c, "GROUP") > tiles_m)
    return fmt::format("GROUP={} exceeds the {} tile rows: every such order is the same", get(c, "GROUP"), tiles_m);
  if (tiles_m * ceil_div(p.n, wn) > (1LL << 31) / 2) return "the problem has more tiles than the kernel can index";
  return std::nullopt;
}

namespace {

// A configuration of the given tile with the family's usual settings and as many stages as fit,
// up to `max_stages`.
FamilyConfig arrangement(const CroqtileGemmFamily& f, const FamilyProblem& p, int consumers, int warp_n,
                         int max_stages = 6) {
  FamilyConfig c;
  c["WARP_N"] = std::to_string(warp_n);
  c["CONSUMERS"] = std::to_string(consumers);
  c["TILE_K"] = p.k % 64 == 0 ? "64" : "32";
  c["SWIZ"] = p.k % 64 == 0 ? "128" : "64";
  c["MMA_DEPTH"] = (p.k / std::stoll(c["TILE_K"])) % 2 == 0 ? "1" : "0";
  c["MMA_RUN"] = "2";
  c["REGCTRL"] = "0";
  c["PERSISTENT"] = "0";
  const long long tiles_m = ceil_div(p.m, 64LL * consumers);
  int group = 1;
  while (group * 2 <= 8 && group * 2 <= tiles_m) group *= 2;
  c["GROUP"] = std::to_string(group);
  c["EPILOGUE"] = "0";
  c["STMATRIX"] = "1";
  c["STAGES"] = "2";
  for (int s = max_stages; s >= 2; --s) {
    c["STAGES"] = std::to_string(s);
    if (CroqtileGemmFamily::smem_bytes(c, p) <= CroqtileGemmFamily::k_smem_limit) break;
  }
  (void)f;
  return c;
}

}  // namespace

FamilyConfig CroqtileGemmFamily::default_config(const FamilyProblem& p) const {
  const int sms = gemm::typical_sm_count(p.arch.empty() ? "sm_90a" : p.arch);
  // The bundled kernel's arrangement (128x256, two consumers: kernels/croqtile/matmul/
  // matmul_f16f32_ws.co) where the problem has a wave of such tiles; smaller tiles below that, so
  // that small problems fill the GPU; the first legal for the problem's shape.
  const std::pair<int, int> arrangements[] = {{2, 256}, {2, 192}, {2, 128}, {1, 128}, {1, 64}};  // consumers, WARP_N
  std::vector<gemm::SizedConfig> tiles;
  for (auto [consumers, warp_n] : arrangements) {
    tiles.push_back({arrangement(*this, p, consumers, warp_n), ceil_div(p.m, 64LL * consumers) * ceil_div(p.n, warp_n)});
  }
  if (auto c = gemm::first_wave_or_smallest(tiles, [&](const FamilyConfig& c) { return !violation(c, p); }, sms)) return *c;
  // supports() guarantees 64x64 with TILE_K 32 is legal; reached only for unsupported problems.
  FamilyConfig c = arrangement(*this, p, 1, 64);
  c["TILE_K"] = "32";
  c["SWIZ"] = "64";
  return c;
}

std::vector<Alternative> CroqtileGemmFamily::alternatives(const FamilyProblem& p) const {
  std::vector<Alternative> out;
  const FamilyConfig def = default_config(p);
  auto add = [&](std::string name, std::string tag, FamilyConfig c) {
    if (c == def || violation(c, p)) return;
    for (const auto& a : out) {
      if (a.config == c) return;
    }
    out.push_back({std::move(name), std::move(tag), std::move(c)});
  };
  // MMA_RUN 4 (a drain per four K slices instead of two) is a single step, not an archetype: on the
  // H200 it measured +0.1 % at 4096^3 and -0.3 % at 8192^3.
  const int sms = gemm::typical_sm_count(p.arch.empty() ? "sm_90a" : p.arch);
  // First: the default's tiles on a persistent grid with register control and the two-half TMA-store
  // epilogue, the ring in slices of 32 where slices of 64 would leave fewer than four stages beside
  // the half tile. On the H200 (f16 -> f32, 128x256: 6 stages of 32) it measured 0.92 x cuBLAS at
  // 4096^3 and 0.93 at 8192^3 where the register epilogue's best made 0.82 and 0.89: its 4-byte
  // register stores (each 32-byte sector written twice) cost about 40 us a launch at M = N = 4096
  // whatever K, where the main loop ran as fast as the CUDA family's.
  if (ceil_div(p.m, 64LL * get(def, "CONSUMERS")) * ceil_div(p.n, get(def, "WARP_N")) > sms) {
    FamilyConfig halves = def;
    halves["PERSISTENT"] = "1";
    halves["REGCTRL"] = get(def, "CONSUMERS") >= 2 ? "1" : "0";  // regctrl_violation
    halves["EPILOGUE"] = "2";
    halves["MMA_DEPTH"] = "1";
    halves["MMA_RUN"] = "2";
    auto fit = [&](int tile_k) {
      halves["TILE_K"] = std::to_string(tile_k);
      halves["SWIZ"] = tile_k >= 64 ? "128" : "64";
      for (int s = 6; s >= 2; --s) {
        halves["STAGES"] = std::to_string(s);
        if (smem_bytes(halves, p) <= k_smem_limit) return s;
      }
      return 0;
    };
    if (p.k % 64 != 0 || fit(64) < 4) fit(32);
    add("the default's tiles, persistent, two-half TMA-store epilogue", "tma_halves", halves);
  }
  // The default with its tiles walked by a persistent grid: the TMA ring runs on across tiles,
  // so a block's next tile loads while its last one's epilogue stores.
  FamilyConfig persistent = def;
  persistent["PERSISTENT"] = "1";
  if (ceil_div(p.m, 64LL * get(def, "CONSUMERS")) * ceil_div(p.n, get(def, "WARP_N")) > sms)
    add("the default's tiles on a persistent grid", "persistent", persistent);
  // (Register control is not among them: ptxas compiles the consumers for the launch bounds'
  // registers whatever setmaxnreg moves at run time, so it rarely changes the kernel's speed.)
  // 1p3c: 192 x 128 tiles, three consumers (the warpspec_1p3c topology of the croq-dsl-croqtile skill).
  add("three consumers, 192x128 tiles (1p3c)", "c3_192x128", arrangement(*this, p, 3, 128));
  // 128x192: between the two usual widths, fewer tiles in a partial last wave.
  add("two consumers, 128x192 tiles", "c2_128x192", arrangement(*this, p, 2, 192));
  // 128x128 with a deeper ring (6 stages).
  add("two consumers, 128x128 tiles, 6 stages", "c2_128x128", arrangement(*this, p, 2, 128));
  // The epilogue through shared memory and a TMA store, where the tile fits beside the ring.
  FamilyConfig epi = def;
  epi["EPILOGUE"] = "1";
  for (int s = get(def, "STAGES"); s >= 2; --s) {
    epi["STAGES"] = std::to_string(s);
    if (smem_bytes(epi, p) <= k_smem_limit) break;
  }
  add("the default with a shared-memory epilogue and a TMA store", "tma_store", epi);
  return out;
}

std::string CroqtileGemmFamily::render_source(const FamilyConfig& c, const FamilyProblem& p) const {
  const auto path = find_project_dir("kernels") / template_path();
  auto text = read_file(path);
  if (!text) {
    throw Error(ExitCode::not_found, fmt::format("the croqtile_gemm template {} could not be read", path.string()),
                "set CROQ_HOME to the croq source tree");
  }
  const auto in = choreo_type_name(p.dtype.input), outt = choreo_type_name(p.dtype.output);
  if (gemm::dtype_bit(p.dtype) == 0 || !in || !outt) {
    throw Error(ExitCode::usage, fmt::format("croqtile_gemm cannot render dtype {}", p.dtype.canonical));
  }
  std::string out = fmt::format("// croqtile_gemm configuration for matmul {}x{}x{} {} (B col), rendered by croq\n",
                                p.m, p.n, p.k, p.dtype.canonical);
  out += fmt::format("// croq-kernel: {{\"dtypes\": [\"{}\"], \"family\": \"croqtile_gemm\"}}\n", p.dtype.canonical);
  out += fmt::format("#define CROQ_IN_T {}\n#define CROQ_OUT_T {}\n#define CROQ_WARP_M {}\n", *in, *outt, k_warp_m);
  for (const char* name : k_order) {
    auto it = c.find(name);
    if (it != c.end()) out += fmt::format("#define CROQ_{} {}\n", name, it->second);
  }
  const auto [producer, consumer] = regctrl_targets(get(c, "CONSUMERS"));
  out += fmt::format("#define CROQ_PRODUCER_REGS {}\n#define CROQ_CONSUMER_REGS {}\n", producer, consumer);
  out += fmt::format("#define CROQ_NUM_SMS {}\n", gemm::typical_sm_count(p.arch.empty() ? "sm_90a" : p.arch));
  out += *text;
  return out;
}

std::vector<std::string> CroqtileGemmFamily::build_flags(const FamilyConfig&, const FamilyProblem&) const { return {}; }

std::vector<std::string> CroqtileGemmFamily::choreo_flags(const FamilyConfig& c, const FamilyProblem&) const {
  return {get(c, "STMATRIX") == 1 ? "--stmatrix=true" : "--stmatrix=false"};
}

std::vector<std::string> CroqtileGemmFamily::params_for_bottleneck(const std::string& bottleneck) const {
  if (bottleneck == "compute_bound")
    return {"WARP_N", "CONSUMERS", "MMA_DEPTH", "MMA_RUN", "REGCTRL", "EPILOGUE", "STAGES", "TILE_K"};
  if (bottleneck == "memory_bound") return {"GROUP", "WARP_N", "CONSUMERS", "SWIZ", "EPILOGUE", "STAGES", "STMATRIX"};
  if (bottleneck == "latency_bound") return {"STAGES", "MMA_DEPTH", "MMA_RUN", "TILE_K", "PERSISTENT", "CONSUMERS", "REGCTRL"};
  if (bottleneck == "launch_bound") return {"PERSISTENT", "WARP_N", "CONSUMERS", "STAGES"};
  return {"STAGES", "WARP_N", "MMA_DEPTH", "GROUP", "PERSISTENT", "CONSUMERS", "TILE_K", "EPILOGUE", "REGCTRL"};  // mixed
}

}  // namespace croq
