// 2:4 sparse test candidates for croq-gpu-runner (kernel ABI v2, CROQ_OP_MATMUL_SPARSE24): plain
// CUDA kernels, one output element per thread, f16/bf16/e4m3/f32 in, f16/bf16/f32 out, both B
// layouts. Each mode is what the harness must see through:
//   sparse_ok              decodes the metadata per group                        PASS
//   sparse_prepared        croq_gemm_prepare compresses A (values + columns);
//                          launches read only the compressed copy                PASS
//   sparse_dense           multiplies A densely, metadata ignored                VERIFY_FAIL (poison)
//   sparse_fixed_pattern   assumes every group keeps positions 0 and 1           VERIFY_FAIL
//   sparse_swapped_nibbles reads group 2j from the high nibble                   VERIFY_FAIL
//   sparse_magnitude       keeps the two largest values of each group            VERIFY_FAIL
//   sparse_prepare_once    compresses at its first croq_gemm_prepare only        VERIFY_FAIL second_seed_mismatch
#include <croq/kernel_abi.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "sparse_modes.h"

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

// The two kept positions of group g of row i, as mode `MODE` reads them.
template <int MODE, typename TI>
__device__ __forceinline__ void kept(const TI* a, const uint8_t* meta, int64_t k, int64_t i, int64_t g, int& p0, int& p1) {
  const uint8_t byte = meta[i * (k / 8) + g / 2];
  const int shift = MODE == SK_SWAPPED_NIBBLES ? 4 * (1 - int(g % 2)) : 4 * int(g % 2);
  const unsigned nibble = (byte >> shift) & 0xFu;
  p0 = int(nibble & 3u);
  p1 = int(nibble >> 2);
  if (MODE == SK_FIXED_PATTERN) {
    p0 = 0;
    p1 = 1;
  }
  if (MODE == SK_MAGNITUDE) {
    float v[4];
    for (int q = 0; q < 4; ++q) v[q] = fabsf(ld(a, i * k + 4 * g + q));
    p0 = 0;
    for (int q = 1; q < 4; ++q) p0 = v[q] > v[p0] ? q : p0;
    p1 = p0 == 0 ? 1 : 0;
    for (int q = 0; q < 4; ++q) p1 = (q != p0 && v[q] > v[p1]) ? q : p1;
  }
}

template <int MODE, typename TI, typename TO>
__global__ void sparse_kernel(const TI* a, const uint8_t* meta, const float* vals, const int* cols, const TI* b, TO* c,
                              int64_t m, int64_t n, int64_t k, bool b_col) {
  const int64_t i = blockIdx.y * int64_t(blockDim.y) + threadIdx.y;
  const int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= m || j >= n) return;
  float acc = 0.f;
  if (MODE == SK_DENSE) {
    for (int64_t q = 0; q < k; ++q) acc += ld(a, i * k + q) * (b_col ? ld(b, j * k + q) : ld(b, q * n + j));
  } else if (MODE == SK_PREPARED || MODE == SK_PREPARE_ONCE) {
    for (int64_t e = i * (k / 2); e < (i + 1) * (k / 2); ++e) {
      const int64_t q = cols[e];
      acc += vals[e] * (b_col ? ld(b, j * k + q) : ld(b, q * n + j));
    }
  } else {
    for (int64_t g = 0; g < k / 4; ++g) {
      int p0, p1;
      kept<MODE>(a, meta, k, i, g, p0, p1);
      const int64_t q0 = 4 * g + p0, q1 = 4 * g + p1;
      acc += ld(a, i * k + q0) * (b_col ? ld(b, j * k + q0) : ld(b, q0 * n + j));
      acc += ld(a, i * k + q1) * (b_col ? ld(b, j * k + q1) : ld(b, q1 * n + j));
    }
  }
  st(c, i * n + j, acc);
}

// croq_gemm_prepare of the prepared modes: A's kept values as f32 and their columns.
template <typename TI>
__global__ void compress_kernel(const TI* a, const uint8_t* meta, float* vals, int* cols, int64_t m, int64_t k) {
  const int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;  // one group
  if (t >= m * (k / 4)) return;
  const int64_t i = t / (k / 4), g = t % (k / 4);
  int p0, p1;
  kept<SK_OK>(a, meta, k, i, g, p0, p1);
  const int64_t e = i * (k / 2) + 2 * g;
  vals[e] = ld(a, i * k + 4 * g + p0);
  vals[e + 1] = ld(a, i * k + 4 * g + p1);
  cols[e] = int(4 * g + p0);
  cols[e + 1] = int(4 * g + p1);
}

template <int MODE, typename TI, typename TO>
croq_status launch_typed(const croq_gemm_desc* d, const croq_gemm_operands* o, cudaStream_t s) {
  const float* vals = static_cast<const float*>(o->a_prepared);
  const int* cols = vals ? reinterpret_cast<const int*>(vals + d->m * (d->k / 2)) : nullptr;
  dim3 block(16, 16), grid(unsigned((d->n + 15) / 16), unsigned((d->m + 15) / 16));
  sparse_kernel<MODE, TI, TO><<<grid, block, 0, s>>>(static_cast<const TI*>(o->a), o->a_meta, vals, cols,
                                                     static_cast<const TI*>(o->b), static_cast<TO*>(o->c), d->m, d->n,
                                                     d->k, d->b_layout == CROQ_COL_MAJOR);
  return cudaGetLastError() == cudaSuccess ? CROQ_OK : CROQ_LAUNCH_FAILED;
}

template <int MODE, typename TI>
croq_status launch_in(const croq_gemm_desc* d, const croq_gemm_operands* o, cudaStream_t s) {
  switch (d->c_type) {
    case CROQ_F16: return launch_typed<MODE, TI, __half>(d, o, s);
    case CROQ_BF16: return launch_typed<MODE, TI, __nv_bfloat16>(d, o, s);
    case CROQ_F32: return launch_typed<MODE, TI, float>(d, o, s);
    default: return CROQ_UNSUPPORTED;
  }
}

template <int MODE>
croq_status launch_mode(const croq_gemm_desc* d, const croq_gemm_operands* o, cudaStream_t s) {
  switch (d->a_type) {
    case CROQ_F16: return launch_in<MODE, __half>(d, o, s);
    case CROQ_BF16: return launch_in<MODE, __nv_bfloat16>(d, o, s);
    case CROQ_E4M3: return launch_in<MODE, __nv_fp8_e4m3>(d, o, s);
    case CROQ_F32: return launch_in<MODE, float>(d, o, s);
    default: return CROQ_UNSUPPORTED;
  }
}

template <typename TI>
croq_status compress(const croq_gemm_desc* d, const croq_gemm_operands* o, void* out, cudaStream_t s) {
  float* vals = static_cast<float*>(out);
  int* cols = reinterpret_cast<int*>(vals + d->m * (d->k / 2));
  const int64_t groups = d->m * (d->k / 4);
  compress_kernel<<<unsigned((groups + 255) / 256), 256, 0, s>>>(static_cast<const TI*>(o->a), o->a_meta, vals, cols,
                                                                 d->m, d->k);
  return cudaGetLastError() == cudaSuccess ? CROQ_OK : CROQ_LAUNCH_FAILED;
}

bool g_compressed_once = false;

}  // namespace

extern "C" croq_status sk_gemm(int mode, const croq_gemm_desc* d, const croq_gemm_operands* o, void* stream) {
  if (d->op != CROQ_OP_MATMUL_SPARSE24 || d->k % 8 != 0 || o->a_meta == nullptr) return CROQ_UNSUPPORTED;
  if ((mode == SK_PREPARED || mode == SK_PREPARE_ONCE) && o->a_prepared == nullptr) return CROQ_INVALID_ARGUMENT;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  switch (mode) {
    case SK_OK: return launch_mode<SK_OK>(d, o, s);
    case SK_PREPARED: return launch_mode<SK_PREPARED>(d, o, s);
    case SK_DENSE: return launch_mode<SK_DENSE>(d, o, s);
    case SK_FIXED_PATTERN: return launch_mode<SK_FIXED_PATTERN>(d, o, s);
    case SK_SWAPPED_NIBBLES: return launch_mode<SK_SWAPPED_NIBBLES>(d, o, s);
    case SK_MAGNITUDE: return launch_mode<SK_MAGNITUDE>(d, o, s);
    case SK_PREPARE_ONCE: return launch_mode<SK_PREPARE_ONCE>(d, o, s);
    default: return CROQ_UNSUPPORTED;
  }
}

extern "C" size_t sk_prepared_bytes(int mode, const croq_gemm_desc* d) {
  if (mode != SK_PREPARED && mode != SK_PREPARE_ONCE) return 0;
  return size_t(d->m * (d->k / 2)) * (sizeof(float) + sizeof(int));
}

extern "C" croq_status sk_prepare(int mode, const croq_gemm_desc* d, const croq_gemm_operands* o, void* out, size_t,
                                  void* stream) {
  if (mode == SK_PREPARE_ONCE && g_compressed_once) return CROQ_OK;
  g_compressed_once = true;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  switch (d->a_type) {
    case CROQ_F16: return compress<__half>(d, o, out, s);
    case CROQ_BF16: return compress<__nv_bfloat16>(d, o, out, s);
    case CROQ_E4M3: return compress<__nv_fp8_e4m3>(d, o, out, s);
    case CROQ_F32: return compress<float>(d, o, out, s);
    default: return CROQ_UNSUPPORTED;
  }
}
