// croq-kernel: {"dtypes": ["f16f32", "bf16f32", "f16", "bf16"], "rank": 5, "tensor_cores": true, "summary": "the ampere_gemm family's sm_80 template at its default (mma.sync, ldmatrix, cp.async ring); croq tune searches its configurations"}
/*
 * croq's Ampere-style GEMM template (sm_80 and later: A100, RTX 30/40, and correct on Hopper):
 * C[M,N] = A[M,K] * B through croq's matmul ABI (include/croq/kernel_abi.h), for f16->f32,
 * bf16->f32, f16->f16 and bf16->bf16, A row-major, B row-major (K x N) or "col" (stored N x K
 * row-major), C row-major, any M, N, K.
 *
 * Techniques: mma.sync m16n8k16 tensor-core instructions fed by ldmatrix (ldmatrix.trans for a
 * row-major B) from XOR-swizzled shared memory (conflict-free for both the cp.async writes and the
 * ldmatrix reads), a multi-stage cp.async pipeline (zero-filling the M, N and K edges through the
 * instruction's source size), grouped tile rasterization for L2 reuse, predicated stores.
 *
 * Configuration macros (the ampere_gemm kernel family writes them; docs/gemm.md):
 *   CROQ_BM, CROQ_BN, CROQ_BK     CTA tile (BK 32 or 64)
 *   CROQ_WARPS_M, CROQ_WARPS_N    warp grid; each warp owns (BM/WARPS_M) x (BN/WARPS_N) of C
 *   CROQ_STAGES                   cp.async pipeline depth (2..6)
 *   CROQ_RASTER, CROQ_GROUP       0 row by row, 1 bands of GROUP tile-rows, 2 bands of tile-columns
 *   CROQ_DTYPES, CROQ_BLAYOUTS    instantiations to compile (bit masks as in the Hopper template)
 *
 * cp.async needs 16-byte aligned rows: when a leading dimension or a pointer is not, the operand is
 * copied into the workspace with padded rows first (and C is written there and copied out).
 */
#include <croq/kernel_abi.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include <type_traits>

#ifndef CROQ_BM
#define CROQ_BM 128
#endif
#ifndef CROQ_BN
#define CROQ_BN 128
#endif
#ifndef CROQ_BK
#define CROQ_BK 32
#endif
#ifndef CROQ_WARPS_M
#define CROQ_WARPS_M 2
#endif
#ifndef CROQ_WARPS_N
#define CROQ_WARPS_N 2
#endif
#ifndef CROQ_STAGES
#define CROQ_STAGES 4
#endif
#ifndef CROQ_RASTER
#define CROQ_RASTER 1
#endif
#ifndef CROQ_GROUP
#define CROQ_GROUP 8
#endif
#ifndef CROQ_DTYPES
#define CROQ_DTYPES 15
#endif
#ifndef CROQ_BLAYOUTS
#define CROQ_BLAYOUTS 3
#endif

#define CROQ_STR_(x) #x
#define CROQ_STR(x) CROQ_STR_(x)

// Everything but the ABI entry points has internal linkage (the unnamed namespace): two kernels of
// this template with different configurations, loaded into one process or linked into one library
// (croq export), never share a function or a launch cache.
namespace croq_ampere {
namespace {

constexpr int BM = CROQ_BM, BN = CROQ_BN, BK = CROQ_BK;
constexpr int WARPS_M = CROQ_WARPS_M, WARPS_N = CROQ_WARPS_N;
constexpr int THREADS = WARPS_M * WARPS_N * 32;
constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N;  // warp tile
constexpr int MI = WM / 16, NI = WN / 8;             // mma tiles per warp
constexpr int STAGES = CROQ_STAGES;
constexpr int A_STAGE = BM * BK;  // elements
constexpr int B_STAGE = BN * BK;
constexpr int SMEM_BYTES = STAGES * (A_STAGE + B_STAGE) * 2;

static_assert(BK == 32 || BK == 64, "BK must be 32 or 64");
static_assert(BM % (16 * WARPS_M) == 0 && BN % (16 * WARPS_N) == 0, "warp tiles must be multiples of 16x16");
static_assert(MI * NI * 4 <= 128, "accumulators exceed 128 registers per thread");
static_assert(THREADS >= 64 && THREADS <= 512, "2 to 16 warps");
static_assert(BN % 64 == 0, "BN must be a multiple of 64");
static_assert(STAGES >= 2 && STAGES <= 6, "CROQ_STAGES must be in [2, 6]");
static_assert(SMEM_BYTES <= 232448, "the configuration needs more than 227 KB of shared memory");

struct Params {
  int m, n, k;
  int tiles_m, tiles_n;
  long long lda, ldb, ldc;
};

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
// 16-byte asynchronous copy; bytes beyond src_bytes (0..16) are filled with zeros.
__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}
__device__ __forceinline__ void ldmatrix_x4(uint32_t addr, uint32_t& r0, uint32_t& r1, uint32_t& r2, uint32_t& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t addr, uint32_t& r0, uint32_t& r1, uint32_t& r2,
                                                  uint32_t& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}
template <bool BF16>
__device__ __forceinline__ void mma16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  if constexpr (BF16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// Element offset of 16-byte chunk `chunk` of row `row` in a tile whose rows hold CHUNKS chunks:
// the chunk index is XORed with bits of the row so that 8 consecutive rows at the same logical
// chunk fall into 8 different bank groups.
template <int CHUNKS>
__device__ __forceinline__ int swz(int row, int chunk) {
  if constexpr (CHUNKS >= 8) {
    return row * CHUNKS * 8 + ((chunk ^ (row & 7)) * 8);
  } else {
    static_assert(CHUNKS == 4, "rows of 4 or at least 8 chunks");
    return row * CHUNKS * 8 + ((chunk ^ ((row >> 1) & 3)) * 8);
  }
}

__device__ __forceinline__ void tile_coords(int t, const Params& p, int& tm, int& tn) {
#if CROQ_RASTER == 0
  tm = t / p.tiles_n;
  tn = t - tm * p.tiles_n;
#elif CROQ_RASTER == 1
  const int per_group = CROQ_GROUP * p.tiles_n;
  const int g = t / per_group;
  const int first = g * CROQ_GROUP;
  const int size = min(p.tiles_m - first, CROQ_GROUP);
  const int r = t - g * per_group;
  tm = first + r % size;
  tn = r / size;
#else
  const int per_group = CROQ_GROUP * p.tiles_m;
  const int g = t / per_group;
  const int first = g * CROQ_GROUP;
  const int size = min(p.tiles_n - first, CROQ_GROUP);
  const int r = t - g * per_group;
  tn = first + r % size;
  tm = r / size;
#endif
}

template <typename T>
__device__ __forceinline__ uint32_t pack2(float a, float b);
template <>
__device__ __forceinline__ uint32_t pack2<__half>(float a, float b) {
  __half2 h = __floats2half2_rn(a, b);
  return *reinterpret_cast<uint32_t*>(&h);
}
template <>
__device__ __forceinline__ uint32_t pack2<__nv_bfloat16>(float a, float b) {
  __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
  return *reinterpret_cast<uint32_t*>(&h);
}

template <typename TOut>
__device__ __forceinline__ void store_pair(TOut* c, long long ldc, int row, int col, int m, int n, float a, float b) {
  if (row >= m || col >= n) return;
  TOut* p = c + static_cast<long long>(row) * ldc + col;
  if constexpr (sizeof(TOut) == 4) {
    if (col + 1 < n) {
      *reinterpret_cast<float2*>(p) = make_float2(a, b);
    } else {
      *p = a;
    }
  } else {
    if (col + 1 < n) {
      *reinterpret_cast<uint32_t*>(p) = pack2<TOut>(a, b);
    } else {
      *p = static_cast<TOut>(a);
    }
  }
}

template <typename TIn, typename TOut, bool B_KMAJOR>
__global__ void __launch_bounds__(THREADS) gemm_kernel(const TIn* __restrict__ a, const TIn* __restrict__ b,
                                                       TOut* __restrict__ c, const Params p) {
  constexpr bool BF16 = std::is_same<TIn, __nv_bfloat16>::value;
  extern __shared__ __align__(128) uint8_t smem_raw[];
  TIn* sa = reinterpret_cast<TIn*>(smem_raw);
  TIn* sb = sa + STAGES * A_STAGE;
  const uint32_t sa_u = smem_u32(sa), sb_u = smem_u32(sb);

  int tm, tn;
  tile_coords(blockIdx.x, p, tm, tn);
  const int m0 = tm * BM, n0 = tn * BN;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int wm = warp / WARPS_N, wn = warp % WARPS_N;
  const int num_kt = (p.k + BK - 1) / BK;

  constexpr int A_CHUNKS = BK / 8;                  // 16-byte chunks per A row
  constexpr int B_ROW_CHUNKS = B_KMAJOR ? BK / 8 : BN / 8;
  constexpr int B_ROWS = B_KMAJOR ? BN : BK;

  auto load_tile = [&](int stage, int kt) {
    const int k0 = kt * BK;
    const uint32_t a_dst = sa_u + stage * A_STAGE * 2;
#pragma unroll
    for (int i = tid; i < BM * A_CHUNKS; i += THREADS) {
      const int r = i / A_CHUNKS, ch = i % A_CHUNKS;
      const int gr = m0 + r, gk = k0 + ch * 8;
      int bytes = 0;
      const TIn* src = a;
      if (gr < p.m && gk < p.k) {
        bytes = min(8, p.k - gk) * 2;
        src = a + static_cast<long long>(gr) * p.lda + gk;
      }
      cp_async16(a_dst + swz<A_CHUNKS>(r, ch) * 2, src, bytes);
    }
    const uint32_t b_dst = sb_u + stage * B_STAGE * 2;
#pragma unroll
    for (int i = tid; i < B_ROWS * B_ROW_CHUNKS; i += THREADS) {
      const int r = i / B_ROW_CHUNKS, ch = i % B_ROW_CHUNKS;
      int bytes = 0;
      const TIn* src = b;
      if constexpr (B_KMAJOR) {  // rows are n, chunks along k
        const int gn = n0 + r, gk = k0 + ch * 8;
        if (gn < p.n && gk < p.k) {
          bytes = min(8, p.k - gk) * 2;
          src = b + static_cast<long long>(gn) * p.ldb + gk;
        }
      } else {  // rows are k, chunks along n
        const int gk = k0 + r, gn = n0 + ch * 8;
        if (gk < p.k && gn < p.n) {
          bytes = min(8, p.n - gn) * 2;
          src = b + static_cast<long long>(gk) * p.ldb + gn;
        }
      }
      cp_async16(b_dst + swz<B_ROW_CHUNKS>(r, ch) * 2, src, bytes);
    }
  };

  float acc[MI][NI][4];
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int q = 0; q < 4; ++q) acc[i][j][q] = 0.f;

#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < num_kt) load_tile(s, s);
    cp_async_commit();
  }

  for (int kt = 0; kt < num_kt; ++kt) {
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    const int next = kt + STAGES - 1;
    if (next < num_kt) load_tile(next % STAGES, next);
    cp_async_commit();

    const int stage = kt % STAGES;
    const uint32_t a_s = sa_u + stage * A_STAGE * 2;
    const uint32_t b_s = sb_u + stage * B_STAGE * 2;
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk) {
      uint32_t af[MI][4];
      uint32_t bf[NI][2];
#pragma unroll
      for (int i = 0; i < MI; ++i) {
        const int r = wm * WM + i * 16 + (lane % 16);
        const int ch = kk * 2 + lane / 16;
        ldmatrix_x4(a_s + swz<A_CHUNKS>(r, ch) * 2, af[i][0], af[i][1], af[i][2], af[i][3]);
      }
#pragma unroll
      for (int j = 0; j < NI; j += 2) {
        const int q = lane / 8;
        if constexpr (B_KMAJOR) {
          const int r = wn * WN + j * 8 + (q / 2) * 8 + lane % 8;  // n
          const int ch = kk * 2 + (q % 2);                          // k chunk
          ldmatrix_x4(b_s + swz<B_ROW_CHUNKS>(r, ch) * 2, bf[j][0], bf[j][1], bf[j + 1][0], bf[j + 1][1]);
        } else {
          const int r = kk * 16 + (q % 2) * 8 + lane % 8;  // k
          const int ch = (wn * WN + j * 8) / 8 + q / 2;   // n chunk
          ldmatrix_x4_trans(b_s + swz<B_ROW_CHUNKS>(r, ch) * 2, bf[j][0], bf[j][1], bf[j + 1][0], bf[j + 1][1]);
        }
      }
#pragma unroll
      for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j) mma16816<BF16>(acc[i][j], af[i], bf[j][0], bf[j][1]);
    }
  }
  cp_async_wait<0>();

#pragma unroll
  for (int i = 0; i < MI; ++i) {
    const int row = m0 + wm * WM + i * 16 + lane / 4;
#pragma unroll
    for (int j = 0; j < NI; ++j) {
      const int col = n0 + wn * WN + j * 8 + (lane % 4) * 2;
      store_pair<TOut>(c, p.ldc, row, col, p.m, p.n, acc[i][j][0], acc[i][j][1]);
      store_pair<TOut>(c, p.ldc, row + 8, col, p.m, p.n, acc[i][j][2], acc[i][j][3]);
    }
  }
}

// Copies a rows x cols matrix of 2-byte units between row strides (in units).
__global__ void copy_rows(const uint16_t* __restrict__ src, long long src_ld, uint16_t* __restrict__ dst,
                          long long dst_ld, long long rows, long long cols) {
  const long long total = rows * cols;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long r = i / cols, c = i - r * cols;
    dst[r * dst_ld + c] = src[r * src_ld + c];
  }
}

inline bool launch_copy(const void* src, long long src_ld, void* dst, long long dst_ld, long long rows,
                        long long cols_units, cudaStream_t stream) {
  const long long total = rows * cols_units;
  if (total == 0) return true;
  long long blocks = (total + 255) / 256;
  if (blocks > 8192) blocks = 8192;
  copy_rows<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(static_cast<const uint16_t*>(src), src_ld,
                                                               static_cast<uint16_t*>(dst), dst_ld, rows, cols_units);
  return cudaGetLastError() == cudaSuccess;
}

inline size_t round_up(size_t x, size_t a) { return (x + a - 1) / a * a; }
inline bool aligned16(const void* p, long long ld_bytes) {
  return (reinterpret_cast<uintptr_t>(p) % 16) == 0 && (ld_bytes % 16) == 0;
}

template <typename TIn, typename TOut, bool B_KMAJOR>
croq_status run(const croq_matmul_problem* p, const void* a, const void* b, void* c, void* workspace,
                size_t workspace_bytes, cudaStream_t stream) {
  auto kernel = gemm_kernel<TIn, TOut, B_KMAJOR>;
  static int ready = 0;  // 0 unknown, 1 ok, -1 failed
  if (ready == 0) {
    ready = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES) == cudaSuccess
                ? 1
                : -1;
  }
  if (ready < 0) return CROQ_UNSUPPORTED;  // the device has less shared memory than the configuration needs
  const int out_bytes = static_cast<int>(sizeof(TOut));
  const long long b_rows = B_KMAJOR ? p->n : p->k;
  const long long b_cols = B_KMAJOR ? p->k : p->n;
  const bool pad_a = !aligned16(a, p->lda * 2);
  const bool pad_b = !aligned16(b, p->ldb * 2);
  const bool pad_c = !aligned16(c, p->ldc * out_bytes);
  size_t need = 0, off_a = 0, off_b = 0, off_c = 0;
  const long long lda_p = static_cast<long long>(round_up(p->k, 8));
  const long long ldb_p = static_cast<long long>(round_up(b_cols, 8));
  const long long ldc_p = static_cast<long long>(round_up(p->n, 8));
  if (pad_a) {
    off_a = need;
    need += round_up(static_cast<size_t>(p->m) * lda_p * 2, 256);
  }
  if (pad_b) {
    off_b = need;
    need += round_up(static_cast<size_t>(b_rows) * ldb_p * 2, 256);
  }
  if (pad_c) {
    off_c = need;
    need += round_up(static_cast<size_t>(p->m) * ldc_p * out_bytes, 256);
  }
  if (need > 0 && (workspace == nullptr || workspace_bytes < need)) return CROQ_UNSUPPORTED;
  uint8_t* ws = static_cast<uint8_t*>(workspace);

  Params prm;
  prm.m = static_cast<int>(p->m);
  prm.n = static_cast<int>(p->n);
  prm.k = static_cast<int>(p->k);
  prm.tiles_m = static_cast<int>((p->m + BM - 1) / BM);
  prm.tiles_n = static_cast<int>((p->n + BN - 1) / BN);
  prm.lda = p->lda;
  prm.ldb = p->ldb;
  prm.ldc = p->ldc;
  const void* a_use = a;
  const void* b_use = b;
  void* c_use = c;
  if (pad_a) {
    if (!launch_copy(a, p->lda, ws + off_a, lda_p, p->m, p->k, stream)) return CROQ_LAUNCH_FAILED;
    a_use = ws + off_a;
    prm.lda = lda_p;
  }
  if (pad_b) {
    if (!launch_copy(b, p->ldb, ws + off_b, ldb_p, b_rows, b_cols, stream)) return CROQ_LAUNCH_FAILED;
    b_use = ws + off_b;
    prm.ldb = ldb_p;
  }
  if (pad_c) {
    c_use = ws + off_c;
    prm.ldc = ldc_p;
  }
  const long long tiles = static_cast<long long>(prm.tiles_m) * prm.tiles_n;
  if (tiles > 0x7FFFFFFFLL) return CROQ_UNSUPPORTED;
  kernel<<<static_cast<unsigned>(tiles), THREADS, SMEM_BYTES, stream>>>(
      static_cast<const TIn*>(a_use), static_cast<const TIn*>(b_use), static_cast<TOut*>(c_use), prm);
  if (cudaGetLastError() != cudaSuccess) return CROQ_LAUNCH_FAILED;
  if (pad_c) {
    if (!launch_copy(c_use, ldc_p * out_bytes / 2, c, p->ldc * out_bytes / 2, p->m, p->n * out_bytes / 2, stream))
      return CROQ_LAUNCH_FAILED;
  }
  return CROQ_OK;
}

inline int dtype_bit(const croq_matmul_problem* p) {
  if (p->a_type != p->b_type) return 0;
  if (p->a_type == CROQ_F16 && p->c_type == CROQ_F32) return 1;
  if (p->a_type == CROQ_F16 && p->c_type == CROQ_F16) return 2;
  if (p->a_type == CROQ_BF16 && p->c_type == CROQ_F32) return 4;
  if (p->a_type == CROQ_BF16 && p->c_type == CROQ_BF16) return 8;
  return 0;
}

}  // namespace
}  // namespace croq_ampere

CROQ_EXPORT croq_status croq_matmul(const croq_matmul_problem* p, const void* a, const void* b, void* c,
                                    void* workspace, size_t workspace_bytes, void* stream_ptr) {
  using namespace croq_ampere;
  if (p == nullptr || p->abi_version != CROQ_ABI_VERSION) return CROQ_INVALID_ARGUMENT;
  if (p->m <= 0 || p->n <= 0 || p->k <= 0 || p->m > (1LL << 30) || p->n > (1LL << 30) || p->k > (1LL << 30))
    return CROQ_UNSUPPORTED;
  const long long b_cols = p->b_layout == CROQ_ROW_MAJOR ? p->n : p->k;
  if (p->lda < p->k || p->ldb < b_cols || p->ldc < p->n) return CROQ_INVALID_ARGUMENT;
  if (p->compute_type != CROQ_F32) return CROQ_UNSUPPORTED;
  const int dt = dtype_bit(p);
  const int lay = p->b_layout == CROQ_ROW_MAJOR ? 1 : p->b_layout == CROQ_COL_MAJOR ? 2 : 0;
  if (dt == 0 || lay == 0 || !(CROQ_DTYPES & dt) || !(CROQ_BLAYOUTS & lay)) return CROQ_UNSUPPORTED;
  cudaStream_t s = static_cast<cudaStream_t>(stream_ptr);
#define CROQ_CASE(BIT, TI, TO)                                                                                    \
  if (dt == BIT) {                                                                                                \
    if constexpr ((CROQ_DTYPES & BIT) != 0) {                                                                     \
      if (lay == 1) {                                                                                             \
        if constexpr ((CROQ_BLAYOUTS & 1) != 0) return run<TI, TO, false>(p, a, b, c, workspace, workspace_bytes, s); \
      } else {                                                                                                    \
        if constexpr ((CROQ_BLAYOUTS & 2) != 0) return run<TI, TO, true>(p, a, b, c, workspace, workspace_bytes, s);  \
      }                                                                                                           \
    }                                                                                                             \
  }
  CROQ_CASE(1, __half, float)
  CROQ_CASE(2, __half, __half)
  CROQ_CASE(4, __nv_bfloat16, float)
  CROQ_CASE(8, __nv_bfloat16, __nv_bfloat16)
#undef CROQ_CASE
  return CROQ_UNSUPPORTED;
}

CROQ_EXPORT size_t croq_matmul_workspace_bytes(const croq_matmul_problem* p) {
  // Padded copies are needed only for leading dimensions that are not 16-byte multiples (croq's
  // harness allocates with cudaMalloc, so its pointers are aligned).
  if (p == nullptr) return 0;
  using croq_ampere::round_up;
  const int out_bytes = p->c_type == CROQ_F32 ? 4 : 2;
  const long long b_rows = p->b_layout == CROQ_ROW_MAJOR ? p->k : p->n;
  const long long b_cols = p->b_layout == CROQ_ROW_MAJOR ? p->n : p->k;
  const bool a_ok = (p->lda * 2) % 16 == 0, b_ok = (p->ldb * 2) % 16 == 0, c_ok = (p->ldc * out_bytes) % 16 == 0;
  if (a_ok && b_ok && c_ok) return 0;
  return round_up(static_cast<size_t>(p->m) * round_up(p->k, 8) * 2, 256) +
         round_up(static_cast<size_t>(b_rows) * round_up(b_cols, 8) * 2, 256) +
         round_up(static_cast<size_t>(p->m) * round_up(p->n, 8) * out_bytes, 256);
}

CROQ_EXPORT const char* croq_kernel_info(void) {
  return "{\"name\":\"ampere_gemm\",\"params\":{\"BM\":" CROQ_STR(CROQ_BM) ",\"BN\":" CROQ_STR(
      CROQ_BN) ",\"BK\":" CROQ_STR(CROQ_BK) ",\"WARPS_M\":" CROQ_STR(CROQ_WARPS_M) ",\"WARPS_N\":" CROQ_STR(CROQ_WARPS_N) ",\"STAGES\":" CROQ_STR(CROQ_STAGES) ",\"RASTER\":" CROQ_STR(CROQ_RASTER) ",\"GROUP\":" CROQ_STR(CROQ_GROUP) ",\"DTYPES\":" CROQ_STR(CROQ_DTYPES) ",\"BLAYOUTS\":" CROQ_STR(CROQ_BLAYOUTS) "}}";
}
