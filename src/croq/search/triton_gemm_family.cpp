// The triton_gemm kernel family (triton_gemm_family.hpp).
#include "croq/search/triton_gemm_family.hpp"

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

// The rendering order of the parameters (the module's constants).
const char* k_order[] = {"BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "NUM_WARPS", "NUM_STAGES",
                         "PERSISTENT", "TMA", "WARP_SPEC", "SPLIT_K", "C_TMA"};

int arch_major(const std::string& arch) {
  // "sm_90a" -> 9, "sm_80" -> 8, "sm_100a" -> 10; 0 when unknown (no constraint by architecture).
  if (arch.rfind("sm_", 0) != 0) return 0;
  std::string digits;
  for (char ch : arch.substr(3)) {
    if (ch < '0' || ch > '9') break;
    digits += ch;
  }
  if (digits.size() < 2) return 0;
  return std::stoi(digits.substr(0, digits.size() - 1));
}

int input_bytes(const FamilyProblem& p) { return scalar_type_bytes(p.dtype.input); }

bool is_fp8(const FamilyProblem& p) { return p.dtype.input == ScalarType::e4m3; }

// e4m3 into f16 or bf16 with f32 accumulation and per-tensor scales (the template scales the
// accumulator before the store).
bool fp8_pair(const DtypePair& d) {
  return d.input == ScalarType::e4m3 && d.compute == ScalarType::f32 &&
         (d.output == ScalarType::f16 || d.output == ScalarType::bf16);
}

long long tiles_of(const FamilyConfig& c, const FamilyProblem& p) {
  return ceil_div(p.m, std::max(1, get(c, "BLOCK_M"))) * ceil_div(p.n, std::max(1, get(c, "BLOCK_N")));
}

FamilyConfig base_config(int bm, int bn, int bk, int stages, int warps) {
  return {{"BLOCK_M", std::to_string(bm)}, {"BLOCK_N", std::to_string(bn)}, {"BLOCK_K", std::to_string(bk)},
          {"GROUP_M", "8"},  {"NUM_WARPS", std::to_string(warps)}, {"NUM_STAGES", std::to_string(stages)},
          {"PERSISTENT", "0"}, {"TMA", "0"}, {"WARP_SPEC", "0"}, {"SPLIT_K", "1"}, {"C_TMA", "0"}};
}

}  // namespace

bool TritonGemmFamily::supports(const FamilyProblem& p) const {
  if (p.op != "matmul") return false;
  if (p.arch == "cpu") return false;
  const int major = arch_major(p.arch);
  if (major != 0 && major < 8) return false;  // tl.dot on f16/bf16 tensor cores: sm_80 and later
  if (fp8_pair(p.dtype)) {
    // FP8 tensor cores (tl.dot on e4m3): Hopper and later here; K in 16-byte rows.
    if (major != 0 && major < 9) return false;
    return p.m > 0 && p.n > 0 && p.k > 0 && p.k % 16 == 0;
  }
  return gemm::dtype_bit(p.dtype) != 0 && p.m > 0 && p.n > 0 && p.k > 0;
}

std::vector<ParamSpec> TritonGemmFamily::params() const {
  return {
      {"BLOCK_M", {"32", "64", "128", "256"}, true, "tiling", "rows of C one program computes"},
      {"BLOCK_N", {"32", "64", "128", "256"}, true, "tiling", "columns of C one program computes"},
      {"BLOCK_K", {"32", "64", "128"}, false, "tiling", "depth of one k step (tl.dot's K)"},
      {"GROUP_M", {"1", "4", "8", "16"}, false, "memory", "tile rows per band of the grouped program order (L2 reuse of B)"},
      {"NUM_WARPS", {"4", "8"}, false, "compute", "warps per program (Triton's num_warps)"},
      {"NUM_STAGES", {"2", "3", "4", "5", "6"}, false, "pipeline", "software-pipeline buffers of the k loop (num_stages)"},
      {"PERSISTENT", {"0", "1"}, true, "pipeline", "1: one program per SM looping over the tiles; 0: one per tile"},
      {"TMA", {"0", "1"}, true, "memory", "1: A and B read through TMA tensor descriptors (Hopper); 0: pointer loads"},
      {"WARP_SPEC", {"0", "1"}, true, "compute",
       "1: the persistent TMA tile loop warp-specialised (tl.range(warp_specialize=True): producer and consumer warps)"},
      {"SPLIT_K", {"1", "2", "4", "8"}, true, "tiling",
       "k slices per tile, each its own program writing f32 partial sums to a workspace, added in slice order by a "
       "second kernel (fills the GPU when there are few tiles and K is long)"},
      {"C_TMA", {"0", "1"}, true, "memory",
       "1: the persistent TMA kernel stores C through a TMA descriptor, two halves of the tile from shared memory, "
       "so the next tile's loads and MMAs run while the store drains (where the f32 or 16-bit output is as "
       "large as the work: short K); 0: stores from registers",
       "0"},
  };
}

long long TritonGemmFamily::smem_limit(const std::string& arch) {
  switch (arch_major(arch)) {
    case 8: return arch == "sm_80" || arch == "sm_87" ? 166912 : 101376;  // A100: 163 KiB; sm_86/89: 99 KiB
    case 9: return 232448;                                                 // H100/H200: 227 KiB
    case 10: return 232448;
    case 12: return 101376;
    default: return 232448;
  }
}

long long TritonGemmFamily::smem_bytes(const FamilyConfig& c, const FamilyProblem& p) {
  const long long bm = get(c, "BLOCK_M"), bn = get(c, "BLOCK_N"), bk = get(c, "BLOCK_K"), stages = get(c, "NUM_STAGES");
  const long long pipeline = stages * (bm + bn) * bk * input_bytes(p);
  const long long epilogue = bm * bn * 4;  // the f32 accumulator's layout conversion before the store
  const long long barriers = 1024;         // mbarriers of the pipeline and of TMA
  // C_TMA: half a tile of C in shared memory for the TMA store, beside the pipeline (the store drains
  // while the next tile loads).
  if (get(c, "C_TMA") == 1) return pipeline + bm * (bn / 2) * scalar_type_bytes(p.dtype.output) + barriers;
  return std::max(pipeline, epilogue) + barriers;
}

int TritonGemmFamily::accumulator_registers(const FamilyConfig& c) {
  const int warps = std::max(1, get(c, "NUM_WARPS"));
  return get(c, "BLOCK_M") * get(c, "BLOCK_N") / (32 * warps);
}

std::optional<std::string> TritonGemmFamily::violation(const FamilyConfig& c, const FamilyProblem& p) const {
  if (p.op != "matmul") return fmt::format("triton_gemm computes matmul, not {}", p.op);
  if (!supports(p)) {
    return fmt::format("triton_gemm computes f16/bf16 inputs into f32 or the input type on sm_80 or later, and e4m3 "
                       "into f16 or bf16 (K a multiple of 16) on sm_90 or later, not {} {}x{}x{} on {}",
                       p.dtype.canonical, p.m, p.n, p.k, p.arch.empty() ? "this device" : p.arch);
  }
  if (auto bad = gemm::check_listed_values(c, params())) return bad;
  const int bm = get(c, "BLOCK_M"), bn = get(c, "BLOCK_N"), bk = get(c, "BLOCK_K"), warps = get(c, "NUM_WARPS");
  const bool persistent = get(c, "PERSISTENT") == 1, tma = get(c, "TMA") == 1, ws = get(c, "WARP_SPEC") == 1;
  const int split = get(c, "SPLIT_K");
  const int major = arch_major(p.arch);

  const long long smem = smem_bytes(c, p), limit = smem_limit(p.arch);
  if (smem > limit) {
    return fmt::format("needs {} bytes of shared memory ({} stages of {}x{} + {}x{} tiles), more than the {} of {}",
                       smem, get(c, "NUM_STAGES"), bm, bk, bk, bn, limit, p.arch.empty() ? "the device" : p.arch);
  }
  if (accumulator_registers(c) > k_max_accumulators) {
    return fmt::format("the {}x{} f32 accumulator takes {} registers per thread with {} warps (at most {}: more "
                       "spills to local memory)",
                       bm, bn, accumulator_registers(c), warps, k_max_accumulators);
  }
  if (tma) {
    if (major != 0 && major < 9) return fmt::format("TMA=1 needs Hopper (sm_90) or later, not {}", p.arch);
    // A TMA descriptor's strides are multiples of 16 bytes: rows of A (K elements) and of B.
    const long long eb = input_bytes(p);
    if ((p.k * eb) % 16 != 0) return fmt::format("TMA=1: rows of A ({} elements of K) are not a multiple of 16 bytes", p.k);
    // e4m3's B is stored N x K (the runner's first layout for it, the only one the template takes).
    const long long b_row = p.b_col_major || is_fp8(p) ? p.k : p.n;
    if ((b_row * eb) % 16 != 0) return fmt::format("TMA=1: rows of B ({} elements) are not a multiple of 16 bytes", b_row);
    if (split > 1) return "TMA=1 with SPLIT_K > 1 is not implemented by the template (split-K uses pointer loads)";
  }
  if (get(c, "C_TMA") == 1) {
    if (!tma || !persistent) return "C_TMA=1 is the persistent TMA kernel's store: it needs TMA=1 and PERSISTENT=1";
    if ((p.n * scalar_type_bytes(p.dtype.output)) % 16 != 0)
      return fmt::format("C_TMA=1: rows of C ({} elements of N) are not a multiple of 16 bytes", p.n);
  }
  if (ws) {
    if (!tma || !persistent) return "WARP_SPEC=1 specialises the persistent TMA loop: it needs TMA=1 and PERSISTENT=1";
    if (major != 0 && major < 9) return fmt::format("WARP_SPEC=1 needs Hopper (sm_90) or later, not {}", p.arch);
  }
  if (split > 1) {
    if (persistent) return "SPLIT_K > 1 runs one program per tile and k slice: it needs PERSISTENT=0";
    const long long k_tiles = ceil_div(p.k, bk);
    if (k_tiles < 2LL * split) {
      return fmt::format("SPLIT_K={} leaves fewer than two k steps of {} per slice (K={})", split, bk, p.k);
    }
    const long long workspace = static_cast<long long>(split) * p.m * p.n * 4;
    if (workspace > k_max_split_workspace) {
      return fmt::format("SPLIT_K={} needs a {} MiB workspace of partial sums (at most {} MiB: the problem has enough "
                         "tiles without splitting K)", split, workspace >> 20, k_max_split_workspace >> 20);
    }
  }
  // A tile far larger than the problem only computes masked-off zeros.
  if (bm > 64 && bm / 2 >= p.m) return fmt::format("BLOCK_M={} is more than twice M={}", bm, p.m);
  if (bn > 64 && bn / 2 >= p.n) return fmt::format("BLOCK_N={} is more than twice N={}", bn, p.n);
  return std::nullopt;
}

namespace {

// Triton's Hopper tutorial tile on a persistent grid, A and B read through TMA descriptors, the
// tile loop warp-specialised.
FamilyConfig persistent_tma_ws() {
  FamilyConfig c = base_config(128, 256, 64, 3, 8);
  c["TMA"] = "1";
  c["PERSISTENT"] = "1";
  c["WARP_SPEC"] = "1";
  return c;
}

bool large(const FamilyProblem& p) { return p.m >= 2048 && p.n >= 2048; }

}  // namespace

FamilyConfig TritonGemmFamily::default_config(const FamilyProblem& p) const {
  // The configuration Triton's own matmul tutorial starts from on Hopper, narrowed for small problems.
  std::vector<FamilyConfig> tries = {base_config(128, 256, 64, 3, 8), base_config(128, 128, 64, 4, 4),
                                     base_config(128, 128, 32, 4, 4), base_config(64, 128, 32, 4, 4),
                                     base_config(64, 64, 32, 4, 4),   base_config(32, 32, 32, 2, 4)};
  if (!large(p)) std::rotate(tries.begin(), tries.begin() + 1, tries.end());
  // On Hopper, large problems start from the same tile persistent, through TMA and warp-specialised:
  // measured on the H200 (launch overhead outside the interval) it beat the tutorial's configuration
  // by 3.6 % at 4096^3 and 4.3 % at 8192^3, the best of each tune.
  if (large(p) && arch_major(p.arch) >= 9) tries.insert(tries.begin(), persistent_tma_ws());
  for (const auto& c : tries) {
    if (!violation(c, p)) return c;
  }
  return tries.back();
}

std::vector<Alternative> TritonGemmFamily::alternatives(const FamilyProblem& p) const {
  std::vector<Alternative> out;
  const FamilyConfig def = default_config(p);
  auto add = [&](std::string name, std::string tag, FamilyConfig c) {
    if (c != def && !violation(c, p)) out.push_back({std::move(name), std::move(tag), std::move(c)});
  };
  FamilyConfig ws = persistent_tma_ws();
  // Few tiles (fewer than half the SMs even at 128x128) and a long K: no one-tile-per-program
  // kernel can fill the GPU, so split-K goes first.
  FamilyConfig sk = base_config(64, 128, 64, 4, 4);
  sk["SPLIT_K"] = "4";
  const char* sk_name = "split-K 4 with 64x128x64 tiles (few tiles, long K)";
  const bool few_tiles_long_k = tiles_of(base_config(128, 128, 64, 4, 4), p) < 66 && p.k >= 2048;
  if (few_tiles_long_k) add(sk_name, "splitk4_64x128", sk);
  if (ws == def) {
    // The default is the persistent warp-specialised kernel: the tutorial's one program per tile first.
    add("one program per tile, pointer loads, 128x256x64 (Triton's tutorial configuration)", "ptr_128x256",
        base_config(128, 256, 64, 3, 8));
  } else {
    add("persistent, TMA descriptors, warp-specialised 128x256x64", "tma_ws_128x256", ws);
  }
  FamilyConfig tp = ws;
  tp["WARP_SPEC"] = "0";
  add("persistent with TMA descriptors 128x256x64", "tma_pers_128x256", tp);
  // The same kernel storing C through TMA from shared memory, so the next tile's loads and MMAs run
  // while the store drains. Where storing C costs most (4096x8192x512, f32 out) it measured 373.3
  // TFLOPS against the default's 380.3 on the H200, so it is not tried first anywhere.
  FamilyConfig ws_store = ws;
  ws_store["C_TMA"] = "1";
  add("persistent, TMA descriptors, warp-specialised 128x256x64, C stored through TMA", "tma_ws_store", ws_store);
  FamilyConfig t = base_config(128, 256, 64, 4, 8);
  t["TMA"] = "1";
  add("TMA descriptors, one program per tile, 128x256x64 in 4 stages", "tma_128x256", t);
  add("128x128x64 tiles, 4 warps, 4 stages", "t128x128_w4", base_config(128, 128, 64, 4, 4));
  FamilyConfig pers = base_config(128, 128, 64, 4, 8);
  pers["PERSISTENT"] = "1";
  add("persistent 128x128x64 with 8 warps", "pers_128x128", pers);
  if (!few_tiles_long_k && tiles_of(sk, p) < 132) add(sk_name, "splitk4_64x128", sk);
  return out;
}

std::string TritonGemmFamily::render_source(const FamilyConfig& c, const FamilyProblem& p) const {
  std::string tmpl = read_file_or_throw(find_project_dir("kernels") / "triton/matmul/family/gemm.py");
  const std::string begin = "# @CROQ_CONFIG@ begin", end = "# @CROQ_CONFIG@ end";
  const size_t at = tmpl.find(begin), stop = tmpl.find(end);
  if (at == std::string::npos || stop == std::string::npos || stop < at) {
    throw Error(ExitCode::internal, "kernels/triton/matmul/family/gemm.py has no '# @CROQ_CONFIG@ begin/end' lines");
  }
  std::string cfg = fmt::format("# The configuration croq's search chose (family triton_gemm) for {} {}x{}x{}.\n",
                                p.dtype.canonical, p.m, p.n, p.k);
  std::string params = "CROQ_PARAMS = {";
  bool first = true;
  for (const char* name : k_order) {
    auto it = c.find(name);
    const std::string v = it == c.end() ? "0" : it->second;
    cfg += fmt::format("{} = {}\n", name, v);
    params += fmt::format("{}\"{}\": {}", first ? "" : ", ", name, name);
    first = false;
  }
  cfg += params + "}";
  return tmpl.substr(0, at) + cfg + tmpl.substr(stop + end.size());
}

std::vector<std::string> TritonGemmFamily::params_for_bottleneck(const std::string& b) const {
  if (b == "memory_bound") return {"BLOCK_K", "NUM_STAGES", "TMA", "GROUP_M", "BLOCK_N", "BLOCK_M"};
  if (b == "compute_bound") return {"BLOCK_N", "BLOCK_M", "NUM_WARPS", "WARP_SPEC", "NUM_STAGES"};
  if (b == "latency_bound") return {"NUM_STAGES", "WARP_SPEC", "TMA", "NUM_WARPS", "BLOCK_K"};
  if (b == "launch_bound") return {"PERSISTENT", "SPLIT_K", "BLOCK_M", "BLOCK_N"};
  return {"NUM_STAGES", "BLOCK_N", "TMA", "PERSISTENT", "NUM_WARPS", "BLOCK_K", "GROUP_M", "SPLIT_K"};
}

}  // namespace croq
