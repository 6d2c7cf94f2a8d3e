// Tensor-core CUDA matmul with WMMA (16x16x16 fragments, f32 accumulation). A block of 8 warps
// computes a 128x128 tile of C; K is walked in slices of 32 staged through padded shared memory,
// with the next slice prefetched into registers (16-byte loads where the operand is aligned)
// while the current one is multiplied. Each warp owns a 64x32 sub-tile (4x2 accumulator
// fragments); results go through a small per-warp staging buffer so edges are bounds-checked and
// the output can be converted to f32 / f16 / bf16. Implements include/croq/kernel_abi.h for every
// M, N, K (edge tiles zero-filled), both B layouts, inputs f16 and bf16 (sm_80 or newer).
// croq-kernel: {"dtypes": ["f16f32", "f16", "bf16f32", "bf16"], "rank": 30, "tensor_cores": true, "summary": "WMMA 16x16x16 tensor cores, 128x128x32 block tile, register prefetch"}
#include <croq/kernel_abi.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#include <type_traits>

namespace {

using namespace nvcuda;

constexpr int k_bm = 128, k_bn = 128, k_bk = 32, k_warps = 8, k_threads = k_warps * 32;
constexpr int k_pad = 8;                   // halves; keeps rows 16-byte aligned and spreads banks
constexpr int k_lda = k_bk + k_pad;        // A tile: k_bm rows of k_bk
constexpr int k_ldb_row = k_bn + k_pad;    // B tile (row-major B): k_bk rows of k_bn
constexpr int k_ldb_col = k_bk + k_pad;    // B tile (column-major B): k_bn rows of k_bk
constexpr int k_a_elems = k_bm * k_lda;
constexpr int k_b_elems = (k_bk * k_ldb_row > k_bn * k_ldb_col) ? k_bk * k_ldb_row : k_bn * k_ldb_col;

template <typename T> __device__ __forceinline__ T from_f32(float v);
template <> __device__ __forceinline__ float from_f32<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_f32<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

// 8 consecutive 16-bit elements of one row, as raw bits.
struct Vec8 {
  uint4 bits;
};

// Loads elements [col, col+8) of row `row` of a row-major matrix (rows x cols, leading dim ld),
// zero outside. `vec_ok`: the whole operand is 16-byte aligned with ld a multiple of 8.
template <typename T>
__device__ __forceinline__ Vec8 load8(const T* base, int64_t rows, int64_t cols, int64_t ld, int64_t row, int64_t col,
                                      bool vec_ok) {
  Vec8 v;
  v.bits = make_uint4(0, 0, 0, 0);
  if (row >= rows) return v;
  if (vec_ok && col + 8 <= cols) {
    v.bits = *reinterpret_cast<const uint4*>(base + row * ld + col);
    return v;
  }
  unsigned short h[8];
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    h[e] = 0;
    if (col + e < cols) h[e] = reinterpret_cast<const unsigned short*>(base)[row * ld + col + e];
  }
  v.bits = make_uint4(h[0] | (unsigned(h[1]) << 16), h[2] | (unsigned(h[3]) << 16), h[4] | (unsigned(h[5]) << 16),
                      h[6] | (unsigned(h[7]) << 16));
  return v;
}

template <typename TIn, typename TOut, bool BColMajor>
__global__ void __launch_bounds__(k_threads)
wmma_matmul(const TIn* __restrict__ a, const TIn* __restrict__ b, TOut* __restrict__ c, int64_t m, int64_t n,
            int64_t k, int64_t lda, int64_t ldb, int64_t ldc, bool a_vec, bool b_vec) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  __shared__ __align__(128) unsigned char smem_raw[(k_a_elems + k_b_elems) * 2];
  TIn* as = reinterpret_cast<TIn*>(smem_raw);
  TIn* bs = as + k_a_elems;
  float* stage = reinterpret_cast<float*>(smem_raw);  // reused by the epilogue: 8 warps x 16x16 f32

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int wm = warp / 4, wn = warp % 4;  // 2 x 4 warps; each owns 64 rows x 32 columns
  const int64_t bm = int64_t(blockIdx.y) * k_bm, bn = int64_t(blockIdx.x) * k_bn;

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[4][2];
#pragma unroll
  for (int r = 0; r < 4; ++r)
#pragma unroll
    for (int s = 0; s < 2; ++s) wmma::fill_fragment(acc[r][s], 0.f);

  Vec8 ra[2], rb[2];
  auto fetch = [&](int64_t k0) {
#pragma unroll
    for (int q = 0; q < 2; ++q) {
      int v = tid + q * k_threads;
      int row = v / (k_bk / 8), cv = v % (k_bk / 8);
      ra[q] = load8(a, m, k, lda, bm + row, k0 + cv * 8, a_vec);
      if (BColMajor) {
        rb[q] = load8(b, n, k, ldb, bn + row, k0 + cv * 8, b_vec);
      } else {
        int brow = v / (k_bn / 8), bcv = v % (k_bn / 8);
        rb[q] = load8(b, k, n, ldb, k0 + brow, bn + bcv * 8, b_vec);
      }
    }
  };
  auto stash = [&]() {
#pragma unroll
    for (int q = 0; q < 2; ++q) {
      int v = tid + q * k_threads;
      int row = v / (k_bk / 8), cv = v % (k_bk / 8);
      *reinterpret_cast<uint4*>(as + row * k_lda + cv * 8) = ra[q].bits;
      if (BColMajor) {
        *reinterpret_cast<uint4*>(bs + row * k_ldb_col + cv * 8) = rb[q].bits;
      } else {
        int brow = v / (k_bn / 8), bcv = v % (k_bn / 8);
        *reinterpret_cast<uint4*>(bs + brow * k_ldb_row + bcv * 8) = rb[q].bits;
      }
    }
  };

  fetch(0);
  for (int64_t k0 = 0; k0 < k; k0 += k_bk) {
    stash();
    __syncthreads();
    if (k0 + k_bk < k) fetch(k0 + k_bk);  // overlaps the global loads with the MMAs below
#pragma unroll
    for (int kk = 0; kk < k_bk; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, TIn, wmma::row_major> fa[4];
      using BLayout = typename std::conditional<BColMajor, wmma::col_major, wmma::row_major>::type;
      wmma::fragment<wmma::matrix_b, 16, 16, 16, TIn, BLayout> fb[2];
#pragma unroll
      for (int r = 0; r < 4; ++r) wmma::load_matrix_sync(fa[r], as + (wm * 64 + r * 16) * k_lda + kk, k_lda);
#pragma unroll
      for (int s = 0; s < 2; ++s) {
        if (BColMajor) {
          wmma::load_matrix_sync(fb[s], bs + (wn * 32 + s * 16) * k_ldb_col + kk, k_ldb_col);
        } else {
          wmma::load_matrix_sync(fb[s], bs + kk * k_ldb_row + wn * 32 + s * 16, k_ldb_row);
        }
      }
#pragma unroll
      for (int r = 0; r < 4; ++r)
#pragma unroll
        for (int s = 0; s < 2; ++s) wmma::mma_sync(acc[r][s], fa[r], fb[s], acc[r][s]);
    }
    __syncthreads();
  }

  float* my_stage = stage + warp * 256;
#pragma unroll
  for (int r = 0; r < 4; ++r) {
#pragma unroll
    for (int s = 0; s < 2; ++s) {
      wmma::store_matrix_sync(my_stage, acc[r][s], 16, wmma::mem_row_major);
      __syncwarp();
      int row = lane / 2, col0 = (lane % 2) * 8;
      int64_t gi = bm + wm * 64 + r * 16 + row;
      if (gi < m) {
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          int64_t gj = bn + wn * 32 + s * 16 + col0 + e;
          if (gj < n) c[gi * ldc + gj] = from_f32<TOut>(my_stage[row * 16 + col0 + e]);
        }
      }
      __syncwarp();
    }
  }
#endif
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

template <typename TIn, typename TOut>
croq_status launch_typed(const croq_matmul_problem* p, const void* a, const void* b, void* c, cudaStream_t s) {
  dim3 grid(unsigned((p->n + k_bn - 1) / k_bn), unsigned((p->m + k_bm - 1) / k_bm));
  if (grid.y > 65535u) return CROQ_UNSUPPORTED;
  bool a_vec = aligned16(a) && p->lda % 8 == 0;
  bool b_vec = aligned16(b) && p->ldb % 8 == 0;
  if (p->b_layout == CROQ_COL_MAJOR) {
    wmma_matmul<TIn, TOut, true><<<grid, k_threads, 0, s>>>((const TIn*)a, (const TIn*)b, (TOut*)c, p->m, p->n, p->k,
                                                            p->lda, p->ldb, p->ldc, a_vec, b_vec);
  } else {
    wmma_matmul<TIn, TOut, false><<<grid, k_threads, 0, s>>>((const TIn*)a, (const TIn*)b, (TOut*)c, p->m, p->n,
                                                             p->k, p->lda, p->ldb, p->ldc, a_vec, b_vec);
  }
  return cudaGetLastError() == cudaSuccess ? CROQ_OK : CROQ_LAUNCH_FAILED;
}

template <typename TIn>
croq_status launch_out(const croq_matmul_problem* p, const void* a, const void* b, void* c, cudaStream_t s) {
  switch (p->c_type) {
    case CROQ_F32: return launch_typed<TIn, float>(p, a, b, c, s);
    case CROQ_F16: return launch_typed<TIn, __half>(p, a, b, c, s);
    case CROQ_BF16: return launch_typed<TIn, __nv_bfloat16>(p, a, b, c, s);
    default: return CROQ_UNSUPPORTED;
  }
}

}  // namespace

CROQ_EXPORT croq_status croq_matmul(const croq_matmul_problem* p, const void* a, const void* b, void* c,
                                    void* /*workspace*/, size_t /*workspace_bytes*/, void* stream) {
  if (p == nullptr || p->abi_version != CROQ_ABI_VERSION) return CROQ_INVALID_ARGUMENT;
  if (p->m < 0 || p->n < 0 || p->k < 0 || p->a_type != p->b_type) return CROQ_INVALID_ARGUMENT;
  if (p->m == 0 || p->n == 0) return CROQ_OK;
  if (p->compute_type != CROQ_F32) return CROQ_UNSUPPORTED;
  cudaStream_t s = (cudaStream_t)stream;
  switch (p->a_type) {
    case CROQ_F16: return launch_out<__half>(p, a, b, c, s);
    case CROQ_BF16: return launch_out<__nv_bfloat16>(p, a, b, c, s);
    default: return CROQ_UNSUPPORTED;
  }
}

CROQ_EXPORT const char* croq_kernel_info(void) {
  return "{\"name\": \"wmma_tc\", \"dsl\": \"cuda\", \"params\": {\"BM\": 128, \"BN\": 128, \"BK\": 32, "
         "\"warps\": 8, \"warp_tile\": \"64x32\", \"mma\": \"wmma.m16n16k16.f32\"}}";
}
