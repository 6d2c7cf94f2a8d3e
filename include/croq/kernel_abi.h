/*
 * croq kernel ABI, version 1: what a candidate kernel implements so that croq can verify and time
 * it with its own harness (the candidate never allocates its inputs, checks itself or times
 * itself).
 *
 * A candidate is a shared object exporting one launch function per operator family. The matmul
 * family computes
 *
 *     C[M,N] = A[M,K] * B
 *
 * with A row-major (lda = K), B either row-major K x N (b_layout = CROQ_ROW_MAJOR, ldb = N) or
 * "column-major": stored as N x K row-major, the "row.col" form of the sparse and CroqTile kernels
 * (b_layout = CROQ_COL_MAJOR, ldb = K), and C row-major (ldc = N). Element types come from the
 * problem's dtype pair (f16->f32, f16->f16, bf16->f32, bf16->bf16, e4m3->f16, e4m3->bf16, f32,
 * tf32); accumulation is in f32. The harness passes device pointers and a cudaStream_t for GPU
 * candidates (dsl cuda, croqtile bound to the ABI, triton through the Python runner) and host
 * pointers with stream == NULL for CPU candidates (dsl cpp).
 *
 * The launch function must enqueue all of its work on `stream` (or, for CPU candidates, finish
 * it before returning) and return CROQ_OK, or a status saying why it cannot run the problem.
 * It must not synchronise the device, allocate memory on every call, or call a vendor library
 * (cuBLAS, cuBLASLt, cuDNN, CUTLASS device GEMMs): croq refuses such candidates.
 *
 * Minimal example (a naive CUDA kernel for f16 -> f32, B row-major):
 *
 *   #include <croq/kernel_abi.h>
 *   #include <cuda_fp16.h>
 *   __global__ void naive(const __half* a, const __half* b, float* c, int64_t m, int64_t n, int64_t k) {
 *     int64_t i = blockIdx.y * blockDim.y + threadIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
 *     if (i >= m || j >= n) return;
 *     float acc = 0.f;
 *     for (int64_t p = 0; p < k; ++p) acc += __half2float(a[i * k + p]) * __half2float(b[p * n + j]);
 *     c[i * n + j] = acc;
 *   }
 *   CROQ_EXPORT croq_status croq_matmul(const croq_matmul_problem* p, const void* a, const void* b,
 *                                       void* c, void* workspace, size_t workspace_bytes, void* stream) {
 *     if (p->a_type != CROQ_F16 || p->c_type != CROQ_F32 || p->b_layout != CROQ_ROW_MAJOR)
 *       return CROQ_UNSUPPORTED;
 *     dim3 block(16, 16), grid((p->n + 15) / 16, (p->m + 15) / 16);
 *     naive<<<grid, block, 0, (cudaStream_t)stream>>>((const __half*)a, (const __half*)b, (float*)c,
 *                                                     p->m, p->n, p->k);
 *     return cudaGetLastError() == cudaSuccess ? CROQ_OK : CROQ_LAUNCH_FAILED;
 *   }
 */
#ifndef CROQ_KERNEL_ABI_H
#define CROQ_KERNEL_ABI_H

#include <stddef.h>
#include <stdint.h>

#define CROQ_ABI_VERSION 1

#ifdef __cplusplus
#define CROQ_EXTERN_C extern "C"
#else
#define CROQ_EXTERN_C
#endif
#define CROQ_EXPORT CROQ_EXTERN_C __attribute__((visibility("default")))

typedef enum croq_dtype {
  CROQ_F16 = 1,
  CROQ_BF16 = 2,
  CROQ_F32 = 3,
  CROQ_TF32 = 4, /* compute type only: f32 storage, tf32 multiplies */
  CROQ_E4M3 = 5
} croq_dtype;

typedef enum croq_layout { CROQ_ROW_MAJOR = 0, CROQ_COL_MAJOR = 1 } croq_layout;

typedef enum croq_status {
  CROQ_OK = 0,
  CROQ_UNSUPPORTED = 1,      /* this candidate does not handle the problem (dtype, layout, shape) */
  CROQ_INVALID_ARGUMENT = 2, /* the problem description is inconsistent */
  CROQ_LAUNCH_FAILED = 3,    /* a launch or runtime call failed */
  CROQ_INTERNAL = 4
} croq_status;

typedef struct croq_matmul_problem {
  uint32_t abi_version; /* CROQ_ABI_VERSION */
  int64_t m, n, k;
  croq_dtype a_type;       /* A and B share the input type */
  croq_dtype b_type;
  croq_dtype c_type;       /* output type */
  croq_dtype compute_type; /* CROQ_F32 (accumulate in f32) or CROQ_TF32 */
  croq_layout b_layout;
  int64_t lda, ldb, ldc;   /* leading dimensions in elements (dense: K, N or K, N) */
} croq_matmul_problem;

/* Required: launch C = A * B on `stream` (cudaStream_t; NULL for CPU candidates). */
typedef croq_status (*croq_matmul_fn)(const croq_matmul_problem* problem, const void* a, const void* b,
                                      void* c, void* workspace, size_t workspace_bytes, void* stream);
/* Optional: scratch memory the candidate needs (device memory for GPU candidates), allocated once
 * by the harness. Absent: none. */
typedef size_t (*croq_matmul_workspace_bytes_fn)(const croq_matmul_problem* problem);
/* Optional: a JSON object describing the candidate ({"name": ..., "params": {...}}). */
typedef const char* (*croq_kernel_info_fn)(void);

#define CROQ_MATMUL_SYMBOL "croq_matmul"
#define CROQ_MATMUL_WORKSPACE_SYMBOL "croq_matmul_workspace_bytes"
#define CROQ_KERNEL_INFO_SYMBOL "croq_kernel_info"

#endif /* CROQ_KERNEL_ABI_H */
