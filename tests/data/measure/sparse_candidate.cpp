// 2:4 sparse test candidates for the cpp dsl (kernel ABI v2 on host pointers, f32), one per
// CROQ_TEST_MODE; croq's harness must tell the correct ones from the broken ones:
//   ok              decodes the metadata per group                          -> PASS
//   prepared        compresses A in croq_gemm_prepare, launches read only that -> PASS
//   dense           multiplies A densely, metadata ignored                  -> VERIFY_FAIL (the poison)
//   fixed_pattern   assumes every group keeps positions 0 and 1             -> VERIFY_FAIL
//   swapped_nibbles reads group 2j from the high nibble (wrong pattern)     -> VERIFY_FAIL
//   magnitude       keeps the two largest values of each group of A         -> VERIFY_FAIL
//   prepare_once    compresses only at its first croq_gemm_prepare          -> VERIFY_FAIL (second seed)
//   prepare_refuses croq_gemm_prepare returns CROQ_UNSUPPORTED              -> UNSUPPORTED
//   v1_only         exports only version 1's croq_matmul                    -> UNSUPPORTED
// The CLI tests compile this file with the system C++ compiler.
#include <croq/kernel_abi.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#define MODE_ok 1
#define MODE_prepared 2
#define MODE_dense 3
#define MODE_fixed_pattern 4
#define MODE_swapped_nibbles 5
#define MODE_magnitude 6
#define MODE_prepare_once 7
#define MODE_prepare_refuses 8
#define MODE_v1_only 9
#define CAT(a, b) a##b
#define MODE_OF(m) CAT(MODE_, m)
#define MODE MODE_OF(CROQ_TEST_MODE)

#if MODE == MODE_v1_only

CROQ_EXPORT croq_status croq_matmul(const croq_matmul_problem* p, const void* a, const void* b, void* c, void*, size_t,
                                    void*) {
  if (p->a_type != CROQ_F32 || p->c_type != CROQ_F32) return CROQ_UNSUPPORTED;
  const float *A = static_cast<const float*>(a), *B = static_cast<const float*>(b);
  for (int64_t i = 0; i < p->m; ++i)
    for (int64_t j = 0; j < p->n; ++j) {
      float acc = 0;
      for (int64_t q = 0; q < p->k; ++q) acc += A[i * p->lda + q] * B[q * p->ldb + j];
      static_cast<float*>(c)[i * p->ldc + j] = acc;
    }
  return CROQ_OK;
}

#else

namespace {

// The two kept positions of group g of row i, as this mode reads them.
[[maybe_unused]] void kept(const croq_gemm_desc* d, const croq_gemm_operands* o, int64_t i, int64_t g, int& p0, int& p1) {
  const uint8_t byte = o->a_meta[i * (d->k / 8) + g / 2];
#if MODE == MODE_swapped_nibbles
  const unsigned nibble = (byte >> (4 * (1 - g % 2))) & 0xFu;
#else
  const unsigned nibble = (byte >> (4 * (g % 2))) & 0xFu;
#endif
  p0 = static_cast<int>(nibble & 3u);
  p1 = static_cast<int>(nibble >> 2);
#if MODE == MODE_fixed_pattern
  p0 = 0;
  p1 = 1;
#elif MODE == MODE_magnitude
  const float* a = static_cast<const float*>(o->a) + i * d->lda + 4 * g;
  p0 = 0;
  for (int q = 1; q < 4; ++q) {
    if (std::fabs(a[q]) > std::fabs(a[p0])) p0 = q;
  }
  p1 = p0 == 0 ? 1 : 0;
  for (int q = 0; q < 4; ++q) {
    if (q != p0 && std::fabs(a[q]) > std::fabs(a[p1])) p1 = q;
  }
#endif
}

[[maybe_unused]] bool compressed = false;

}  // namespace

extern "C" {

#if MODE == MODE_prepared || MODE == MODE_prepare_once || MODE == MODE_prepare_refuses
CROQ_EXPORT size_t croq_gemm_prepared_bytes(const croq_gemm_desc* d) {
  return static_cast<size_t>(d->m * (d->k / 2)) * (sizeof(float) + sizeof(int32_t));
}

CROQ_EXPORT croq_status croq_gemm_prepare(const croq_gemm_desc* d, const croq_gemm_operands* o, void* out, size_t,
                                          void*) {
#if MODE == MODE_prepare_refuses
  (void)d;
  (void)o;
  (void)out;
  return CROQ_UNSUPPORTED;
#else
#if MODE == MODE_prepare_once
  if (compressed) return CROQ_OK;
#endif
  compressed = true;
  float* vals = static_cast<float*>(out);
  int32_t* cols = reinterpret_cast<int32_t*>(vals + d->m * (d->k / 2));
  for (int64_t i = 0; i < d->m; ++i)
    for (int64_t g = 0; g < d->k / 4; ++g) {
      int p0, p1;
      kept(d, o, i, g, p0, p1);
      const int64_t e = i * (d->k / 2) + 2 * g;
      vals[e] = static_cast<const float*>(o->a)[i * d->lda + 4 * g + p0];
      vals[e + 1] = static_cast<const float*>(o->a)[i * d->lda + 4 * g + p1];
      cols[e] = static_cast<int32_t>(4 * g + p0);
      cols[e + 1] = static_cast<int32_t>(4 * g + p1);
    }
  return CROQ_OK;
#endif
}
#endif

CROQ_EXPORT croq_status croq_gemm(const croq_gemm_desc* d, const croq_gemm_operands* o, void* stream) {
  if (stream != nullptr || d->op != CROQ_OP_MATMUL_SPARSE24 || d->a_type != CROQ_F32 || d->c_type != CROQ_F32 ||
      d->b_layout != CROQ_ROW_MAJOR)
    return CROQ_UNSUPPORTED;
  const float *A = static_cast<const float*>(o->a), *B = static_cast<const float*>(o->b);
  float* C = static_cast<float*>(o->c);
  (void)A;
  for (int64_t i = 0; i < d->m; ++i)
    for (int64_t j = 0; j < d->n; ++j) {
      float acc = 0;
#if MODE == MODE_dense
      for (int64_t q = 0; q < d->k; ++q) acc += A[i * d->lda + q] * B[q * d->ldb + j];
#elif MODE == MODE_prepared || MODE == MODE_prepare_once || MODE == MODE_prepare_refuses
      const float* vals = static_cast<const float*>(o->a_prepared);
      const int32_t* cols = reinterpret_cast<const int32_t*>(vals + d->m * (d->k / 2));
      for (int64_t e = i * (d->k / 2); e < (i + 1) * (d->k / 2); ++e) acc += vals[e] * B[cols[e] * d->ldb + j];
#else
      for (int64_t g = 0; g < d->k / 4; ++g) {
        int p0, p1;
        kept(d, o, i, g, p0, p1);
        acc += A[i * d->lda + 4 * g + p0] * B[(4 * g + p0) * d->ldb + j] +
               A[i * d->lda + 4 * g + p1] * B[(4 * g + p1) * d->ldb + j];
      }
#endif
      C[i * d->ldc + j] = acc;
    }
  return CROQ_OK;
}

CROQ_EXPORT const char* croq_kernel_info(void) { return "{\"name\": \"sparse test candidate\"}"; }

}  // extern "C"

#endif
