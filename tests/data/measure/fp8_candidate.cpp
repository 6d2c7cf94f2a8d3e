// FP8 test candidates with scales for the cpp dsl (kernel ABI v2 on host pointers), one per
// CROQ_TEST_MODE; croq's harness must tell the correct ones from the broken ones, for dense e4m3
// matmul (per-tensor scales) and the block-scaled operator:
//   ok              applies the scales as the operator says                     -> PASS
//   ignore_scales   multiplies A and B, scales never read                        -> VERIFY_FAIL
//   a_scale_only    applies A's scales and not B's                               -> VERIFY_FAIL
//   per_tensor      block-scaled: applies a_scale[0] * b_scale[0] to the whole   -> VERIFY_FAIL
//                   product (per tensor instead of per block)
//   row_blocks      block-scaled: B's scales indexed per 128 x 128 block of K x N read as
//                   [K/128, N/128] (the transposed layout)                       -> VERIFY_FAIL
//   a_row_major     block-scaled: A's scales, [K/128, M], read as [M, K/128]     -> VERIFY_FAIL
//   prepare_offclock block-scaled: exports croq_gemm_prepare to scale A off the  -> UNSUPPORTED
//                   clock and refuses without it (croq offers prepare for the   (prepare not called)
//                   2:4 sparse operator only: A here is an activation)
//   first_seed      caches the scales of its first call by pointer              -> VERIFY_FAIL (second seed)
//   v1_only         exports only version 1's croq_matmul                         -> UNSUPPORTED
//   tc_accumulate   block-scaled: each 128-deep block summed as FP8 tensor cores  -> PASS
//                   do, the partial sum truncated to 13 mantissa bits after
//                   every 32 products, then scaled and added in f32 (within the
//                   rule's 2^-10 x sum|a b|, beyond its fixed absolute term)
// The CLI tests compile this file with the system C++ compiler.
#include <croq/kernel_abi.h>
#include <croq/host_scalar.h>

#include <cstdint>
#include <cstring>

#define MODE_ok 1
#define MODE_ignore_scales 2
#define MODE_a_scale_only 3
#define MODE_per_tensor 4
#define MODE_row_blocks 5
#define MODE_first_seed 6
#define MODE_v1_only 7
#define MODE_tc_accumulate 8
#define MODE_a_row_major 9
#define MODE_prepare_offclock 10
#define CAT(a, b) a##b
#define MODE_OF(m) CAT(MODE_, m)
#define MODE MODE_OF(CROQ_TEST_MODE)

using croq_host::load;
using croq_host::store;

extern "C" {

#if MODE == MODE_v1_only
CROQ_EXPORT croq_status croq_matmul(const croq_matmul_problem* p, const void*, const void*, void*, void*, size_t,
                                    void*) {
  return p->a_type == CROQ_E4M3 ? CROQ_OK : CROQ_UNSUPPORTED;
}
#else
CROQ_EXPORT croq_status croq_gemm(const croq_gemm_desc* d, const croq_gemm_operands* o, void* /*stream*/) {
  if (d->a_type != CROQ_E4M3) return CROQ_UNSUPPORTED;
  const bool block = d->scale_mode == CROQ_SCALE_BLOCK;
  const bool b_col = d->b_layout == CROQ_COL_MAJOR;
  if (block && !b_col) return CROQ_UNSUPPORTED;
  const int64_t bk = block ? d->scale_block_k : 1, bn = block ? d->scale_block_n : 1;
  const int64_t kb = block ? (d->k + bk - 1) / bk : 1, nb = block ? (d->n + bn - 1) / bn : 1;
  (void)nb;
  static float cached_a = 0.f, cached_b = 0.f;
  static bool cached = false;
  if (!cached) {
    cached_a = o->a_scale[0];
    cached_b = o->b_scale[0];
    cached = true;
  }
  (void)cached_a;
  (void)cached_b;
  (void)kb;
#if MODE == MODE_prepare_offclock
  if (block) {
    if (o->a_prepared == nullptr) return CROQ_UNSUPPORTED;
    const float* a32 = static_cast<const float*>(o->a_prepared);  // A times its scales, [M,K]
    for (int64_t i = 0; i < d->m; ++i)
      for (int64_t j = 0; j < d->n; ++j) {
        float acc = 0.f;
        for (int64_t q = 0; q < d->k; ++q)
          acc += a32[i * d->k + q] * load(o->b, d->b_type, j * d->ldb + q) * o->b_scale[(j / bn) * kb + q / bk];
        store(o->c, d->c_type, i * d->ldc + j, acc);
      }
    return CROQ_OK;
  }
#endif
#if MODE == MODE_tc_accumulate
  if (!block) return CROQ_UNSUPPORTED;
  auto truncate13 = [](float x) {
    uint32_t u;
    std::memcpy(&u, &x, 4);
    u &= ~((1u << 10) - 1u);  // 23 - 13 mantissa bits dropped, toward zero
    std::memcpy(&x, &u, 4);
    return x;
  };
  for (int64_t i = 0; i < d->m; ++i) {
    for (int64_t j = 0; j < d->n; ++j) {
      float acc = 0.f;
      for (int64_t q0 = 0; q0 < d->k; q0 += bk) {
        float part = 0.f;
        for (int64_t q = q0; q < d->k && q < q0 + bk; ++q) {
          part += load(o->a, d->a_type, i * d->lda + q) * load(o->b, d->b_type, j * d->ldb + q);
          if ((q - q0) % 32 == 31) part = truncate13(part);
        }
        acc += truncate13(part) * o->a_scale[(q0 / bk) * d->m + i] * o->b_scale[(j / bn) * kb + q0 / bk];
      }
      store(o->c, d->c_type, i * d->ldc + j, acc);
    }
  }
  return CROQ_OK;
#endif
  for (int64_t i = 0; i < d->m; ++i) {
    for (int64_t j = 0; j < d->n; ++j) {
      float acc = 0.f;
      for (int64_t q = 0; q < d->k; ++q) {
        float av = load(o->a, d->a_type, i * d->lda + q);
        float bv = load(o->b, d->b_type, b_col ? j * d->ldb + q : q * d->ldb + j);
#if MODE == MODE_ok || MODE == MODE_a_scale_only || MODE == MODE_first_seed || MODE == MODE_row_blocks || \
    MODE == MODE_a_row_major
        if (block) {
#if MODE == MODE_a_row_major
          av *= o->a_scale[i * kb + q / bk];
#else
          av *= o->a_scale[(q / bk) * d->m + i];
#endif
#if MODE == MODE_row_blocks
          bv *= o->b_scale[(q / bk) * nb + j / bn];
#elif MODE != MODE_a_scale_only
          bv *= o->b_scale[(j / bn) * kb + q / bk];
#endif
        }
#endif
        acc += av * bv;
      }
      if (!block) {
#if MODE == MODE_ok || MODE == MODE_row_blocks || MODE == MODE_a_row_major
        acc *= o->a_scale[0] * o->b_scale[0];
#elif MODE == MODE_a_scale_only
        acc *= o->a_scale[0];
#elif MODE == MODE_first_seed
        acc *= cached_a * cached_b;
#endif
      }
#if MODE == MODE_per_tensor
      acc *= o->a_scale[0] * o->b_scale[0];
#endif
      store(o->c, d->c_type, i * d->ldc + j, acc);
    }
  }
  return CROQ_OK;
}
#endif

#if MODE == MODE_prepare_offclock
CROQ_EXPORT size_t croq_gemm_prepared_bytes(const croq_gemm_desc* d) {
  return d->op == CROQ_OP_MATMUL_BLOCKSCALED ? static_cast<size_t>(d->m * d->k) * sizeof(float) : 0;
}
CROQ_EXPORT croq_status croq_gemm_prepare(const croq_gemm_desc* d, const croq_gemm_operands* o, void* dst,
                                          size_t bytes, void* /*stream*/) {
  if (bytes < croq_gemm_prepared_bytes(d)) return CROQ_INVALID_ARGUMENT;
  const int64_t bk = d->scale_block_k;
  float* a32 = static_cast<float*>(dst);
  for (int64_t i = 0; i < d->m; ++i)
    for (int64_t q = 0; q < d->k; ++q)
      a32[i * d->k + q] = load(o->a, d->a_type, i * d->lda + q) * o->a_scale[(q / bk) * d->m + i];
  return CROQ_OK;
}
#endif

}  // extern "C"
