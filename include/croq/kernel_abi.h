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
 * croq_gemm first and falls back to version 1's croq_matmul for dense matmul (a version-1
 * candidate cannot compute any other operator). This header declares the version-2 entry points,
 * so a definition whose signature differs from them does not compile.
 *
 * Operators (croq_gemm_desc.op):
 *   CROQ_OP_MATMUL            C[M,N] = A[M,K] * B, as in version 1. operands->a_meta is NULL.
 *   CROQ_OP_MATMUL_SPARSE24   the same product with A 2:4 structured-sparse: in every aligned group
 *                             of four consecutive elements of a row of A, two positions are kept
 *                             and the other two count as zero. K is a multiple of 8.
 *                             operands->a is A in dense form [M,K] (lda = K) and operands->a_meta
 *                             names the kept positions:
 *                               a_meta: uint8 [M, K/8] row-major (K/8 bytes per row); byte j of
 *                               row i describes the groups 2j (low nibble, bits 0-3) and 2j+1
 *                               (high nibble, bits 4-7) of that row, i.e. A[i, 8j .. 8j+7]; a
 *                               nibble is idx0 | idx1 << 2 with idx0 < idx1 the kept positions
 *                               (0..3) inside the group: 0x4 {0,1}, 0x8 {0,2}, 0xC {0,3},
 *                               0x9 {1,2}, 0xD {1,3}, 0xE {2,3} (the nibble order of PTX's
 *                               mma.sp metadata for 16-bit types).
 *                             The POSITIONS OUTSIDE THE PATTERN HOLD ARBITRARY VALUES: croq fills
 *                             them with finite non-zero values of either sign, as large as the
 *                             kept ones or larger, and the product must not depend on them. A
 *                             candidate that reads A as dense, guesses the pattern from the values
 *                             or misreads the metadata gets VERIFY_FAIL. Kept values may be zero
 *                             (groups with fewer than two non-zeros occur), and every one of the
 *                             six patterns occurs. croq's reference is the dense product of A with
 *                             the positions outside the pattern set to zero.
 *                             A candidate that wants A compressed (values [M,K/2] + metadata in
 *                             its own order, e.g. the WGMMA metadata layout) exports the prepare
 *                             pair: croq calls croq_gemm_prepare once per input set, off the
 *                             clock (as a deployment compresses its weights once), and hands the
 *                             result to every timed launch on that set as operands->a_prepared.
 *   CROQ_OP_MATMUL_BLOCKSCALED  FP8 with f32 scales per block: A[M,K] scaled per 1 x scale_block_k
 *                             (a_scale is [ceil(K/scale_block_k), M] row-major: the scales of one
 *                             k block are contiguous, M-major, the layout cuBLASLt's VEC128 mode
 *                             and DeepGEMM read and per-token quantizers write for them; A's scale
 *                             of row i, k block q is a_scale[q * M + i]), B per
 *                             scale_block_n x scale_block_k (b_scale is [ceil(N/bn), ceil(K/bk)]
 *                             row-major, blocks over B's N and K). Typical: bk = bn = 128.
 *                             C = sum_k (a_scale * A) * (b_scale * B). croq measures it with e4m3
 *                             inputs, bf16 output, bk = bn = 128, scale_block_m = 1, B stored
 *                             [N,K] (b_layout CROQ_COL_MAJOR), scale_mode CROQ_SCALE_BLOCK; shape
 *                             keys blockscaled_e4m3bf16_<M>x<N>x<K>.
 *   CROQ_OP_GROUPED_MATMUL    reserved.
 * Per-tensor scales (CROQ_SCALE_TENSOR, any operator with fp8 inputs): a_scale and b_scale point to
 * one f32 each (device memory), C = a_scale * b_scale * (A * B). croq passes them for dense matmul
 * with e4m3 inputs (so an e4m3 candidate exports croq_gemm: version 1 cannot receive scales); other
 * problems, the 2:4 sparse operator with e4m3 inputs included, get CROQ_SCALE_NONE. Where there are
 * scales, the e4m3 inputs span the format's range (magnitudes up to 448) and the scales several
 * orders of magnitude: a kernel that ignores or misplaces them fails verification.
 *
 * dtype pairs: f16->f16, f16->f32, bf16->bf16, bf16->f32, e4m3->f16, e4m3->bf16, e4m3->f32, f32,
 * tf32; accumulation in f32. b_layout as in version 1: CROQ_ROW_MAJOR (B is [K,N], ldb = N) or
 * CROQ_COL_MAJOR ("row.col": B stored as [N,K] row-major, ldb = K, the form fp8 and sparse tensor
 * core kernels read; croq tries it first for the sparse operator and fp8 inputs, and the other
 * layout when the candidate answers CROQ_UNSUPPORTED).
 *
 * The same rules as version 1: enqueue everything on `stream`, never synchronise, never allocate per
 * call, no vendor GEMM library (cuBLAS, cuBLASLt, cuSPARSELt, CUTLASS device GEMMs), no reading of C
 * before writing it. croq_gemm_prepare is the exception for the first rule: it runs once per input
 * set before anything is timed, may synchronise (croq synchronises after it anyway), and sees A, its
 * metadata and its scales only (operands->b, c, workspace and a_prepared are NULL). croq calls it for
 * CROQ_OP_MATMUL_SPARSE24 only, whose A is a weight compressed once as a deployment does; for the
 * other operators A is an activation, so croq never calls it, a_prepared is NULL, and the
 * measurement's warnings say so: work on A belongs in the timed croq_gemm.
 *
 * Sketch of a sparse candidate without prepare (host pointers, f32, B row-major):
 *
 *   CROQ_EXPORT croq_status croq_gemm(const croq_gemm_desc* d, const croq_gemm_operands* o, void* stream) {
 *     if (d->op != CROQ_OP_MATMUL_SPARSE24 || d->a_type != CROQ_F32 || d->b_layout != CROQ_ROW_MAJOR)
 *       return CROQ_UNSUPPORTED;
 *     const float *a = (const float*)o->a, *b = (const float*)o->b;
 *     for (int64_t i = 0; i < d->m; ++i)
 *       for (int64_t j = 0; j < d->n; ++j) {
 *         float acc = 0.f;
 *         for (int64_t g = 0; g < d->k / 4; ++g) {
 *           unsigned nib = (o->a_meta[i * (d->k / 8) + g / 2] >> (4 * (g % 2))) & 0xF;
 *           int64_t k0 = 4 * g + (nib & 3), k1 = 4 * g + (nib >> 2);
 *           acc += a[i * d->lda + k0] * b[k0 * d->ldb + j] + a[i * d->lda + k1] * b[k1 * d->ldb + j];
 *         }
 *         ((float*)o->c)[i * d->ldc + j] = acc;
 *       }
 *     return CROQ_OK;
 *   }
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
  uint32_t abi_version;  /* CROQ_GEMM_ABI_VERSION (2) */
  uint32_t struct_bytes; /* sizeof(croq_gemm_desc) as the harness was built: fields are only appended */
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
  const void* a;          /* A [M,K] (for the sparse operator: with arbitrary values outside the pattern) */
  const uint8_t* a_meta;  /* CROQ_OP_MATMUL_SPARSE24: the kept positions, [M, K/8] (above); else NULL */
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
/* Optional, as a pair: bytes of prepared A (0: nothing to prepare), and the untimed preparation of
 * A into them from operands->a, a_meta and the scales (b, c, workspace and a_prepared are NULL). */
typedef size_t (*croq_gemm_prepared_bytes_fn)(const croq_gemm_desc* desc);
typedef croq_status (*croq_gemm_prepare_fn)(const croq_gemm_desc* desc, const croq_gemm_operands* operands,
                                            void* a_prepared, size_t a_prepared_bytes, void* stream);

#define CROQ_GEMM_SYMBOL "croq_gemm"
#define CROQ_GEMM_WORKSPACE_SYMBOL "croq_gemm_workspace_bytes"
#define CROQ_GEMM_PREPARED_BYTES_SYMBOL "croq_gemm_prepared_bytes"
#define CROQ_GEMM_PREPARE_SYMBOL "croq_gemm_prepare"

/* The version-2 entry points, declared so that a definition with another signature is a compile
 * error instead of a crash at run time. */
CROQ_EXPORT croq_status croq_gemm(const croq_gemm_desc* desc, const croq_gemm_operands* operands, void* stream);
CROQ_EXPORT size_t croq_gemm_workspace_bytes(const croq_gemm_desc* desc);
CROQ_EXPORT size_t croq_gemm_prepared_bytes(const croq_gemm_desc* desc);
CROQ_EXPORT croq_status croq_gemm_prepare(const croq_gemm_desc* desc, const croq_gemm_operands* operands,
                                          void* a_prepared, size_t a_prepared_bytes, void* stream);

#endif /* CROQ_KERNEL_ABI_H */
