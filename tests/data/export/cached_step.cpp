// A CPU matmul written the way hand-written kernels often are (test data for croq export): a helper
// with external linkage in a named namespace, and a template whose function-local static caches the
// configuration. Two configurations of it in one library or process share that static unless each
// kernel's symbols are its own: the second would then step its k loop by the first one's STEP and
// compute wrong sums. STEP is set by a #define in front of this file.
#include <croq/kernel_abi.h>

#ifndef STEP
#define STEP 4
#endif

namespace cached_step {

struct Plan {
  int step;
  long long calls;
};

template <typename T>
Plan& plan() {
  static Plan p{STEP, 0};  // the "launch cache" of a GPU template
  return p;
}

inline float dot(const float* a, const float* b, long long k, long long ldb) {
  Plan& p = plan<float>();
  ++p.calls;
  const long long blocked = k / p.step * p.step;
  float acc = 0.f;
  for (long long q = 0; q < blocked; q += STEP) {
    for (int u = 0; u < STEP; ++u) acc += a[q + u] * b[(q + u) * ldb];
  }
  for (long long q = blocked; q < k; ++q) acc += a[q] * b[q * ldb];
  return acc;
}

}  // namespace cached_step

CROQ_EXPORT croq_status croq_matmul(const croq_matmul_problem* p, const void* a, const void* b, void* c, void*, size_t,
                                    void*) {
  if (!p || p->a_type != CROQ_F32 || p->c_type != CROQ_F32 || p->b_layout != CROQ_ROW_MAJOR) return CROQ_UNSUPPORTED;
  const float* A = static_cast<const float*>(a);
  const float* B = static_cast<const float*>(b);
  float* C = static_cast<float*>(c);
  for (long long i = 0; i < p->m; ++i) {
    for (long long j = 0; j < p->n; ++j) C[i * p->ldc + j] = cached_step::dot(A + i * p->lda, B + j, p->k, p->ldb);
  }
  return CROQ_OK;
}

CROQ_EXPORT const char* croq_kernel_info(void) { return "{\"name\":\"cached_step\"}"; }
