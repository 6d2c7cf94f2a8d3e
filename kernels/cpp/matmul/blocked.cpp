// Cache-blocked C++ matmul on host pointers. C is computed in blocks of k_mc x k_nc rows and
// columns; for each block, K is walked in panels of k_kc. The B panel is packed once per (panel,
// column block) into a contiguous k_kc x k_nc buffer (which also turns a column-major B into
// row-major), and the inner loop runs over contiguous columns (i, p, j order) so the compiler
// vectorises it with -O3 -march=native. Implements include/croq/kernel_abi.h for CPU candidates:
// f32 inputs and output, both B layouts, any M, N, K (accumulation in f32).
// croq-kernel: {"dtypes": ["f32"], "rank": 20, "tensor_cores": false, "summary": "cache-blocked with packed B panels, vectorised inner loop"}
#include <croq/kernel_abi.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace {

constexpr int64_t k_mc = 64;   // rows of C per block
constexpr int64_t k_nc = 256;  // columns of C per block
constexpr int64_t k_kc = 128;  // depth of a K panel

void block_kernel(const float* a, int64_t lda, const float* bp, float* c, int64_t ldc, int64_t mc, int64_t nc,
                  int64_t kc) {
  for (int64_t i = 0; i < mc; ++i) {
    float* __restrict__ crow = c + i * ldc;
    const float* arow = a + i * lda;
    for (int64_t q = 0; q < kc; ++q) {
      const float av = arow[q];
      const float* __restrict__ brow = bp + q * k_nc;
      for (int64_t j = 0; j < nc; ++j) crow[j] += av * brow[j];
    }
  }
}

}  // namespace

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
  for (int64_t i = 0; i < p->m; ++i) std::memset(c + i * p->ldc, 0, sizeof(float) * size_t(p->n));

  std::vector<float> packed(size_t(k_kc * k_nc));
  for (int64_t j0 = 0; j0 < p->n; j0 += k_nc) {
    const int64_t nc = std::min(k_nc, p->n - j0);
    for (int64_t q0 = 0; q0 < p->k; q0 += k_kc) {
      const int64_t kc = std::min(k_kc, p->k - q0);
      for (int64_t q = 0; q < kc; ++q) {
        float* dst = packed.data() + q * k_nc;
        if (b_col) {
          for (int64_t j = 0; j < nc; ++j) dst[j] = b[(j0 + j) * p->ldb + q0 + q];
        } else {
          std::memcpy(dst, b + (q0 + q) * p->ldb + j0, sizeof(float) * size_t(nc));
        }
      }
      for (int64_t i0 = 0; i0 < p->m; i0 += k_mc) {
        const int64_t mc = std::min(k_mc, p->m - i0);
        block_kernel(a + i0 * p->lda + q0, p->lda, packed.data(), c + i0 * p->ldc + j0, p->ldc, mc, nc, kc);
      }
    }
  }
  return CROQ_OK;
}

CROQ_EXPORT const char* croq_kernel_info(void) {
  return "{\"name\": \"blocked\", \"dsl\": \"cpp\", \"params\": {\"MC\": 64, \"NC\": 256, \"KC\": 128}}";
}

}  // extern "C"
