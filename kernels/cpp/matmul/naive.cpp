// Naive C++ matmul on host pointers: the textbook triple loop (i, j, p) with an f32 accumulator.
// The cpp backend's starting point of last resort. Implements include/croq/kernel_abi.h for
// CPU candidates (stream == NULL, all work done before returning): f32 inputs and output, both
// B layouts, any M, N, K.
// croq-kernel: {"dtypes": ["f32"], "rank": 10, "tensor_cores": false, "summary": "textbook triple loop"}
#include <croq/kernel_abi.h>

extern "C" {

CROQ_EXPORT croq_status croq_matmul(const croq_matmul_problem* p, const void* a_ptr, const void* b_ptr, void* c_ptr,
                                    void* /*workspace*/, size_t /*workspace_bytes*/, void* /*stream*/) {
  if (p == nullptr || p->abi_version != CROQ_ABI_VERSION) return CROQ_INVALID_ARGUMENT;
  if (p->m < 0 || p->n < 0 || p->k < 0) return CROQ_INVALID_ARGUMENT;
  if (p->a_type != CROQ_F32 || p->b_type != CROQ_F32 || p->c_type != CROQ_F32 || p->compute_type != CROQ_F32)
    return CROQ_UNSUPPORTED;
  const float* a = static_cast<const float*>(a_ptr);
  const float* b = static_cast<const float*>(b_ptr);
  float* c = static_cast<float*>(c_ptr);
  const bool b_col = p->b_layout == CROQ_COL_MAJOR;
  for (int64_t i = 0; i < p->m; ++i) {
    for (int64_t j = 0; j < p->n; ++j) {
      float acc = 0.f;
      for (int64_t q = 0; q < p->k; ++q) {
        float bv = b_col ? b[j * p->ldb + q] : b[q * p->ldb + j];
        acc += a[i * p->lda + q] * bv;
      }
      c[i * p->ldc + j] = acc;
    }
  }
  return CROQ_OK;
}

CROQ_EXPORT const char* croq_kernel_info(void) { return "{\"name\": \"naive\", \"dsl\": \"cpp\", \"params\": {}}"; }

}  // extern "C"
