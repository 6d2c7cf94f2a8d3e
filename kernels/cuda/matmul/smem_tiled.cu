// Shared-memory tiled CUDA matmul: 64x64 tiles of C per block of 256 threads, K walked in slices of
// 16 staged through shared memory (converted to f32 on the way in), each thread accumulating a 4x4
// register tile. The classic second step after the naive kernel: every operand element is read
// from global memory once per tile instead of once per output. Implements
// include/croq/kernel_abi.h for every M, N, K (edges are bounds-checked and zero-filled), both B
// layouts, inputs f16 / bf16 / f32 and outputs f32 / f16 / bf16 (accumulation in f32).
// croq-kernel: {"dtypes": ["f16f32", "f16", "bf16f32", "bf16", "f32"], "rank": 20, "tensor_cores": false, "summary": "64x64 shared-memory tiles, 4x4 register tile per thread"}
#include <croq/kernel_abi.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace {

constexpr int k_bm = 64, k_bn = 64, k_bk = 16, k_threads = 256, k_pad = 4;

__device__ __forceinline__ float to_f32(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_f32(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_f32(float v) { return v; }

template <typename T> __device__ __forceinline__ T from_f32(float v);
template <> __device__ __forceinline__ float from_f32<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_f32<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

template <typename TIn, typename TOut, bool BColMajor>
__global__ void __launch_bounds__(k_threads)
tiled_matmul(const TIn* __restrict__ a, const TIn* __restrict__ b, TOut* __restrict__ c, int64_t m, int64_t n,
             int64_t k, int64_t lda, int64_t ldb, int64_t ldc) {
  __shared__ float as[k_bk][k_bm + k_pad];  // as[kk][i]
  __shared__ float bs[k_bk][k_bn + k_pad];  // bs[kk][j]
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const int64_t bm = int64_t(blockIdx.y) * k_bm, bn = int64_t(blockIdx.x) * k_bn;
  float acc[4][4] = {};

  for (int64_t k0 = 0; k0 < k; k0 += k_bk) {
#pragma unroll
    for (int q = 0; q < (k_bm * k_bk) / k_threads; ++q) {
      int e = tid + q * k_threads, i = e / k_bk, kk = e % k_bk;
      int64_t gi = bm + i, gk = k0 + kk;
      as[kk][i] = (gi < m && gk < k) ? to_f32(a[gi * lda + gk]) : 0.f;
    }
#pragma unroll
    for (int q = 0; q < (k_bn * k_bk) / k_threads; ++q) {
      int e = tid + q * k_threads;
      int kk, j;
      if (BColMajor) { j = e / k_bk; kk = e % k_bk; } else { kk = e / k_bn; j = e % k_bn; }
      int64_t gj = bn + j, gk = k0 + kk;
      float v = 0.f;
      if (gj < n && gk < k) v = BColMajor ? to_f32(b[gj * ldb + gk]) : to_f32(b[gk * ldb + gj]);
      bs[kk][j] = v;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < k_bk; ++kk) {
      float af[4], bf[4];
#pragma unroll
      for (int r = 0; r < 4; ++r) af[r] = as[kk][ty + 16 * r];
#pragma unroll
      for (int s = 0; s < 4; ++s) bf[s] = bs[kk][tx + 16 * s];
#pragma unroll
      for (int r = 0; r < 4; ++r)
#pragma unroll
        for (int s = 0; s < 4; ++s) acc[r][s] += af[r] * bf[s];
    }
    __syncthreads();
  }
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    int64_t gi = bm + ty + 16 * r;
    if (gi >= m) continue;
#pragma unroll
    for (int s = 0; s < 4; ++s) {
      int64_t gj = bn + tx + 16 * s;
      if (gj < n) c[gi * ldc + gj] = from_f32<TOut>(acc[r][s]);
    }
  }
}

template <typename TIn, typename TOut>
croq_status launch_typed(const croq_matmul_problem* p, const void* a, const void* b, void* c, cudaStream_t s) {
  dim3 grid(unsigned((p->n + k_bn - 1) / k_bn), unsigned((p->m + k_bm - 1) / k_bm));
  if (grid.y > 65535u) return CROQ_UNSUPPORTED;
  if (p->b_layout == CROQ_COL_MAJOR) {
    tiled_matmul<TIn, TOut, true><<<grid, k_threads, 0, s>>>((const TIn*)a, (const TIn*)b, (TOut*)c, p->m, p->n,
                                                             p->k, p->lda, p->ldb, p->ldc);
  } else {
    tiled_matmul<TIn, TOut, false><<<grid, k_threads, 0, s>>>((const TIn*)a, (const TIn*)b, (TOut*)c, p->m, p->n,
                                                              p->k, p->lda, p->ldb, p->ldc);
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
    case CROQ_F32: return launch_out<float>(p, a, b, c, s);
    default: return CROQ_UNSUPPORTED;
  }
}

CROQ_EXPORT const char* croq_kernel_info(void) {
  return "{\"name\": \"smem_tiled\", \"dsl\": \"cuda\", \"params\": {\"BM\": 64, \"BN\": 64, \"BK\": 16, \"thread_tile\": \"4x4\"}}";
}
