// Host check of the Hopper template's work schedule (work_start / work_at / plan_stream_k), built by
// GemmTemplatesCompile.HopperWorkScheduleCoversEveryKBlockOnce with the configuration macros on the
// command line and run on the CPU (no GPU call is made). For many (units, k blocks, clusters):
// every k block of every tile is computed exactly once; exactly one piece of each tile writes C;
// split-K and stream-K partial sums are published before anyone waits for them, and every wait
// is for pieces that are the first of their cluster's share (so no wait depends on another);
// a stream-K reduce holds its tile's last k block and adds the earlier shares of the tile in k
// order; each cluster has at most one partial piece (the first it works on) and one reduce piece
// (after it; with CROQ_SK_ORDER=1 the last of its share); a share whose last piece starts a tile
// works on that piece first, from k = 0; the region is the last partial wave and CROQ_SK_FULL_WAVES
// full ones;
// stream-K shares differ by at most one k block. Prints "schedule ok" and exits 0, or names the
// first broken case and exits 1.
#include "gemm_sm90.cu"
#include "host_check.hpp"

#include <cstdio>
#include <map>
#include <vector>

using namespace croq_hopper;

static void check(int units, int num_kb, int clusters, int sms) {
  Grid g;
  g.units_m = units;
  g.units_n = 1;
  g.num_units = units;
  g.num_kb = num_kb;
  g.split = SPLIT_K < num_kb ? SPLIT_K : num_kb;
  g.tiles = units;
  g.sk_slots = sms;
  Params p{};
  p.num_units = units;
  p.num_kb = num_kb;
  p.split = g.split;
  p.num_work = units * g.split;
  plan_stream_k(p, g, clusters);
  const int launched = p.sk_iters > 0 ? clusters : (p.num_work < clusters ? p.num_work : clusters);
  std::vector<std::vector<int>> owner(units, std::vector<int>(num_kb, -1));
  std::map<int, int> writers;                     // unit -> pieces writing C
  std::map<int, std::vector<Work>> partials_of;   // unit -> partial pieces
  std::map<int, std::pair<int, Work>> reduce_of;  // unit -> (cluster, reduce piece)
  std::vector<long long> share(launched, 0);
  for (int c = 0; c < launched; ++c) {
    Work w;
    int pieces = 0, partial_at = -1, reduce_at = -1, count = 0, first_sk = -1;
    for (long long cur = work_start(c, launched, p); work_at(cur, c, launched, p, w); cur = w.next, ++pieces) {
      if (pieces > units * num_kb + 1) {
        CHECK(false, "cluster %d: its cursor never reaches the end", c);
        return;
      }
      if (w.unit >= p.dp_work && first_sk < 0) {
        first_sk = pieces;
        // A share ending inside a tile it did not start in takes that tile's head first.
        const long long s = sk_bound(c, launched, p), e = sk_bound(c + 1, launched, p);
        const bool has_head = (e - 1) / num_kb * num_kb > s && e % num_kb != 0;
        if (has_head) CHECK(w.kb0 == 0 && w.kb1 < num_kb, "cluster %d: its stream-K work does not start with the head", c);
      }
      CHECK(w.unit >= 0 && w.unit < units && w.kb0 >= 0 && w.kb0 < w.kb1 && w.kb1 <= num_kb,
            "piece out of range: unit %d kb [%d,%d) of %d units x %d kb", w.unit, w.kb0, w.kb1, units, num_kb);
      if (!(w.unit >= 0 && w.unit < units && w.kb0 >= 0 && w.kb1 <= num_kb)) return;
      for (int kb = w.kb0; kb < w.kb1; ++kb) {
        CHECK(owner[w.unit][kb] < 0, "k block %d of unit %d computed twice (clusters %d and %d)", kb, w.unit,
              owner[w.unit][kb], c);
        owner[w.unit][kb] = c;
      }
      if (w.unit >= p.dp_work) share[c] += w.kb1 - w.kb0;
      if (w.role != WORK_PARTIAL) writers[w.unit]++;
      if (w.unit >= p.dp_work) {
        if (w.role == WORK_PARTIAL) {
          partials_of[w.unit].push_back(w);
          partial_at = pieces;
        }
        if (w.role == WORK_REDUCE) {
          reduce_of[w.unit] = {c, w};
          reduce_at = pieces;
        }
      }
      ++count;
    }
    if (SK_REDUCE_LAST && reduce_at >= 0)
      CHECK(reduce_at == pieces - 1, "cluster %d: its reduce piece is not the last of its share (CROQ_SK_ORDER=1)", c);
    if (partial_at >= 0) CHECK(partial_at == 0 || (p.dp_work > 0 && partial_at == (p.dp_work + launched - 1 - c) / launched),
                               "cluster %d: the stream-K partial piece is not the first of its share", c);
    if (reduce_at >= 0 && partial_at >= 0)
      CHECK(reduce_at > partial_at, "cluster %d: it waits for partial sums before publishing its own", c);
    (void)count;
  }
  for (int u = 0; u < units; ++u) {
    for (int kb = 0; kb < num_kb; ++kb) CHECK(owner[u][kb] >= 0, "k block %d of unit %d never computed", kb, u);
    CHECK(writers[u] == 1, "unit %d written by %d pieces", u, writers[u]);
  }
  if (p.sk_iters > 0) {
    CHECK(p.dp_work % launched == 0, "data-parallel units %d not whole waves of %d", p.dp_work, launched);
    const int full = units / launched, region_waves = full < SK_FULL_WAVES ? full : SK_FULL_WAVES;
    CHECK(units - p.dp_work == units % launched + region_waves * launched,
          "%d units on %d clusters: a stream-K region of %d units, not the partial wave and %d full ones", units,
          launched, units - p.dp_work, region_waves);
    long long lo = share[0], hi = share[0];
    for (long long s : share) {
      lo = s < lo ? s : lo;
      hi = s > hi ? s : hi;
    }
    CHECK(hi - lo <= 1 && lo >= 1, "stream-K shares from %lld to %lld k blocks", lo, hi);
    for (auto& [u, ps] : partials_of) {
      auto it = reduce_of.find(u);
      CHECK(it != reduce_of.end(), "unit %d has partial sums but no reduce", u);
      if (it == reduce_of.end()) continue;
      const int rc = it->second.first;
      const Work& r = it->second.second;
      CHECK(r.kb1 == num_kb, "unit %d: the reduce piece does not hold the tile's last k block", u);
      CHECK(rc - r.peer_first == static_cast<int>(ps.size()), "unit %d: reduce adds clusters %d..%d, %zu partials", u,
            r.peer_first, rc - 1, ps.size());
      int expect_kb = 0;
      for (int q = r.peer_first; q < rc; ++q) {
        CHECK(owner[u][expect_kb] == q, "unit %d: k block %d held by %d, not by cluster %d", u, expect_kb,
              owner[u][expect_kb], q);
        while (expect_kb < num_kb && owner[u][expect_kb] == q) ++expect_kb;
      }
      CHECK(expect_kb == r.kb0, "unit %d: the reduce's peers end at k block %d, the reduce starts at %d", u, expect_kb,
            r.kb0);
    }
  }
}

// How many k ranges (k block / 8) the clusters of the stream-K region stand at, step by step: the
// CTAs running together share A and B panels in L2 only when they work at the same k. Returns the
// most seen at once and prints the mean.
static int k_ranges(int units, int num_kb, int clusters) {
  Grid g;
  g.units_m = units;
  g.units_n = 1;
  g.num_units = units;
  g.num_kb = num_kb;
  g.split = 1;
  g.tiles = units;
  g.sk_slots = 132;
  Params p{};
  p.num_units = units;
  p.num_kb = num_kb;
  p.split = 1;
  p.num_work = units;
  plan_stream_k(p, g, clusters);
  if (p.sk_iters == 0) return 0;
  std::vector<std::vector<int>> ks(clusters);  // k block of each step of each cluster's region work
  for (int c = 0; c < clusters; ++c) {
    Work w;
    int guard = 0;
    for (long long cur = work_start(c, clusters, p); work_at(cur, c, clusters, p, w) && guard < units * num_kb + 1;
         cur = w.next, ++guard) {
      if (w.unit < p.dp_work) continue;
      for (int kb = w.kb0; kb < w.kb1; ++kb) ks[c].push_back(kb);
    }
  }
  int most = 0;
  double sum = 0;
  int steps = 0;
  for (size_t t = 0;; t += 8, ++steps) {
    std::map<int, int> at;
    for (const auto& v : ks)
      if (t < v.size()) at[v[t] / 8]++;
    if (at.empty()) break;
    most = static_cast<int>(at.size()) > most ? static_cast<int>(at.size()) : most;
    sum += static_cast<double>(at.size());
  }
  std::printf("stream-K region of %d units x %d k blocks on %d clusters: %.1f k ranges at a time on average, %d at most\n",
              units, num_kb, clusters, steps ? sum / steps : 0.0, most);
  return most;
}

int main() {
  const int units_list[] = {1, 2, 5, 64, 72, 128, 131, 132, 133, 200, 263, 264, 265, 352, 484, 512, 1849, 2048, 4096};
  const int kb_list[] = {1, 2, 3, 7, 8, 12, 64, 129, 512};
  const int cluster_list[] = {1, 2, 3, 66, 128, 132};
  int cases = 0, streamed = 0;
  for (int units : units_list)
    for (int kb : kb_list)
      for (int clusters : cluster_list) {
        check(units, kb, clusters, 132);
        ++cases;
        Params p{};
        Grid g;
        g.num_units = units;
        g.num_kb = kb;
        g.sk_slots = 132;
        p.num_work = units;
        plan_stream_k(p, g, clusters);
        streamed += p.sk_iters > 0;
      }
  std::printf("%d cases, %d with a stream-K region (STREAM_K=%d, SPLIT_K=%d)\n", cases, streamed, CROQ_STREAM_K,
              CROQ_SPLIT_K);
  if (STREAM_K && streamed == 0) {
    std::printf("FAIL: no case had a stream-K region\n");
    return 1;
  }
  if (STREAM_K && !SK_REDUCE_LAST && SK_FULL_WAVES == 1 && CROQ_CLUSTER_M * CROQ_CLUSTER_N == 1) {
    // Head first keeps the region's CTAs together: 12288x8192x12288 in 128x256 tiles (23.3 waves,
    // K = 192 blocks), 4096x1024x8192 (128 tiles, one wave), 4096^3 (3.9 waves). In k order they
    // stood at 11, 16 and 8 ranges at once.
    CHECK(k_ranges(3072, 192, 132) <= 2, "12288x8192x12288: the region's CTAs spread over k");
    CHECK(k_ranges(128, 128, 132) <= 2, "4096x1024x8192: the region's CTAs spread over k");
    CHECK(k_ranges(512, 64, 132) <= 2, "4096^3: the region's CTAs spread over k");
  }
  if (failures) {
    std::printf("%d failures\n", failures);
    return 1;
  }
  std::printf("schedule ok\n");
  return 0;
}
