// The cpp_fp8 kernel family: FP8 (e4m3) GEMM with scales for the CPU backend (kernel ABI v2, host
// pointers): the block-scaled operator (CROQ_OP_MATMUL_BLOCKSCALED, f32 scales per 1 x bk of A
// and bn x bk of B) and dense matmul with per-tensor scales (CROQ_SCALE_TENSOR). Each launch
// decodes A and B into f32 in the workspace, multiplying every element by its block's scales (the
// per-tensor scales are applied to the f32 sums instead), then computes cache-blocked dot products
// along K with several partial sums. croq's search picks a configuration by prepending #defines:
//   CROQ_BM, CROQ_BN  cache block: rows of A, columns of C (the BN rows of decoded B are reused by BM rows)
//   CROQ_LANES     partial sums per dot product (1: a plain loop; 4, 8, 16: vectorisable)
//   CROQ_DECODE    e4m3 to f32 by a 256-entry table (1) or by arithmetic on the bits (0)
//   CROQ_THREADS   worker threads over row blocks
// e4m3 inputs, f16, bf16 or f32 output, B [N,K] ("row.col") or, per tensor, [K,N]; any M, N, K.
// croq-kernel: {"dtypes": {"blockscaled": ["e4m3f16", "e4m3bf16"], "matmul": ["e4m3f16", "e4m3bf16"]}, "rank": 20, "tensor_cores": false, "summary": "the cpp_fp8 family's template at its default: e4m3 decoded with the scales into f32, cache-blocked dot products"}
#include <croq/kernel_abi.h>
#include <croq/host_scalar.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#ifndef CROQ_BM
#define CROQ_BM 16
#endif
#ifndef CROQ_BN
#define CROQ_BN 32
#endif
#ifndef CROQ_LANES
#define CROQ_LANES 1
#endif
#ifndef CROQ_DECODE
#define CROQ_DECODE 0
#endif
#ifndef CROQ_THREADS
#define CROQ_THREADS 1
#endif

#define CROQ_STR2(x) #x
#define CROQ_STR(x) CROQ_STR2(x)

namespace {

using croq_host::e4m3_to_f32;
using croq_host::store;

constexpr int BM = CROQ_BM, BN = CROQ_BN, LANES = CROQ_LANES;
static_assert(LANES >= 1 && LANES <= 16, "LANES is 1..16");

struct Table {
  float v[256];
  Table() {
    for (int i = 0; i < 256; ++i) v[i] = e4m3_to_f32(static_cast<uint8_t>(i));
  }
};

inline float decode(uint8_t x) {
#if CROQ_DECODE
  static const Table table;
  return table.v[x];
#else
  return e4m3_to_f32(x);
#endif
}

inline float dot(const float* a, const float* b, int64_t k) {
  float part[LANES] = {};
  int64_t q = 0;
  for (; q + LANES <= k; q += LANES) {
    for (int l = 0; l < LANES; ++l) part[l] += a[q + l] * b[q + l];
  }
  float acc = 0.f;
  for (int l = 0; l < LANES; ++l) acc += part[l];
  for (; q < k; ++q) acc += a[q] * b[q];
  return acc;
}

}  // namespace

extern "C" {

CROQ_EXPORT size_t croq_gemm_workspace_bytes(const croq_gemm_desc* d) {
  if (d == nullptr) return 0;
  return static_cast<size_t>((d->m + d->n) * d->k) * sizeof(float);
}

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
  if (o->workspace == nullptr || o->workspace_bytes < croq_gemm_workspace_bytes(d)) return CROQ_INVALID_ARGUMENT;
  const int64_t m = d->m, n = d->n, k = d->k;
  const int64_t bk = block ? d->scale_block_k : 1, bn = block ? d->scale_block_n : 1;
  const int64_t kb = block ? (k + bk - 1) / bk : 1;
  float* a32 = static_cast<float*>(o->workspace);  // [M,K]
  float* b32 = a32 + m * k;                        // [N,K]
  const uint8_t* a8 = static_cast<const uint8_t*>(o->a);
  const uint8_t* b8 = static_cast<const uint8_t*>(o->b);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t q = 0; q < k; ++q) {
      const float v = decode(a8[i * d->lda + q]);
      a32[i * k + q] = block ? v * o->a_scale[(q / bk) * m + i] : v;  // A's scales: [ceil(K/bk), M]
    }
  for (int64_t j = 0; j < n; ++j)
    for (int64_t q = 0; q < k; ++q) {
      const float v = decode(b8[b_col ? j * d->ldb + q : q * d->ldb + j]);
      b32[j * k + q] = block ? v * o->b_scale[(j / bn) * kb + q / bk] : v;
    }
  const float post = tensor ? o->a_scale[0] * o->b_scale[0] : 1.0f;
  const int64_t row_blocks = (m + BM - 1) / BM;
  auto work = [&](int t, int threads) {
    for (int64_t rb = t; rb < row_blocks; rb += threads) {
      const int64_t i0 = rb * BM, i1 = std::min<int64_t>(m, i0 + BM);
      for (int64_t j0 = 0; j0 < n; j0 += BN) {
        const int64_t j1 = std::min<int64_t>(n, j0 + BN);
        for (int64_t i = i0; i < i1; ++i)
          for (int64_t j = j0; j < j1; ++j) {
            float acc = dot(a32 + i * k, b32 + j * k, k);
            if (tensor) acc *= post;
            store(o->c, d->c_type, i * d->ldc + j, acc);
          }
      }
    }
  };
  const int threads = static_cast<int>(std::min<int64_t>(CROQ_THREADS, std::max<int64_t>(row_blocks, 1)));
  if (threads <= 1) {
    work(0, 1);
  } else {
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t) pool.emplace_back(work, t, threads);
    work(0, threads);
    for (auto& th : pool) th.join();
  }
  return CROQ_OK;
}

CROQ_EXPORT const char* croq_kernel_info(void) {
  return "{\"name\": \"cpp_fp8\", \"dsl\": \"cpp\", \"params\": {\"BM\": " CROQ_STR(CROQ_BM)
         ", \"BN\": " CROQ_STR(CROQ_BN) ", \"LANES\": " CROQ_STR(CROQ_LANES) ", \"DECODE\": " CROQ_STR(CROQ_DECODE)
         ", \"THREADS\": " CROQ_STR(CROQ_THREADS) "}}";
}

}  // extern "C"
