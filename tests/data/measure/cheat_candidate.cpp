// Cheating candidates for the cpp dsl (kernel ABI on host pointers): each computes the product
// correctly when it believes it is being checked and skips work when it believes it is being
// timed. croq's answer to each (tests/cli/measure_cheats_cli_test.cpp) is the verdict in the
// right column: a launch that is checked looks exactly like one that is timed (same buffers, C
// poisoned before every launch, one column of B changed before every launch, timed launches
// verified at random after they ran), so a cheat either does the work every time or is caught.
//
//   mode            tells a check by                          croq's verdict
//   sniff_output    C still holds the NaN poison               PASS: C is poisoned before every launch,
//                   (checks used to poison, timings not)       so it never skips (CROQ_CHEAT_LOG counts 0)
//   count_calls     the call number: computes the first 5      VERIFY_FAIL timed_mismatch: a timed launch
//                   calls (check and probe), nothing after     verified at random is caught
//   cache_pointer   keeps its output per (A, B) pointer and    VERIFY_FAIL second_seed_mismatch: the
//                   copies it back on later calls              second seed refills A and B in place
//   cache_content   keeps its output per hash of the first     PASS at the honest speed: all of B is
//                   elements of A and B                        fresh before every launch, so the
//                                                              cache never answers
//   timing_gap      the host time since its previous call      VERIFY_FAIL timed_mismatch: the launches
//                   returned: computes after a pause longer    it skips are timed ones, verified at
//                   than the rhythm before (checks used to     random after they ran
//                   follow the reference and a comparison),
//                   skips a call in the rhythm (timed ones)
//   sync_call       calls a synchronising function (a          LIBRARY_CALL_FORBIDDEN synchronising_call
//                   stand-in named cudaDeviceSynchronize)      in an enforced task, before it runs
// The CLI tests compile this file with the system C++ compiler (-DCROQ_TEST_MODE=<mode>); every
// skipped launch is counted in the file CROQ_CHEAT_LOG names, if set.
#include <croq/kernel_abi.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <chrono>
#include <cstring>
#include <map>
#include <utility>
#include <vector>

#define MODE_sniff_output 1
#define MODE_count_calls 2
#define MODE_cache_pointer 3
#define MODE_cache_content 4
#define MODE_sync_call 5
#define MODE_timing_gap 6
#define CAT(a, b) a##b
#define MODE_OF(m) CAT(MODE_, m)

#if MODE_OF(CROQ_TEST_MODE) == MODE_sync_call
// A stand-in for the CUDA runtime's function (linked in, as nvcc links cudart statically): the
// purity scan finds the call to it.
extern "C" __attribute__((noinline, visibility("hidden"))) int cudaDeviceSynchronize() {
  static volatile int calls = 0;
  return calls = calls + 1, 0;
}
#endif

namespace {

int g_calls = 0;

void count_skip() {
  const char* log = std::getenv("CROQ_CHEAT_LOG");
  if (!log || !*log) return;
  if (FILE* f = std::fopen(log, "a")) {
    std::fputs("skip\n", f);
    std::fclose(f);
  }
}

void compute(const croq_matmul_problem* p, const float* a, const float* b, float* c) {
  for (int64_t i = 0; i < p->m; ++i) {
    for (int64_t j = 0; j < p->n; ++j) {
      float acc = 0.f;
      for (int64_t q = 0; q < p->k; ++q) {
        const float bv = p->b_layout == CROQ_COL_MAJOR ? b[j * p->k + q] : b[q * p->n + j];
        acc += a[i * p->k + q] * bv;
      }
      c[i * p->n + j] = acc;
    }
  }
}

uint64_t sample_hash(const float* x, int64_t count) {
  uint64_t h = 1469598103934665603ull;
  for (int64_t i = 0; i < count && i < 16; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &x[i], 4);
    h = (h ^ bits) * 1099511628211ull;
  }
  return h;
}

}  // namespace

CROQ_EXPORT croq_status croq_matmul(const croq_matmul_problem* p, const void* a_, const void* b_, void* c_, void*,
                                    size_t, void* stream) {
  if (stream != nullptr || p->a_type != CROQ_F32 || p->c_type != CROQ_F32) return CROQ_UNSUPPORTED;
  const float* a = static_cast<const float*>(a_);
  const float* b = static_cast<const float*>(b_);
  float* c = static_cast<float*>(c_);
  const size_t out = static_cast<size_t>(p->m * p->n);
  ++g_calls;
#if MODE_OF(CROQ_TEST_MODE) == MODE_sniff_output
  // The poison is NaN: a check. Anything else is the previous call's output: a timing, keep it.
  if (!std::isnan(c[0])) {
    count_skip();
    return CROQ_OK;
  }
  compute(p, a, b, c);
#elif MODE_OF(CROQ_TEST_MODE) == MODE_count_calls
  if (g_calls > 5) {
    count_skip();
    return CROQ_OK;
  }
  compute(p, a, b, c);
#elif MODE_OF(CROQ_TEST_MODE) == MODE_cache_pointer
  static std::map<std::pair<const void*, const void*>, std::vector<float>> cache;
  auto it = cache.find({a_, b_});
  if (it != cache.end()) {
    std::memcpy(c, it->second.data(), out * sizeof(float));
    count_skip();
    return CROQ_OK;
  }
  compute(p, a, b, c);
  cache[{a_, b_}] = std::vector<float>(c, c + out);
#elif MODE_OF(CROQ_TEST_MODE) == MODE_cache_content
  static std::map<std::pair<uint64_t, uint64_t>, std::vector<float>> cache;
  const auto key = std::make_pair(sample_hash(a, p->m * p->k), sample_hash(b, p->k * p->n));
  auto it = cache.find(key);
  if (it != cache.end()) {
    std::memcpy(c, it->second.data(), out * sizeof(float));
    count_skip();
    return CROQ_OK;
  }
  compute(p, a, b, c);
  cache[key] = std::vector<float>(c, c + out);
#elif MODE_OF(CROQ_TEST_MODE) == MODE_timing_gap
  // A pause longer than the rhythm of the calls before (1.5 times the previous gap) is a check;
  // a call in the rhythm is a timed one.
  using clock = std::chrono::steady_clock;
  static clock::time_point last{};
  static double previous_gap = -1;  // ms between the two calls before this one
  const double gap = g_calls > 1 ? std::chrono::duration<double, std::milli>(clock::now() - last).count() : -1;
  const bool whole = gap < 0 || previous_gap < 0 || gap > 1.5 * previous_gap;
  previous_gap = gap;
  if (whole) {
    compute(p, a, b, c);
  } else {
    count_skip();
  }
  last = clock::now();
#elif MODE_OF(CROQ_TEST_MODE) == MODE_sync_call
  compute(p, a, b, c);
  if (cudaDeviceSynchronize() != 0) return CROQ_INTERNAL;
#endif
  return CROQ_OK;
}

CROQ_EXPORT const char* croq_kernel_info(void) { return "{\"name\": \"cpu cheat candidate\"}"; }
