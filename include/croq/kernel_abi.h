/*
 * croq kernel ABI, version 2: what a candidate kernel implements so that croq can verify and time
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

/* Version 1's croq_matmul_problem carries CROQ_ABI_VERSION (1, unchanged, so version-1 candidates
 * keep working); version 2's croq_gemm_desc carries CROQ_GEMM_ABI_VERSION (2). */
#define CROQ_ABI_VERSION 1
#define CROQ_GEMM_ABI_VERSION 2

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

/* ---------------------------------------------------------------------------------------------
 * Version 2: one entry for every GEMM-like operator, named by a descriptor.
 *
 * A version-2 candidate exports `croq_gemm` (and optionally `croq_gemm_workspace_bytes`,
 * `croq_gemm_prepared_bytes` + `croq_gemm_prepare`, `croq_kernel_info`). The harness looks for
 * croq_gemm first and falls back to version 1's croq_matmul for dense matmul.
 *
 * Operators (croq_gemm_desc.op):
 *   CROQ_OP_MATMUL            C[M,N] = A[M,K] * B, as in version 1.
 *   CROQ_OP_MATMUL_SPARSE24   the same product with A 2:4 structured-sparse: in every aligned group
 *                             of four consecutive elements of a row of A at most two are non-zero.
 *                             The harness hands the candidate the pruned A in dense form [M,K]
 *                             (lda = K). A candidate that wants A compressed (the usual values
 *                             [M,K/2] + metadata form) exports the prepare pair: croq calls
 *                             croq_gemm_prepare once per input set, off the clock, as a deployment
 *                             compresses its weights once, and passes the result to every timed
 *                             launch as operands->a_prepared. Only A may be prepared.
 *   CROQ_OP_MATMUL_BLOCKSCALED  FP8 with f32 scales per block: A[M,K] scaled per 1 x scale_block_k
 *                             (a_scale is [M, ceil(K/scale_block_k)] row-major), B per
 *                             scale_block_n x scale_block_k (b_scale is [ceil(N/bn), ceil(K/bk)]
 *                             row-major, blocks over B's N and K). Typical: bk = bn = 128.
 *                             C = sum_k (a_scale * A) * (b_scale * B).
 *   CROQ_OP_GROUPED_MATMUL    reserved.
 * Per-tensor scales (CROQ_SCALE_TENSOR, any operator with fp8 inputs): a_scale and b_scale point to
 * one f32 each (device memory), C = a_scale * b_scale * (A * B).
 *
 * dtype pairs: f16->f16, f16->f32, bf16->bf16, bf16->f32, e4m3->f16, e4m3->bf16, e4m3->f32, f32,
 * tf32; accumulation in f32. b_layout as in version 1: CROQ_ROW_MAJOR (B is [K,N], ldb = N) or
 * CROQ_COL_MAJOR ("row.col": B stored as [N,K] row-major, ldb = K, the form fp8 and sparse tensor
 * core kernels read).
 *
 * The same rules as version 1: enqueue everything on `stream`, never synchronise, never allocate per
 * call, no vendor GEMM library, no reading of C before writing it. croq_gemm_prepare may
 * synchronise and may not touch B or C (it never sees them).
 * ------------------------------------------------------------------------------------------- */

typedef enum croq_operator {
  CROQ_OP_MATMUL = 1,
  CROQ_OP_MATMUL_SPARSE24 = 2,
  CROQ_OP_MATMUL_BLOCKSCALED = 3,
  CROQ_OP_GROUPED_MATMUL = 4 /* reserved */
} croq_operator;

typedef enum croq_scale_mode {
  CROQ_SCALE_NONE = 0,
  CROQ_SCALE_TENSOR = 1, /* one f32 for A, one for B */
  CROQ_SCALE_BLOCK = 2   /* CROQ_OP_MATMUL_BLOCKSCALED's per-block scales */
} croq_scale_mode;

typedef struct croq_gemm_desc {
  uint32_t abi_version; /* CROQ_GEMM_ABI_VERSION (2) */
  uint32_t struct_bytes; /* sizeof(croq_gemm_desc) as the harness was built: fields may be added */
  croq_operator op;
  int64_t m, n, k;
  croq_dtype a_type;
  croq_dtype b_type;
  croq_dtype c_type;
  croq_dtype compute_type;
  croq_layout b_layout;
  int64_t lda, ldb, ldc;
  croq_scale_mode scale_mode;
  int32_t scale_block_m; /* rows of A per scale (1 for the block-scaled operator) */
  int32_t scale_block_n; /* B rows (N) per scale block */
  int32_t scale_block_k; /* K per scale block */
  int32_t reserved[9];   /* zero */
} croq_gemm_desc;

typedef struct croq_gemm_operands {
  const void* a;          /* A as described: dense (pruned to 2:4 for the sparse operator) */
  const void* b;
  void* c;
  const float* a_scale;   /* NULL unless scale_mode != CROQ_SCALE_NONE */
  const float* b_scale;
  const void* a_prepared; /* croq_gemm_prepare's output for this input set, or NULL */
  size_t a_prepared_bytes;
  void* workspace;        /* croq_gemm_workspace_bytes() bytes, or NULL */
  size_t workspace_bytes;
} croq_gemm_operands;

/* Required (version 2): launch the operator on `stream`. */
typedef croq_status (*croq_gemm_fn)(const croq_gemm_desc* desc, const croq_gemm_operands* operands,
                                    void* stream);
/* Optional: scratch memory, allocated once by the harness. */
typedef size_t (*croq_gemm_workspace_bytes_fn)(const croq_gemm_desc* desc);
/* Optional, as a pair: bytes of prepared A, and the untimed preparation of A into it. */
typedef size_t (*croq_gemm_prepared_bytes_fn)(const croq_gemm_desc* desc);
typedef croq_status (*croq_gemm_prepare_fn)(const croq_gemm_desc* desc, const void* a, void* a_prepared,
                                            size_t a_prepared_bytes, void* stream);

#define CROQ_GEMM_SYMBOL "croq_gemm"
#define CROQ_GEMM_WORKSPACE_SYMBOL "croq_gemm_workspace_bytes"
#define CROQ_GEMM_PREPARED_BYTES_SYMBOL "croq_gemm_prepared_bytes"
#define CROQ_GEMM_PREPARE_SYMBOL "croq_gemm_prepare"

#endif /* CROQ_KERNEL_ABI_H */
