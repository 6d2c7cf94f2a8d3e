// Test candidates for the GPU runner: one correct naive kernel, one tensor-core (WMMA) kernel, and
// a set of deliberately broken ones, each of which must get its verdict. All of them share this
// file (compiled once); each module (module.cpp, built with -DCROQ_TEST_MODE=<mode>) exports
// croq_matmul and calls tk_matmul with its mode.
//
//   mode             what it does                                         expected verdict
//   naive            one thread per element, f32 accumulation             PASS
//   wmma             16x16x16 WMMA tiles, f16 -> f32 only                  PASS
//   wrong_values     swaps neighbouring K elements of A                    VERIFY_FAIL mismatch
//   partial_write    writes the first half of the rows only               VERIFY_FAIL unwritten_output
//   oob_write        also writes one row past the end of C                 VERIFY_FAIL out_of_bounds_write
//   infinite_loop    spins forever                                         HANG
//   skip_work        one term of the K sum instead of K                    IMPOSSIBLE above_peak
//   stale_output     returns the output cached from the first call        IMPOSSIBLE (a copy is faster than peak)
//   stale_prepack    caches a packed copy of B by pointer, never repacks  VERIFY_FAIL second_seed_mismatch
//   illegal_address  writes to address 0x10                                RUNTIME_FAIL cuda_error
//   host_segfault    dereferences NULL on the host                         SEGFAULT
//   launch_failed    returns CROQ_LAUNCH_FAILED                            RUNTIME_FAIL launch_status
//   unsupported      returns CROQ_UNSUPPORTED                              UNSUPPORTED
//   escape_stream    runs its kernel on a stream of its own                IMPOSSIBLE (events see no work)
//   sync_inside      synchronises the stream inside croq_matmul            PASS, with a warning
// The naive module also exports croq_gemm (kernel ABI v2): e4m3 with per-tensor or block scales
// (tk_gemm_scaled), everything else forwarded to tk_matmul.
#include <croq/kernel_abi.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <cstdint>
#include <map>

#include "modes.h"

namespace {

template <typename T>
__device__ __forceinline__ float ld(const T* p, int64_t i);
template <>
__device__ __forceinline__ float ld<__half>(const __half* p, int64_t i) { return __half2float(p[i]); }
template <>
__device__ __forceinline__ float ld<__nv_bfloat16>(const __nv_bfloat16* p, int64_t i) { return __bfloat162float(p[i]); }
template <>
__device__ __forceinline__ float ld<__nv_fp8_e4m3>(const __nv_fp8_e4m3* p, int64_t i) { return static_cast<float>(p[i]); }
template <>
__device__ __forceinline__ float ld<float>(const float* p, int64_t i) { return p[i]; }

template <typename T>
__device__ __forceinline__ void st(T* p, int64_t i, float v);
template <>
__device__ __forceinline__ void st<__half>(__half* p, int64_t i, float v) { p[i] = __float2half_rn(v); }
template <>
__device__ __forceinline__ void st<__nv_bfloat16>(__nv_bfloat16* p, int64_t i, float v) { p[i] = __float2bfloat16_rn(v); }
template <>
__device__ __forceinline__ void st<float>(float* p, int64_t i, float v) { p[i] = v; }

__device__ volatile int g_never_set = 0;

template <int MODE, typename TI, typename TO>
__global__ void naive_kernel(const TI* a, const TI* b, TO* c, int64_t m, int64_t n, int64_t k, bool b_col) {
  const int64_t i = blockIdx.y * int64_t(blockDim.y) + threadIdx.y;
  const int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (MODE == TK_INFINITE_LOOP) {
    while (g_never_set == 0) __nanosleep(1000);
  }
  if (MODE == TK_ILLEGAL_ADDRESS && i == 0 && j == 0) *reinterpret_cast<volatile float*>(0x10) = 1.0f;
  if (MODE == TK_OOB_WRITE && i == m && j < n) {
    st(c, i * n + j, 0.0f);  // one row past the end of C
    return;
  }
  if (i >= m || j >= n) return;
  if (MODE == TK_PARTIAL_WRITE && i >= m / 2) return;
  float acc = 0.f;
  const int64_t k_end = MODE == TK_SKIP_WORK ? 1 : k;
  for (int64_t p = 0; p < k_end; ++p) {
    int64_t pa = p;
    if (MODE == TK_WRONG_VALUES) pa = (p ^ 1) < k ? (p ^ 1) : p;
    const float bv = b_col ? ld(b, j * k + p) : ld(b, p * n + j);
    acc += ld(a, i * k + pa) * bv;
  }
  st(c, i * n + j, acc);
}

// f16 -> f32 with WMMA: one warp per 16x16 tile of C, K in steps of 16 (M, N, K multiples of 16).
__global__ void wmma_kernel(const __half* a, const __half* b, float* c, int64_t m, int64_t n, int64_t k, bool b_col) {
  using namespace nvcuda;
  const int64_t tile_m = (blockIdx.y * int64_t(blockDim.y) + threadIdx.y) * 16;
  const int64_t tile_n = (blockIdx.x * int64_t(blockDim.x / 32) + threadIdx.x / 32) * 16;
  if (tile_m >= m || tile_n >= n) return;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  for (int64_t p = 0; p < k; p += 16) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
    wmma::load_matrix_sync(fa, a + tile_m * k + p, static_cast<unsigned>(k));
    if (b_col) {
      wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb;
      wmma::load_matrix_sync(fb, b + tile_n * k + p, static_cast<unsigned>(k));
      wmma::mma_sync(acc, fa, fb, acc);
    } else {
      wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> fb;
      wmma::load_matrix_sync(fb, b + p * n + tile_n, static_cast<unsigned>(n));
      wmma::mma_sync(acc, fa, fb, acc);
    }
  }
  wmma::store_matrix_sync(c + tile_m * n + tile_n, acc, static_cast<unsigned>(n), wmma::mem_row_major);
}

template <int MODE, typename TI, typename TO>
croq_status launch_naive(const croq_matmul_problem* p, const void* a, const void* b, void* c, cudaStream_t s) {
  dim3 block(16, 16);
  const int64_t rows = MODE == TK_OOB_WRITE ? p->m + 1 : p->m;
  dim3 grid(static_cast<unsigned>((p->n + 15) / 16), static_cast<unsigned>((rows + 15) / 16));
  naive_kernel<MODE, TI, TO><<<grid, block, 0, s>>>(static_cast<const TI*>(a), static_cast<const TI*>(b),
                                                    static_cast<TO*>(c), p->m, p->n, p->k, p->b_layout == CROQ_COL_MAJOR);
  return cudaGetLastError() == cudaSuccess ? CROQ_OK : CROQ_LAUNCH_FAILED;
}

template <int MODE>
croq_status dispatch(const croq_matmul_problem* p, const void* a, const void* b, void* c, cudaStream_t s) {
  const croq_dtype in = p->a_type, out = p->c_type;
  if (in == CROQ_F16 && out == CROQ_F32) return launch_naive<MODE, __half, float>(p, a, b, c, s);
  if (in == CROQ_F16 && out == CROQ_F16) return launch_naive<MODE, __half, __half>(p, a, b, c, s);
  if (in == CROQ_BF16 && out == CROQ_F32) return launch_naive<MODE, __nv_bfloat16, float>(p, a, b, c, s);
  if (in == CROQ_BF16 && out == CROQ_BF16) return launch_naive<MODE, __nv_bfloat16, __nv_bfloat16>(p, a, b, c, s);
  if (in == CROQ_E4M3 && out == CROQ_F16) return launch_naive<MODE, __nv_fp8_e4m3, __half>(p, a, b, c, s);
  if (in == CROQ_E4M3 && out == CROQ_BF16) return launch_naive<MODE, __nv_fp8_e4m3, __nv_bfloat16>(p, a, b, c, s);
  if (in == CROQ_F32 && out == CROQ_F32) return launch_naive<MODE, float, float>(p, a, b, c, s);
  return CROQ_UNSUPPORTED;
}

size_t out_bytes(const croq_matmul_problem* p) {
  return static_cast<size_t>(p->m * p->n) * (p->c_type == CROQ_F32 ? 4 : 2);
}
size_t b_bytes(const croq_matmul_problem* p) {
  size_t e = p->a_type == CROQ_F32 ? 4 : (p->a_type == CROQ_E4M3 ? 1 : 2);
  return static_cast<size_t>(p->k * p->n) * e;
}

// FP8 with scales (kernel ABI v2): per tensor (C = a_scale b_scale A B) or per block (A per
// 1 x bk, scales [K/bk, M]; B [N,K] per bn x bk), one thread per element of C, f32 accumulation.
template <typename TO>
__global__ void scaled_naive_kernel(const __nv_fp8_e4m3* a, const __nv_fp8_e4m3* b, TO* c, const float* sa,
                                    const float* sb, int64_t m, int64_t n, int64_t k, bool b_col, bool block,
                                    int64_t bk, int64_t bn) {
  const int64_t i = blockIdx.y * int64_t(blockDim.y) + threadIdx.y;
  const int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= m || j >= n) return;
  const int64_t kb = block ? (k + bk - 1) / bk : 1;
  float acc = 0.f;
  for (int64_t p = 0; p < k; ++p) {
    float av = ld(a, i * k + p);
    float bv = b_col ? ld(b, j * k + p) : ld(b, p * n + j);
    if (block) {
      av *= sa[(p / bk) * m + i];  // A's scales: [ceil(K/bk), M]
      bv *= sb[(j / bn) * kb + p / bk];
    }
    acc += av * bv;
  }
  if (!block) acc *= sa[0] * sb[0];
  st(c, i * n + j, acc);
}

}  // namespace

extern "C" croq_status tk_gemm_scaled(const croq_gemm_desc* d, const croq_gemm_operands* o, void* stream) {
  if (d->a_type != CROQ_E4M3 || d->scale_mode == CROQ_SCALE_NONE) return CROQ_UNSUPPORTED;
  const bool block = d->scale_mode == CROQ_SCALE_BLOCK;
  dim3 blk(16, 16), grid(static_cast<unsigned>((d->n + 15) / 16), static_cast<unsigned>((d->m + 15) / 16));
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  const auto* a = static_cast<const __nv_fp8_e4m3*>(o->a);
  const auto* b = static_cast<const __nv_fp8_e4m3*>(o->b);
  const bool b_col = d->b_layout == CROQ_COL_MAJOR;
  if (d->c_type == CROQ_F16) {
    scaled_naive_kernel<__half><<<grid, blk, 0, s>>>(a, b, static_cast<__half*>(o->c), o->a_scale, o->b_scale, d->m, d->n,
                                                     d->k, b_col, block, d->scale_block_k, d->scale_block_n);
  } else if (d->c_type == CROQ_BF16) {
    scaled_naive_kernel<__nv_bfloat16><<<grid, blk, 0, s>>>(a, b, static_cast<__nv_bfloat16*>(o->c), o->a_scale,
                                                            o->b_scale, d->m, d->n, d->k, b_col, block,
                                                            d->scale_block_k, d->scale_block_n);
  } else {
    return CROQ_UNSUPPORTED;
  }
  return cudaGetLastError() == cudaSuccess ? CROQ_OK : CROQ_LAUNCH_FAILED;
}

extern "C" croq_status tk_matmul(int mode, const croq_matmul_problem* p, const void* a, const void* b, void* c,
                                 void* workspace, size_t workspace_bytes, void* stream) {
  (void)workspace;
  (void)workspace_bytes;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  switch (mode) {
    case TK_NAIVE: return dispatch<TK_NAIVE>(p, a, b, c, s);
    case TK_WRONG_VALUES: return dispatch<TK_WRONG_VALUES>(p, a, b, c, s);
    case TK_PARTIAL_WRITE: return dispatch<TK_PARTIAL_WRITE>(p, a, b, c, s);
    case TK_OOB_WRITE: return dispatch<TK_OOB_WRITE>(p, a, b, c, s);
    case TK_INFINITE_LOOP: return dispatch<TK_INFINITE_LOOP>(p, a, b, c, s);
    case TK_SKIP_WORK: return dispatch<TK_SKIP_WORK>(p, a, b, c, s);
    case TK_ILLEGAL_ADDRESS: return dispatch<TK_ILLEGAL_ADDRESS>(p, a, b, c, s);
    case TK_WMMA: {
      if (p->a_type != CROQ_F16 || p->c_type != CROQ_F32 || p->m % 16 || p->n % 16 || p->k % 16) return CROQ_UNSUPPORTED;
      dim3 block(32 * 4, 4);  // 4 x 4 warps: a 64 x 64 block of C
      dim3 grid(static_cast<unsigned>((p->n + 63) / 64), static_cast<unsigned>((p->m + 63) / 64));
      wmma_kernel<<<grid, block, 0, s>>>(static_cast<const __half*>(a), static_cast<const __half*>(b),
                                          static_cast<float*>(c), p->m, p->n, p->k, p->b_layout == CROQ_COL_MAJOR);
      return cudaGetLastError() == cudaSuccess ? CROQ_OK : CROQ_LAUNCH_FAILED;
    }
    case TK_HOST_SEGFAULT: {
      volatile int* null_pointer = nullptr;
      *null_pointer = 1;
      return CROQ_INTERNAL;
    }
    case TK_LAUNCH_FAILED: return CROQ_LAUNCH_FAILED;
    case TK_UNSUPPORTED: return CROQ_UNSUPPORTED;
    case TK_ESCAPE_STREAM: {
      // Work on a stream of its own, not ordered with the caller's events.
      static cudaStream_t own = nullptr;
      if (!own) cudaStreamCreateWithFlags(&own, cudaStreamNonBlocking);
      return dispatch<TK_NAIVE>(p, a, b, c, own);
    }
    case TK_SYNC_INSIDE: {
      croq_status r = dispatch<TK_NAIVE>(p, a, b, c, s);
      cudaStreamSynchronize(s);
      return r;
    }
    case TK_STALE_OUTPUT: {
      // Keyed by the input pointers: the first call computes, later calls copy that first result.
      static std::map<std::pair<const void*, const void*>, void*> cache;
      auto key = std::make_pair(a, b);
      auto it = cache.find(key);
      if (it != cache.end()) {
        return cudaMemcpyAsync(c, it->second, out_bytes(p), cudaMemcpyDeviceToDevice, s) == cudaSuccess
                   ? CROQ_OK
                   : CROQ_LAUNCH_FAILED;
      }
      croq_status r = dispatch<TK_NAIVE>(p, a, b, c, s);
      void* copy = nullptr;
      if (cudaMalloc(&copy, out_bytes(p)) != cudaSuccess) return CROQ_INTERNAL;
      cudaMemcpyAsync(copy, c, out_bytes(p), cudaMemcpyDeviceToDevice, s);
      cache[key] = copy;
      return r;
    }
    case TK_STALE_PREPACK: {
      // "Prepacks" B once per B pointer and reuses the packed copy: new data at the same address
      // is never seen (a classic weight-cache bug). The compute itself is honest.
      static std::map<const void*, void*> packed;
      auto it = packed.find(b);
      if (it == packed.end()) {
        void* copy = nullptr;
        if (cudaMalloc(&copy, b_bytes(p)) != cudaSuccess) return CROQ_INTERNAL;
        cudaMemcpyAsync(copy, b, b_bytes(p), cudaMemcpyDeviceToDevice, s);
        it = packed.emplace(b, copy).first;
      }
      return dispatch<TK_NAIVE>(p, a, it->second, c, s);
    }
  }
  return CROQ_UNSUPPORTED;
}
