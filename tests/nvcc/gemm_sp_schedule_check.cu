// Host check of the sparse Hopper template's work schedule (kernels/cuda/gemm_sp/hopper/
// gemm_sp_sm90.cu: tail_dp_units, work_at), built by GemmSpTemplatesCompile.WorkScheduleCoversEveryKBlockOnce
// with the configuration macros on the command line and run on the CPU (no GPU call is made). For
// many (units, k blocks, resident clusters) as the launch computes them: every k block of every unit
// is computed exactly once; a whole unit is one piece, a split one has `split` slices of which
// exactly one (the last) writes C; the split units are the last ones, numbered 0.. in order, and
// their partial-sum slots stay inside the workspace the template sizes (2 x SMs tiles with
// SPLIT_TAIL). Then prints "dp <units> <split> <clusters> <whole units>" for a grid of cases, which
// the test compares with HopperGemmSpFamily::tail_dp_units (the family's mirror of the choice), and
// "schedule ok" (exit 0), or names the first broken case (exit 1).
#include "gemm_sp_sm90.cu"
#include "host_check.hpp"

#include <cstdio>
#include <vector>

using namespace croq_hopper_sp;

// The launch's choice (run()): the tail from the resident clusters, no split beyond the slots.
static void check(int units, int num_kb, int clusters) {
  const int sms = clusters * CS;
  const int split = SPLIT_K < num_kb ? SPLIT_K : num_kb;
  const long long tiles = static_cast<long long>(units) * CS;
  long long split_tiles = tiles;
  if (SPLIT_TAIL && split_tiles > 2LL * sms) split_tiles = 2LL * sms;
  Params p;
  memset(&p, 0, sizeof(p));
  p.num_units = units;
  p.num_kb = num_kb;
  p.split = split;
  p.dp_units = tail_dp_units(units, split, clusters);
  if (static_cast<long long>(units - p.dp_units) * CS > split_tiles) p.dp_units = units;
  p.num_work = p.dp_units + (units - p.dp_units) * split;
  if (!SPLIT_TAIL && split > 1) CHECK(p.dp_units == 0, "units %d: without SPLIT_TAIL every unit is split", units);
  std::vector<std::vector<int>> covered(units, std::vector<int>(num_kb, 0));
  std::vector<int> writers(units, 0);
  Work wk;
  int w = 0;
  for (; work_at(w, p, wk); ++w) {
    CHECK(wk.unit >= 0 && wk.unit < units, "work %d: unit %d of %d", w, wk.unit, units);
    if (wk.unit < 0 || wk.unit >= units) break;
    const bool split_unit = wk.unit >= p.dp_units;
    CHECK(wk.split == (split_unit ? split : 1), "work %d: unit %d has split %d", w, wk.unit, wk.split);
    CHECK(0 <= wk.kb0 && wk.kb0 <= wk.kb1 && wk.kb1 <= num_kb, "work %d: k blocks [%d, %d)", w, wk.kb0, wk.kb1);
    for (int kb = wk.kb0; kb < wk.kb1; ++kb) ++covered[wk.unit][kb];
    if (wk.slice == wk.split - 1) ++writers[wk.unit];
    if (split_unit && wk.split > 1) {
      CHECK(wk.part == wk.unit - p.dp_units, "work %d: part %d of unit %d", w, wk.part, wk.unit);
      const long long last_slot = (static_cast<long long>(wk.part) * CS + CS - 1) * (wk.split - 1) + wk.split - 2;
      CHECK(last_slot < split_tiles * (split - 1), "units %d clusters %d: slot %lld beyond %lld", units, clusters,
            last_slot, split_tiles * (split - 1));
    }
  }
  CHECK(w == p.num_work, "units %d: %d works of %d", units, w, p.num_work);
  for (int u = 0; u < units; ++u) {
    CHECK(writers[u] == 1, "units %d kb %d clusters %d: unit %d has %d writers", units, num_kb, clusters, u, writers[u]);
    for (int kb = 0; kb < num_kb; ++kb)
      CHECK(covered[u][kb] == 1, "units %d kb %d clusters %d: unit %d k block %d computed %d times", units, num_kb,
            clusters, u, kb, covered[u][kb]);
  }
}

int main() {
  for (int clusters : {1, 7, 33, 60, 66, 132})
    for (int num_kb : {1, 2, 5, 9, 128})
      for (int units = 1; units <= 600; units += (units < 140 ? 1 : 7)) check(units, num_kb, clusters);
  for (int clusters : {60, 66, 132})
    for (int split = 1; split <= 8; ++split)
      for (int units = 1; units <= 600; units += 13) std::printf("dp %d %d %d %d\n", units, split, clusters, tail_dp_units(units, split, clusters));
  if (failures) {
    std::printf("%d failures\n", failures);
    return 1;
  }
  std::printf("schedule ok\n");
  return 0;
}
