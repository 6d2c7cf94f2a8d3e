// Host check of the sparse Hopper template's prepared-A layout (kernels/cuda/gemm_sp/hopper/
// gemm_sp_sm90.cu), built by GemmSpTemplatesCompile.PreparedLayoutMatchesTheWgmmaMetadataOrder with
// nvcc and run on the CPU (no GPU call is made). For random 2:4 metadata and values, in both element
// sizes and over shapes with M and K tails, it prepares A with the template's own functions
// (kept_values, meta_word_value), then plays the consumer warpgroup: for every 64-row block, every
// sparse WGMMA k step and every thread, the word the consumer hands to wgmma.mma_async.sp (the
// template's consumer_meta_word indexing) is decoded the way the PTX ISA lays out sparse metadata
// (16-bit inputs, k32: lane l of warp w holds rows 16w + l/4 and +8 in its low and high halves,
// k 16 (l % 2) .. +15 of the step, lanes l and l ^ 2 alike for the sparsity selector; e4m3, k64:
// row 16w + l/4 + 8 (l % 2), k 32 ((l/2) % 2) .. +31), and the values the WGMMA reads from the
// compressed row are matched to the groups. Every (row, group) must be described exactly once, by
// the metadata croq handed over, with the values at the kept positions. Prints "layout ok".
#include "gemm_sp_sm90.cu"
#include "host_check.hpp"

#include <cstdio>
#include <random>
#include <vector>

using namespace croq_hopper_sp;

static void check(int es, int m, int k, unsigned seed) {
  std::mt19937 rng(seed);
  const uint8_t patterns[6] = {0x4, 0x8, 0xC, 0x9, 0xD, 0xE};
  std::vector<uint8_t> meta(static_cast<size_t>(m) * (k / 8));
  for (auto& b : meta) b = static_cast<uint8_t>(patterns[rng() % 6] | (patterns[rng() % 6] << 4));
  std::vector<uint8_t> a(static_cast<size_t>(m) * k * es);
  for (auto& x : a) x = static_cast<uint8_t>(rng() | 1);  // no zero bytes: every value distinct from padding
  const long long kp = (k + 63) / 64 * 64, mbs = (m + 63) / 64;
  // The prepared values [M, Kp/2] and metadata words [Mb][Kp/64][128], as croq_gemm_prepare lays them out.
  std::vector<uint32_t> vals(static_cast<size_t>(m) * (kp / 2));
  std::vector<uint32_t> words(static_cast<size_t>(mbs) * (kp / 64) * META_WORDS);
  for (long long r = 0; r < m; ++r)
    for (long long g = 0; g < kp / 4; ++g) {
      uint32_t v0, v1;
      CHECK(kept_values(a.data(), k, meta.data(), m, k, r, g, es, &v0, &v1), "valid metadata refused");
      vals[r * (kp / 2) + 2 * g] = v0;
      vals[r * (kp / 2) + 2 * g + 1] = v1;
    }
  for (long long mb = 0; mb < mbs; ++mb)
    for (long long kc = 0; kc < kp / 64; ++kc)
      for (int w = 0; w < META_WORDS; ++w)
        words[(mb * (kp / 64) + kc) * META_WORDS + w] = meta_word_value(meta.data(), m, k, mb, kc, w, es);

  auto elem = [&](long long r, long long col) -> uint32_t {  // dense A element bits
    return es == 2 ? reinterpret_cast<const uint16_t*>(a.data())[r * k + col] : a[r * k + col];
  };
  const int kstep = es == 2 ? 32 : 64;
  std::vector<int> seen(static_cast<size_t>(mbs) * 64 * (kp / 4), 0);
  for (long long mb = 0; mb < mbs; ++mb)
    for (long long ks = 0; ks < kp / kstep; ++ks) {
      const long long kc = ks * kstep / 64;
      const int j = static_cast<int>((ks * kstep % 64) / kstep);
      for (int t = 0; t < 128; ++t) {
        const int w = t / 32, l = t % 32;
        const uint32_t word = words[(mb * (kp / 64) + kc) * META_WORDS + consumer_meta_word(t, es, j)];
        // (row, first k, nibbles) the hardware takes from this thread's word
        struct Part {
          long long row, k0;
          uint32_t bits;
          int count;
        } parts[2];
        int nparts = 0;
        if (es == 2) {
          const uint32_t twin = words[(mb * (kp / 64) + kc) * META_WORDS + consumer_meta_word(t ^ 2, es, j)];
          CHECK(word == twin, "lanes %d and %d of warp %d hold different words", l, l ^ 2, w);
          if ((l / 2) % 2 != 0) continue;  // sparsity selector 0: lanes 0 and 1 of each quad
          const long long r = mb * 64 + 16 * w + l / 4, k0 = ks * 32 + 16 * (l % 2);
          parts[nparts++] = {r, k0, word & 0xFFFFu, 4};
          parts[nparts++] = {r + 8, k0, word >> 16, 4};
        } else {
          parts[nparts++] = {mb * 64 + 16 * w + l / 4 + 8 * (l % 2), ks * 64 + 32 * ((l / 2) % 2), word, 8};
        }
        for (int p = 0; p < nparts; ++p)
          for (int i = 0; i < parts[p].count; ++i) {
            const long long r = parts[p].row, g = parts[p].k0 / 4 + i;
            const uint32_t nib = (parts[p].bits >> (4 * i)) & 0xF;
            ++seen[(r * (kp / 4)) + g];
            if (r >= m) continue;  // rows past M: values are zero (TMA fill)
            if (g >= k / 4) {
              CHECK(nib == 0x4, "padding group %lld of row %lld has nibble %x", g, r, nib);
              CHECK(vals[r * (kp / 2) + 2 * g] == 0 && vals[r * (kp / 2) + 2 * g + 1] == 0, "padding values not zero");
              continue;
            }
            const uint32_t want = (meta[r * (k / 8) + g / 2] >> (4 * (g % 2))) & 0xF;
            CHECK(nib == want, "es %d %dx%d: row %lld group %lld: the WGMMA sees nibble %x, the metadata says %x", es,
                  m, k, r, g, nib, want);
            CHECK(vals[r * (kp / 2) + 2 * g] == elem(r, 4 * g + (want & 3)) &&
                      vals[r * (kp / 2) + 2 * g + 1] == elem(r, 4 * g + (want >> 2)),
                  "es %d: row %lld group %lld: compressed values are not the kept elements", es, r, g);
          }
      }
    }
  for (long long r = 0; r < mbs * 64; ++r)
    for (long long g = 0; g < kp / 4; ++g)
      CHECK(seen[r * (kp / 4) + g] == 1, "es %d %dx%d: row %lld group %lld described %d times", es, m, k, r, g,
            seen[r * (kp / 4) + g]);
}

int main() {
  unsigned seed = 1;
  for (int es : {2, 1})
    for (auto [m, k] : {std::pair{64, 64}, {128, 128}, {200, 520}, {1, 8}, {65, 1000}, {130, 2048}}) check(es, m, k, seed++);
  // An invalid nibble (i0 >= i1) is refused.
  std::vector<uint8_t> bad_meta(1, 0x01), a(16, 1);
  uint32_t v0, v1;
  CHECK(!kept_values(a.data(), 8, bad_meta.data(), 1, 8, 0, 0, 2, &v0, &v1), "nibble 0x1 accepted");
  if (failures) {
    std::printf("%d failures\n", failures);
    return 1;
  }
  std::printf("layout ok\n");
  return 0;
}
