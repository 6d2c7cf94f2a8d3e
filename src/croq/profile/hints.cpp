// IDEA-menu hints per DSL (classifier.hpp: menu_hints). The croqtile and triton rows are the
// seeds' IDEA menus (croq-dsl-croqtile, croq-dsl-triton) verbatim; the seeds have no menu for
// plain CUDA or the cpp backend, so those two are croq's own, written in the same shape (the
// croqtile levers in CUDA terms; their CPU counterparts for cpp). Which rows are chosen:
// the bottleneck's row(s), plus the conditional rows (register pressure, bank conflicts, L2
// thrash) when their rules fired; see docs/classifier.md.
#include <algorithm>

#include <fmt/format.h>

#include "croq/profile/classifier.hpp"
#include "croq/util/error.hpp"

namespace croq::profile {

namespace {

struct MenuRow {
  const char* row;      // the menu's row name
  const char* ideas;    // the row's ideas, as the menu states them
};

struct Menu {
  const char* name;
  MenuRow memory, compute, latency, launch, registers, bank, l2;
  MenuRow extra_latency;  // a second latency row (croqtile: WGMMA latency); empty row name if none
};

const Menu& menu_for(const std::string& dsl) {
  static const Menu croqtile{
      "croqtile",
      {"Memory-bound", "Increase tile grid; tma.copy vs dma.copy; add pipelining; larger tiles"},
      {"Compute-bound", "Switch MMA to mma.op with higher throughput shape; more register accumulators"},
      {"Latency-bound", "Add async pipeline stages; warp-specialized pipeline (1p1c -> 1p2c)"},
      {"SM underutilized", "Increase CTAs, check occupancy"},
      {"Register pressure", "Reduce tile size, fewer threads per CTA, regctrl"},
      {"Bank conflicts", "Swizzled shared layout in tile view; pad smem"},
      {"L2 thrash", "Change tile shape (M/N/K ratio); swizzle tile mapping"},
      {"WGMMA latency", "Better producer/consumer overlap; more stages"}};
  static const Menu triton{
      "triton",
      {"Memory-bound", "Increase BLOCK_M/N/K; add num_stages; eviction_policy=\"evict_last\""},
      {"Compute-bound", "Reduce register pressure; tune num_warps (4/8); tl.dot(allow_tf32=True)"},
      {"Latency-bound", "Increase num_stages; prefetch hints; warp specialization (warp_specialize=True)"},
      {"Launch-bound", "Persistent kernel: grid-stride loop; operator fusion"},
      {"Compute-bound", "Reduce register pressure; tune num_warps (4/8)"},
      {"", ""},
      {"Swizzle / L2", "Program-ID swizzle: pid = (pid % GROUP_M) * (N // BLOCK_N) + pid // GROUP_M"},
      {"", ""}};
  static const Menu cuda{
      "cuda",
      {"Memory-bound", "Raise reuse with larger CTA tiles staged in shared memory; move global->shared copies to TMA "
                       "(cp.async.bulk.tensor) or cp.async with more stages; 128-bit vector loads and stores"},
      {"Compute-bound", "Use the widest tensor-core path (wgmma/HGMMA on sm_90a instead of mma.sync or WMMA); more "
                        "accumulators per warp; fewer non-MMA instructions in the main loop"},
      {"Latency-bound", "Add pipeline stages (TMA or cp.async with mbarriers) so loads run ahead of the math; "
                        "warp specialization (producer warps, consumer warpgroups); more independent work per warp"},
      {"Launch-bound", "More CTAs (smaller tiles, split-K); persistent kernel looping over tiles; fuse with "
                       "neighbouring kernels"},
      {"Register pressure", "__launch_bounds__ or smaller warp tiles; setmaxnreg to move registers to consumer warps"},
      {"Bank conflicts", "Swizzled (XOR) shared-memory layout or padding; ldmatrix/TMA-friendly layouts"},
      {"L2 thrash", "Rasterize CTAs in groups (swizzled tile order) so neighbouring CTAs share operand tiles in L2"},
      {"", ""}};
  static const Menu cpp{
      "cpp",
      {"Memory-bound", "Cache blocking for L1/L2; pack operand panels contiguously; stream stores"},
      {"Compute-bound", "SIMD FMA micro-kernel (AVX2/AVX-512); register blocking of the output tile"},
      {"Latency-bound", "Software prefetch; more independent accumulators per loop"},
      {"Launch-bound", "Coarser parallel tasks; more threads for small problems"},
      {"Register pressure", "Smaller register tile in the micro-kernel"},
      {"", ""},
      {"", ""},
      {"", ""}};
  if (dsl == "croqtile") return croqtile;
  if (dsl == "triton") return triton;
  if (dsl == "cpp") return cpp;
  // cuda, and GPU DSLs croq does not build (tilelang, helion, cute-dsl, ...): the GPU techniques
  // apply to them as ideas.
  return cuda;
}

bool fired(const std::vector<RuleResult>& rules, const std::string& name) {
  return std::any_of(rules.begin(), rules.end(), [&](const RuleResult& r) { return r.rule == name && r.fired; });
}

}  // namespace

std::vector<Hint> menu_hints(const std::string& dsl, Bottleneck b, const ProfileMetrics& m,
                             const std::vector<RuleResult>& rules) {
  const Menu& menu = menu_for(dsl);
  std::vector<Hint> out;
  auto push = [&](const MenuRow& row, std::string why) {
    if (!*row.row) return;
    for (const auto& h : out) {
      if (h.menu == fmt::format("{} IDEA menu: {}", menu.name, row.row)) return;
    }
    out.push_back(Hint{row.ideas, fmt::format("{} IDEA menu: {}", menu.name, row.row), std::move(why)});
  };
  switch (b) {
    case Bottleneck::memory_bound:
      push(menu.memory, "classified memory_bound");
      break;
    case Bottleneck::compute_bound:
      push(menu.compute, "classified compute_bound");
      break;
    case Bottleneck::latency_bound:
      push(menu.latency, "classified latency_bound");
      push(menu.extra_latency, "classified latency_bound");
      break;
    case Bottleneck::launch_bound:
      push(menu.launch, "classified launch_bound");
      break;
    case Bottleneck::mixed:
      push(menu.memory, "classified mixed: memory is busy");
      push(menu.compute, "classified mixed: compute is busy");
      break;
  }
  bool reg_limited = m.occupancy_limiter.find("registers") != std::string::npos;
  if (fired(rules, "local_memory_used")) {
    push(menu.registers, "registers spill to local memory");
  } else if (fired(rules, "occupancy_low") && reg_limited &&
             (b == Bottleneck::latency_bound || b == Bottleneck::memory_bound)) {
    // More resident warps help only where warps wait; a compute-bound kernel at low occupancy
    // (a wgmma kernel holding a large accumulator tile) is low on purpose.
    push(menu.registers, "low occupancy, limited by registers");
  }
  if (fired(rules, "bank_conflicts_high")) push(menu.bank, "shared-memory bank conflicts");
  if (fired(rules, "l2_hit_low")) push(menu.l2, "low L2 hit rate while DRAM is busy");
  return out;
}

}  // namespace croq::profile
