// The cpp_tiled kernel family: a cache-blocked f32 GEMM for the CPU backend (croq's kernel ABI
// on host pointers). croq's search picks a configuration by prepending #defines:
//   CROQ_BM, CROQ_BN, CROQ_BK  cache block sizes (rows of A, columns of B, depth)
//   CROQ_MR, CROQ_NR           register tile: MR rows x NR columns of C kept in registers
//   CROQ_PACK_B                1: copy each BK x BN panel of B into a contiguous buffer first
//   CROQ_VEC                   SIMD width in floats of the register tile's vectors (4, 8, 16)
//   CROQ_UNROLL                unroll factor of the depth loop inside the register tile
//   CROQ_THREADS               worker threads over row blocks
// C[M,N] = A[M,K] * B with B row-major (K x N) or stored N x K ("col"). Any M, N, K.
// croq-kernel: {"dtypes": ["f32"], "rank": 15, "tensor_cores": false, "summary": "the cpp_tiled family's template at its default: cache blocks, register tile, packed B panels, threads"}
#include <croq/kernel_abi.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#ifndef CROQ_BM
#define CROQ_BM 64
#endif
#ifndef CROQ_BN
#define CROQ_BN 256
#endif
#ifndef CROQ_BK
#define CROQ_BK 128
#endif
#ifndef CROQ_MR
#define CROQ_MR 4
#endif
#ifndef CROQ_NR
#define CROQ_NR 16
#endif
#ifndef CROQ_PACK_B
#define CROQ_PACK_B 1
#endif
#ifndef CROQ_UNROLL
#define CROQ_UNROLL 1
#endif
#ifndef CROQ_VEC
#define CROQ_VEC 8
#endif
#ifndef CROQ_THREADS
#define CROQ_THREADS 1
#endif

#define CROQ_PRAGMA(x) _Pragma(#x)
#define CROQ_UNROLL_LOOP(n) CROQ_PRAGMA(GCC unroll n)

namespace {

constexpr int BM = CROQ_BM, BN = CROQ_BN, BK = CROQ_BK, MR = CROQ_MR, NR = CROQ_NR;
constexpr int VEC = CROQ_VEC;
static_assert(BM % MR == 0 && BN % NR == 0, "block sizes must be multiples of the register tile");
static_assert(NR % VEC == 0, "the register tile's width must be a multiple of the vector width");
typedef float vfloat __attribute__((vector_size(VEC * sizeof(float))));

inline vfloat load_v(const float* p) {
  vfloat v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}
inline void store_v(float* p, vfloat v) { __builtin_memcpy(p, &v, sizeof v); }

// One MR x NR tile of C += A[rows, k0:k1] * Bp[k0:k1, cols], Bp a panel with row stride ldb.
inline void micro_tile(int mr, int nr, int kc, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                       int64_t ldc) {
  if (mr == MR && nr == NR) {
    vfloat acc[MR][NR / VEC] = {};
    CROQ_UNROLL_LOOP(CROQ_UNROLL)
    for (int p = 0; p < kc; ++p) {
      const float* brow = b + p * ldb;
      vfloat bv[NR / VEC];
      for (int v = 0; v < NR / VEC; ++v) bv[v] = load_v(brow + v * VEC);
      for (int i = 0; i < MR; ++i) {
        const float av = a[i * lda + p];
        for (int v = 0; v < NR / VEC; ++v) acc[i][v] += av * bv[v];
      }
    }
    for (int i = 0; i < MR; ++i) {
      for (int v = 0; v < NR / VEC; ++v) store_v(c + i * ldc + v * VEC, load_v(c + i * ldc + v * VEC) + acc[i][v]);
    }
    return;
  }
  // Edge tile.
  float acc[MR][NR] = {};
  for (int p = 0; p < kc; ++p) {
    const float* brow = b + p * ldb;
    for (int i = 0; i < mr; ++i) {
      const float av = a[i * lda + p];
      for (int j = 0; j < nr; ++j) acc[i][j] += av * brow[j];
    }
  }
  for (int i = 0; i < mr; ++i) {
    for (int j = 0; j < nr; ++j) c[i * ldc + j] += acc[i][j];
  }
}

void rows(const croq_matmul_problem* p, const float* A, const float* B, float* C, int64_t row_begin, int64_t row_end) {
  const int64_t n = p->n, k = p->k;
  const bool b_col = p->b_layout == CROQ_COL_MAJOR;
  std::vector<float> panel(static_cast<size_t>(BK) * BN);
  for (int64_t j0 = 0; j0 < n; j0 += BN) {
    const int nb = static_cast<int>(std::min<int64_t>(BN, n - j0));
    for (int64_t p0 = 0; p0 < k; p0 += BK) {
      const int kb = static_cast<int>(std::min<int64_t>(BK, k - p0));
      const float* bp;
      int64_t ldb;
      if (CROQ_PACK_B || b_col) {
        for (int pp = 0; pp < kb; ++pp) {
          float* dst = panel.data() + static_cast<size_t>(pp) * BN;
          if (b_col) {
            for (int jj = 0; jj < nb; ++jj) dst[jj] = B[(j0 + jj) * k + p0 + pp];
          } else {
            std::memcpy(dst, B + (p0 + pp) * n + j0, sizeof(float) * static_cast<size_t>(nb));
          }
        }
        bp = panel.data();
        ldb = BN;
      } else {
        bp = B + p0 * n + j0;
        ldb = n;
      }
      for (int64_t i0 = row_begin; i0 < row_end; i0 += BM) {
        const int mb = static_cast<int>(std::min<int64_t>(BM, row_end - i0));
        for (int i = 0; i < mb; i += MR) {
          for (int j = 0; j < nb; j += NR) {
            micro_tile(std::min(MR, mb - i), std::min(NR, nb - j), kb, A + (i0 + i) * k + p0, k, bp + j, ldb,
                       C + (i0 + i) * n + j0 + j, n);
          }
        }
      }
    }
  }
}

}  // namespace

CROQ_EXPORT croq_status croq_matmul(const croq_matmul_problem* p, const void* a, const void* b, void* c, void*, size_t,
                                    void*) {
  if (!p || p->a_type != CROQ_F32 || p->c_type != CROQ_F32) return CROQ_UNSUPPORTED;
  if (p->m <= 0 || p->n <= 0 || p->k <= 0) return CROQ_INVALID_ARGUMENT;
  const float* A = static_cast<const float*>(a);
  const float* B = static_cast<const float*>(b);
  float* C = static_cast<float*>(c);
  std::fill(C, C + p->m * p->n, 0.0f);
  const int threads = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(CROQ_THREADS, (p->m + BM - 1) / BM)));
  if (threads == 1) {
    rows(p, A, B, C, 0, p->m);
    return CROQ_OK;
  }
  std::vector<std::thread> pool;
  const int64_t blocks = (p->m + BM - 1) / BM;
  for (int t = 0; t < threads; ++t) {
    int64_t b0 = blocks * t / threads, b1 = blocks * (t + 1) / threads;
    int64_t r0 = b0 * BM, r1 = std::min<int64_t>(p->m, b1 * BM);
    if (r0 < r1) pool.emplace_back([=] { rows(p, A, B, C, r0, r1); });  // a lambda: no exported std::thread state
  }
  for (auto& th : pool) th.join();
  return CROQ_OK;
}

CROQ_EXPORT const char* croq_kernel_info(void) {
  static char info[256];
  std::snprintf(info, sizeof info,
                "{\"name\":\"cpp_tiled\",\"params\":{\"BM\":%d,\"BN\":%d,\"BK\":%d,\"MR\":%d,\"NR\":%d,\"PACK_B\":%d,"
                "\"VEC\":%d,\"UNROLL\":%d,\"THREADS\":%d}}",
                CROQ_BM, CROQ_BN, CROQ_BK, CROQ_MR, CROQ_NR, CROQ_PACK_B, CROQ_VEC, CROQ_UNROLL, CROQ_THREADS);
  return info;
}
