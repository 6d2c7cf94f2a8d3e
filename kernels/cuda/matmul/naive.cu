// Naive CUDA matmul: one thread per element of C, every operand read from global memory.
// croq's tier-A starting point of last resort and the reference of what "correct but slow"
// looks like. Implements include/croq/kernel_abi.h for every M, N, K, both B layouts, inputs
// f16 / bf16 / f32 and outputs f32 / f16 / bf16 (accumulation in f32).
// croq-kernel: {"dtypes": ["f16f32", "f16", "bf16f32", "bf16", "f32"], "rank": 10, "tensor_cores": false, "summary": "one thread per output element, no reuse"}
#include <croq/kernel_abi.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace {

__device__ __forceinline__ float to_f32(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_f32(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_f32(float v) { return v; }

template <typename T> __device__ __forceinline__ T from_f32(float v);
template <> __device__ __forceinline__ float from_f32<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_f32<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

template <typename TIn, typename TOut, bool BColMajor>
__global__ void naive_matmul(const TIn* __restrict__ a, const TIn* __restrict__ b, TOut* __restrict__ c,
                             int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldc) {
  int64_t i = int64_t(blockIdx.y) * blockDim.y + threadIdx.y;
  int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= m || j >= n) return;
  float acc = 0.f;
  for (int64_t p = 0; p < k; ++p) {
    float bv = BColMajor ? to_f32(b[j * ldb + p]) : to_f32(b[p * ldb + j]);
    acc += to_f32(a[i * lda + p]) * bv;
  }
  c[i * ldc + j] = from_f32<TOut>(acc);
}

template <typename TIn, typename TOut>
croq_status launch_typed(const croq_matmul_problem* p, const void* a, const void* b, void* c, cudaStream_t s) {
  dim3 block(16, 16);
  dim3 grid(unsigned((p->n + 15) / 16), unsigned((p->m + 15) / 16));
  if (grid.y > 65535u) return CROQ_UNSUPPORTED;
  if (p->b_layout == CROQ_COL_MAJOR) {
    naive_matmul<TIn, TOut, true><<<grid, block, 0, s>>>((const TIn*)a, (const TIn*)b, (TOut*)c, p->m, p->n, p->k,
                                                         p->lda, p->ldb, p->ldc);
  } else {
    naive_matmul<TIn, TOut, false><<<grid, block, 0, s>>>((const TIn*)a, (const TIn*)b, (TOut*)c, p->m, p->n, p->k,
                                                          p->lda, p->ldb, p->ldc);
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
  return "{\"name\": \"naive\", \"dsl\": \"cuda\", \"params\": {\"block\": \"16x16\"}}";
}
