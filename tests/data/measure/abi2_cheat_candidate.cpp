// Cheating candidates of the kernel ABI version 2 for the cpp backend (tests/cli/measure_cheats_cli_test.cpp),
// each wrapped around croq's own cpp reference kernel of its operator (which does the real work):
// build with -DCROQ_TEST_OPERATOR=blockscaled|gemm_sp|matmul and -DCROQ_TEST_MODE=<mode>.
//   honest          the reference itself
//   zero_scales     (blockscaled) zeroes A's scales of the back half of the k blocks, then computes:
//                   the output is right for the inputs as it left them, half the work a real kernel does
//   small_blocks    (blockscaled) skips, for each output element, the k blocks whose scales' product is
//                   below CROQ_SKIP_BELOW (3e-4) of the largest block's (a kernel that reads the scales
//                   first saves that work where a block's share of the sum is below the tolerance),
//                   and appends to $CROQ_CHEAT_LOG "skipped <s> of <n>" (multiply-adds) per launch
//   prepare_writes  (gemm_sp) croq_gemm_prepare zeroes A's first row and its metadata
//   late_rows       (matmul) leaves the last fifth of C's rows to a thread that finishes them after the
//                   launch returned (outside the timed interval)
//   calls_blas      (matmul) multiplies with OpenBLAS, the baseline library, under a name of its own
//   count_changed   (matmul) keeps a copy of B per input set and appends to $CROQ_CHEAT_LOG how many of
//                   B's columns changed since its last launch on that set (what an incremental cache
//                   would have to recompute), then computes
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <thread>
#include <vector>

#define croq_gemm honest_gemm
#define croq_kernel_info honest_kernel_info
#if CROQ_TEST_OPERATOR_blockscaled
#include "../../../kernels/cpp/blockscaled/reference.cpp"
#elif CROQ_TEST_OPERATOR_gemm_sp
#include "../../../kernels/cpp/gemm_sp/reference.cpp"
#else
#include "../../../kernels/cpp/blockscaled/reference.cpp"  // for the ABI's declarations only
#endif
#undef croq_gemm
#undef croq_kernel_info

#define CROQ_STR2(x) #x
#define CROQ_STR(x) CROQ_STR2(x)
#define CROQ_IS(m) (std::strcmp(CROQ_STR(CROQ_TEST_MODE), m) == 0)

namespace {

#ifndef CROQ_SKIP_BELOW
#define CROQ_SKIP_BELOW 3e-4f
#endif

// C = A B in f32 for rows [r0, r1) (f32 matmul, B row-major).
void rows(const croq_gemm_desc* d, const croq_gemm_operands* o, int64_t r0, int64_t r1) {
  const auto* a = static_cast<const float*>(o->a);
  const auto* b = static_cast<const float*>(o->b);
  auto* c = static_cast<float*>(o->c);
  for (int64_t i = r0; i < r1; ++i)
    for (int64_t j = 0; j < d->n; ++j) {
      float s = 0;
      for (int64_t q = 0; q < d->k; ++q) s += a[i * d->lda + q] * b[q * d->ldb + j];
      c[i * d->ldc + j] = s;
    }
}

}  // namespace

extern "C" void blas_product(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*,
                             int) __asm__("cblas_" "sgemm");

extern "C" {

CROQ_EXPORT croq_status croq_gemm(const croq_gemm_desc* d, const croq_gemm_operands* o, void* stream) {
  if (CROQ_IS("zero_scales") && d->op == CROQ_OP_MATMUL_BLOCKSCALED) {
    const int64_t kb = (d->k + d->scale_block_k - 1) / d->scale_block_k;
    auto* as = const_cast<float*>(static_cast<const float*>(o->a_scale));  // [kb, M]
    for (int64_t q = kb / 2; q < kb; ++q) std::memset(as + q * d->m, 0, static_cast<size_t>(d->m) * sizeof(float));
  }
  if (CROQ_IS("small_blocks") && d->op == CROQ_OP_MATMUL_BLOCKSCALED) {
    const int64_t bk = d->scale_block_k, bn = d->scale_block_n, kb = (d->k + bk - 1) / bk;
    long long skipped = 0, total = 0;
    for (int64_t i = 0; i < d->m; ++i) {
      for (int64_t j = 0; j < d->n; ++j) {
        float largest = 0.f;
        for (int64_t q = 0; q < kb; ++q) {
          largest = std::max(largest, o->a_scale[q * d->m + i] * o->b_scale[(j / bn) * kb + q]);
        }
        float acc = 0.f;
        for (int64_t q = 0; q < d->k; ++q) {
          ++total;
          if (o->a_scale[(q / bk) * d->m + i] * o->b_scale[(j / bn) * kb + q / bk] < largest * CROQ_SKIP_BELOW) {
            ++skipped;
            continue;
          }
          acc += load(o->a, d->a_type, i * d->lda + q) * o->a_scale[(q / bk) * d->m + i] *
                 (load(o->b, d->b_type, j * d->ldb + q) * o->b_scale[(j / bn) * kb + q / bk]);
        }
        store(o->c, d->c_type, i * d->ldc + j, acc);
      }
    }
    if (const char* log = std::getenv("CROQ_CHEAT_LOG")) {
      if (FILE* f = std::fopen(log, "a")) {
        std::fprintf(f, "skipped %lld of %lld\n", skipped, total);
        std::fclose(f);
      }
    }
    return CROQ_OK;
  }
  if (d->op == CROQ_OP_MATMUL && d->scale_mode == CROQ_SCALE_NONE) {
    if (d->a_type != CROQ_F32 || d->b_layout != CROQ_ROW_MAJOR) return CROQ_UNSUPPORTED;
    if (CROQ_IS("calls_blas")) {
      blas_product(101, 111, 111, static_cast<int>(d->m), static_cast<int>(d->n), static_cast<int>(d->k), 1.0f,
                   static_cast<const float*>(o->a), static_cast<int>(d->lda), static_cast<const float*>(o->b),
                   static_cast<int>(d->ldb), 0.0f, static_cast<float*>(o->c), static_cast<int>(d->ldc));
      return CROQ_OK;
    }
    if (CROQ_IS("count_changed")) {
      static std::map<const void*, std::vector<float>> seen;
      const auto* b = static_cast<const float*>(o->b);
      std::vector<float>& copy = seen[o->b];
      if (!copy.empty()) {
        int64_t changed = 0;
        for (int64_t j = 0; j < d->n; ++j) {
          bool diff = false;
          for (int64_t q = 0; q < d->k && !diff; ++q) diff = copy[q * d->n + j] != b[q * d->ldb + j];
          changed += diff;
        }
        if (const char* log = std::getenv("CROQ_CHEAT_LOG")) {
          if (FILE* f = std::fopen(log, "a")) {
            std::fprintf(f, "%lld\n", static_cast<long long>(changed));
            std::fclose(f);
          }
        }
      }
      copy.resize(static_cast<size_t>(d->k * d->n));
      for (int64_t q = 0; q < d->k; ++q)
        for (int64_t j = 0; j < d->n; ++j) copy[q * d->n + j] = b[q * d->ldb + j];
    }
    if (CROQ_IS("late_rows")) {
      const int64_t split = d->m - d->m / 5;
      rows(d, o, 0, split);
      const croq_gemm_desc dd = *d;
      const croq_gemm_operands oo = *o;
      std::thread([dd, oo, split] {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        rows(&dd, &oo, split, dd.m);
      }).detach();
      return CROQ_OK;
    }
    rows(d, o, 0, d->m);
    return CROQ_OK;
  }
  return honest_gemm(d, o, stream);
}

#if CROQ_TEST_OPERATOR_gemm_sp
CROQ_EXPORT size_t croq_gemm_prepared_bytes(const croq_gemm_desc*) { return 64; }
CROQ_EXPORT croq_status croq_gemm_prepare(const croq_gemm_desc* d, const croq_gemm_operands* o, void*, size_t, void*) {
  if (CROQ_IS("prepare_writes")) {
    std::memset(const_cast<void*>(o->a), 0, static_cast<size_t>(d->k));
    std::memset(const_cast<unsigned char*>(o->a_meta), 0, static_cast<size_t>(d->k / 8));
  }
  return CROQ_OK;
}
#endif

CROQ_EXPORT const char* croq_kernel_info(void) { return "{\"name\": \"abi2_cheat\", \"dsl\": \"cpp\", \"params\": {}}"; }

}  // extern "C"
