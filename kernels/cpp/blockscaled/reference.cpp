// The cpp backend's reference kernel for FP8 GEMM with scales (kernel ABI v2): the block-scaled
// operator (CROQ_OP_MATMUL_BLOCKSCALED: A scaled per 1 x scale_block_k, B per scale_block_n x
// scale_block_k, f32 scales) and dense e4m3 matmul with per-tensor scales (CROQ_SCALE_TENSOR).
// For every output element: sum over K of (a_scale A) (b_scale B) in f32, each element multiplied by
// its block's scales (per tensor: the f32 sum times a_scale * b_scale). e4m3 inputs, f16, bf16 or
// f32 output, B "row.col" ([N,K], the form FP8 tensor-core kernels read) or row-major for the
// per-tensor case. Slow and plain on purpose: the model of what the scales mean.
// croq-kernel: {"dtypes": {"blockscaled": ["e4m3f16", "e4m3bf16"], "matmul": ["e4m3f16", "e4m3bf16"]}, "rank": 10, "tensor_cores": false, "summary": "FP8 reference: scales per block or per tensor applied in f32"}
#include <croq/kernel_abi.h>
#include <croq/host_scalar.h>

#include <cstdint>
#include <cstring>

using croq_host::load;
using croq_host::store;

extern "C" {

CROQ_EXPORT croq_status croq_gemm(const croq_gemm_desc* d, const croq_gemm_operands* o, void* /*stream*/) {
  if (d == nullptr || o == nullptr || d->abi_version != CROQ_GEMM_ABI_VERSION) return CROQ_INVALID_ARGUMENT;
  if (d->a_type != CROQ_E4M3 || d->b_type != CROQ_E4M3 || d->compute_type != CROQ_F32) return CROQ_UNSUPPORTED;
  const bool block = d->op == CROQ_OP_MATMUL_BLOCKSCALED && d->scale_mode == CROQ_SCALE_BLOCK;
  const bool tensor = d->op == CROQ_OP_MATMUL && d->scale_mode == CROQ_SCALE_TENSOR;
  if (!block && !tensor) return CROQ_UNSUPPORTED;
  if (o->a_scale == nullptr || o->b_scale == nullptr) return CROQ_INVALID_ARGUMENT;
  const bool b_col = d->b_layout == CROQ_COL_MAJOR;
  if (block && (!b_col || d->scale_block_k <= 0 || d->scale_block_n <= 0 || d->scale_block_m != 1))
    return CROQ_UNSUPPORTED;
  const int64_t bk = block ? d->scale_block_k : 1, bn = block ? d->scale_block_n : 1;
  const int64_t kb = block ? (d->k + bk - 1) / bk : 1;
  for (int64_t i = 0; i < d->m; ++i) {
    for (int64_t j = 0; j < d->n; ++j) {
      float acc = 0.f;
      for (int64_t q = 0; q < d->k; ++q) {
        float av = load(o->a, d->a_type, i * d->lda + q);
        float bv = load(o->b, d->b_type, b_col ? j * d->ldb + q : q * d->ldb + j);
        if (block) {
          av *= o->a_scale[(q / bk) * d->m + i];  // A's scales: [ceil(K/bk), M]
          bv *= o->b_scale[(j / bn) * kb + q / bk];
        }
        acc += av * bv;
      }
      if (tensor) acc *= o->a_scale[0] * o->b_scale[0];
      store(o->c, d->c_type, i * d->ldc + j, acc);
    }
  }
  return CROQ_OK;
}

CROQ_EXPORT const char* croq_kernel_info(void) {
  return "{\"name\": \"fp8 scaled reference\", \"dsl\": \"cpp\", \"params\": {}}";
}

}  // extern "C"
