// The cpp backend's reference kernel for 2:4 sparse GEMM (kernel ABI v2, CROQ_OP_MATMUL_SPARSE24):
// for every output element, the K/4 groups of its row of A, each contributing its two kept
// positions as the metadata names them (the positions outside the pattern hold arbitrary values
// and are never read). f32, f16, bf16 or e4m3 inputs, f32, f16 or bf16 output, both B layouts,
// any M and N, K a multiple of 8; accumulation in f32. Slow and plain on purpose: the starting
// point of a sparse cpp task and the model of what the metadata means.
// croq-kernel: {"dtypes": ["f32", "f16f32", "f16", "bf16f32", "bf16", "e4m3f16", "e4m3bf16"], "rank": 10, "tensor_cores": false, "summary": "2:4 sparse reference: metadata decoded per group, f32 accumulation"}
#include <croq/kernel_abi.h>
#include <croq/host_scalar.h>

#include <cstdint>
#include <cstring>
#include <initializer_list>

using croq_host::load;
using croq_host::store;

extern "C" {

CROQ_EXPORT croq_status croq_gemm(const croq_gemm_desc* d, const croq_gemm_operands* o, void* /*stream*/) {
  if (d == nullptr || o == nullptr || d->abi_version != CROQ_GEMM_ABI_VERSION) return CROQ_INVALID_ARGUMENT;
  if (d->op != CROQ_OP_MATMUL_SPARSE24 || d->scale_mode != CROQ_SCALE_NONE) return CROQ_UNSUPPORTED;
  if (d->compute_type != CROQ_F32 || d->c_type == CROQ_E4M3 || d->k % 8 != 0 || o->a_meta == nullptr)
    return CROQ_UNSUPPORTED;
  const bool b_col = d->b_layout == CROQ_COL_MAJOR;
  const int64_t meta_row = d->k / 8;
  for (int64_t i = 0; i < d->m; ++i) {
    for (int64_t j = 0; j < d->n; ++j) {
      float acc = 0.f;
      for (int64_t g = 0; g < d->k / 4; ++g) {
        const unsigned nibble = (o->a_meta[i * meta_row + g / 2] >> (4 * (g % 2))) & 0xFu;
        for (unsigned pos : {nibble & 3u, nibble >> 2}) {
          const int64_t q = 4 * g + pos;
          const float bv = load(o->b, d->b_type, b_col ? j * d->ldb + q : q * d->ldb + j);
          acc += load(o->a, d->a_type, i * d->lda + q) * bv;
        }
      }
      store(o->c, d->c_type, i * d->ldc + j, acc);
    }
  }
  return CROQ_OK;
}

CROQ_EXPORT const char* croq_kernel_info(void) {
  return "{\"name\": \"gemm_sp reference\", \"dsl\": \"cpp\", \"params\": {}}";
}

}  // extern "C"
