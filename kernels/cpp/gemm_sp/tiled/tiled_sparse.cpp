// The cpp_sparse kernel family: a cache-blocked 2:4 sparse GEMM for the CPU backend (kernel ABI v2,
// CROQ_OP_MATMUL_SPARSE24, host pointers). croq's search picks a configuration by prepending
// #defines:
//   CROQ_PREPARE   1: croq_gemm_prepare compresses A once, off the clock, into f32 values and
//                  their column indexes ([M, K/2] each: only the kept half of A is ever read);
//                  0: every launch decodes the metadata and reads A's kept elements in place
//   CROQ_BM, CROQ_BN  cache block: rows of A, columns of B (the K x BN panel of B is reused by BM rows)
//   CROQ_MR, CROQ_NR  register tile: MR rows x NR columns of C accumulated over all of K in registers
//   CROQ_VEC       SIMD width in floats of the register tile's vectors (4, 8, 16)
//   CROQ_UNROLL    unrolling of the loop over A's kept elements
//   CROQ_THREADS   worker threads over row blocks
// Inputs f32, f16, bf16 or e4m3 (B is converted to f32 row-major in the workspace at each launch
// unless it already is), output f32, f16 or bf16, both B layouts, any M and N, K a multiple of 8.
// croq-kernel: {"dtypes": ["f32", "f16f32", "f16", "bf16f32", "bf16", "e4m3f16", "e4m3bf16"], "rank": 20, "tensor_cores": false, "summary": "the cpp_sparse family's template at its default: A compressed once by croq_gemm_prepare, cache blocks, register tile"}
#include <croq/kernel_abi.h>
#include <croq/host_scalar.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#ifndef CROQ_PREPARE
#define CROQ_PREPARE 1
#endif
#ifndef CROQ_BM
#define CROQ_BM 32
#endif
#ifndef CROQ_BN
#define CROQ_BN 128
#endif
#ifndef CROQ_MR
#define CROQ_MR 2
#endif
#ifndef CROQ_NR
#define CROQ_NR 16
#endif
#ifndef CROQ_VEC
#define CROQ_VEC 8
#endif
#ifndef CROQ_UNROLL
#define CROQ_UNROLL 1
#endif
#ifndef CROQ_THREADS
#define CROQ_THREADS 1
#endif

#define CROQ_PRAGMA(x) _Pragma(#x)
#define CROQ_UNROLL_LOOP(n) CROQ_PRAGMA(GCC unroll n)

namespace {

using croq_host::load;
using croq_host::store;

constexpr int BM = CROQ_BM, BN = CROQ_BN, MR = CROQ_MR, NR = CROQ_NR, VEC = CROQ_VEC;
static_assert(BM % MR == 0 && BN % NR == 0, "block sizes must be multiples of the register tile");
static_assert(NR % VEC == 0, "the register tile's width must be a multiple of the vector width");
typedef float vfloat __attribute__((vector_size(VEC * sizeof(float))));

inline vfloat load_v(const float* p) {
  vfloat v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}
inline void store_v(float* p, vfloat v) { __builtin_memcpy(p, &v, sizeof v); }

bool b_in_place(const croq_gemm_desc* d) { return d->b_type == CROQ_F32 && d->b_layout == CROQ_ROW_MAJOR; }

// Kept element e (0 .. K/2) of row i: its value and its column.
struct Kept {
  const croq_gemm_desc* d;
  const croq_gemm_operands* o;
  inline void get(int64_t i, int64_t e, float& v, int64_t& col) const {
    const int64_t k2 = d->k / 2;
#if CROQ_PREPARE
    const float* vals = static_cast<const float*>(o->a_prepared);
    const uint32_t* cols = reinterpret_cast<const uint32_t*>(vals + d->m * k2);
    v = vals[i * k2 + e];
    col = cols[i * k2 + e];
#else
    const int64_t g = e / 2;
    const unsigned nibble = (o->a_meta[i * (d->k / 8) + g / 2] >> (4 * (g % 2))) & 0xFu;
    col = 4 * g + ((e % 2) ? (nibble >> 2) : (nibble & 3u));
    v = load(o->a, d->a_type, i * d->lda + col);
#endif
    (void)k2;
  }
};

void rows(const croq_gemm_desc* d, const croq_gemm_operands* o, const float* B, int64_t row_begin, int64_t row_end) {
  const int64_t n = d->n, k2 = d->k / 2;
  const Kept kept{d, o};
  for (int64_t j0 = 0; j0 < n; j0 += BN) {
    const int64_t nb = std::min<int64_t>(BN, n - j0);
    for (int64_t i0 = row_begin; i0 < row_end; i0 += BM) {
      const int64_t mb = std::min<int64_t>(BM, row_end - i0);
      for (int64_t i = i0; i < i0 + mb; i += MR) {
        const int mr = static_cast<int>(std::min<int64_t>(MR, i0 + mb - i));
        for (int64_t j = j0; j < j0 + nb; j += NR) {
          const int64_t nr = std::min<int64_t>(NR, j0 + nb - j);
          if (mr == MR && nr == NR) {
            vfloat acc[MR][NR / VEC] = {};
            CROQ_UNROLL_LOOP(CROQ_UNROLL)
            for (int64_t e = 0; e < k2; ++e) {
              for (int r = 0; r < MR; ++r) {
                float av;
                int64_t col;
                kept.get(i + r, e, av, col);
                const float* brow = B + col * n + j;
                for (int v = 0; v < NR / VEC; ++v) acc[r][v] += av * load_v(brow + v * VEC);
              }
            }
            for (int r = 0; r < MR; ++r) {
              float out[NR];
              for (int v = 0; v < NR / VEC; ++v) store_v(out + v * VEC, acc[r][v]);
              for (int c = 0; c < NR; ++c) store(o->c, d->c_type, (i + r) * d->ldc + j + c, out[c]);
            }
          } else {
            for (int r = 0; r < mr; ++r) {
              for (int64_t c = 0; c < nr; ++c) {
                float acc = 0.f;
                for (int64_t e = 0; e < k2; ++e) {
                  float av;
                  int64_t col;
                  kept.get(i + r, e, av, col);
                  acc += av * B[col * n + j + c];
                }
                store(o->c, d->c_type, (i + r) * d->ldc + j + c, acc);
              }
            }
          }
        }
      }
    }
  }
}

bool supported(const croq_gemm_desc* d) {
  return d && d->abi_version == CROQ_GEMM_ABI_VERSION && d->op == CROQ_OP_MATMUL_SPARSE24 &&
         d->scale_mode == CROQ_SCALE_NONE && d->compute_type == CROQ_F32 && d->c_type != CROQ_E4M3 && d->k % 8 == 0 &&
         d->m > 0 && d->n > 0 && d->k > 0;
}

}  // namespace

extern "C" {

CROQ_EXPORT size_t croq_gemm_workspace_bytes(const croq_gemm_desc* d) {
  return supported(d) && !b_in_place(d) ? static_cast<size_t>(d->k * d->n) * sizeof(float) : 0;
}

CROQ_EXPORT size_t croq_gemm_prepared_bytes(const croq_gemm_desc* d) {
  return CROQ_PREPARE && supported(d) ? static_cast<size_t>(d->m * (d->k / 2)) * (sizeof(float) + sizeof(uint32_t)) : 0;
}

CROQ_EXPORT croq_status croq_gemm_prepare(const croq_gemm_desc* d, const croq_gemm_operands* o, void* a_prepared,
                                          size_t bytes, void* /*stream*/) {
  if (!supported(d) || o == nullptr || o->a_meta == nullptr) return CROQ_UNSUPPORTED;
  if (!CROQ_PREPARE) return CROQ_OK;
  const int64_t k2 = d->k / 2;
  if (bytes < static_cast<size_t>(d->m * k2) * (sizeof(float) + sizeof(uint32_t))) return CROQ_INVALID_ARGUMENT;
  float* vals = static_cast<float*>(a_prepared);
  uint32_t* cols = reinterpret_cast<uint32_t*>(vals + d->m * k2);
  for (int64_t i = 0; i < d->m; ++i) {
    for (int64_t g = 0; g < d->k / 4; ++g) {
      const unsigned nibble = (o->a_meta[i * (d->k / 8) + g / 2] >> (4 * (g % 2))) & 0xFu;
      const int64_t c0 = 4 * g + (nibble & 3u), c1 = 4 * g + (nibble >> 2);
      vals[i * k2 + 2 * g] = load(o->a, d->a_type, i * d->lda + c0);
      vals[i * k2 + 2 * g + 1] = load(o->a, d->a_type, i * d->lda + c1);
      cols[i * k2 + 2 * g] = static_cast<uint32_t>(c0);
      cols[i * k2 + 2 * g + 1] = static_cast<uint32_t>(c1);
    }
  }
  return CROQ_OK;
}

CROQ_EXPORT croq_status croq_gemm(const croq_gemm_desc* d, const croq_gemm_operands* o, void* /*stream*/) {
  if (!supported(d) || o == nullptr || o->a_meta == nullptr) return CROQ_UNSUPPORTED;
  if (CROQ_PREPARE && o->a_prepared == nullptr) return CROQ_INVALID_ARGUMENT;
  const float* B = static_cast<const float*>(o->b);
  if (!b_in_place(d)) {
    // B as f32 row-major K x N in the workspace (part of the timed work).
    if (o->workspace == nullptr || o->workspace_bytes < static_cast<size_t>(d->k * d->n) * sizeof(float))
      return CROQ_INVALID_ARGUMENT;
    float* w = static_cast<float*>(o->workspace);
    const bool col = d->b_layout == CROQ_COL_MAJOR;
    for (int64_t q = 0; q < d->k; ++q) {
      for (int64_t j = 0; j < d->n; ++j) w[q * d->n + j] = load(o->b, d->b_type, col ? j * d->ldb + q : q * d->ldb + j);
    }
    B = w;
  }
  const int64_t blocks = (d->m + BM - 1) / BM;
  const int threads = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(CROQ_THREADS, blocks)));
  if (threads == 1) {
    rows(d, o, B, 0, d->m);
    return CROQ_OK;
  }
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    const int64_t b0 = blocks * t / threads, b1 = blocks * (t + 1) / threads;
    const int64_t r0 = b0 * BM, r1 = std::min<int64_t>(d->m, b1 * BM);
    if (r0 < r1) pool.emplace_back([=] { rows(d, o, B, r0, r1); });  // a lambda: no exported std::thread state
  }
  for (auto& th : pool) th.join();
  return CROQ_OK;
}

CROQ_EXPORT const char* croq_kernel_info(void) {
  static char info[256];
  std::snprintf(info, sizeof info,
                "{\"name\":\"cpp_sparse\",\"params\":{\"PREPARE\":%d,\"BM\":%d,\"BN\":%d,\"MR\":%d,\"NR\":%d,"
                "\"VEC\":%d,\"UNROLL\":%d,\"THREADS\":%d}}",
                CROQ_PREPARE, CROQ_BM, CROQ_BN, CROQ_MR, CROQ_NR, CROQ_VEC, CROQ_UNROLL, CROQ_THREADS);
  return info;
}

}  // extern "C"
