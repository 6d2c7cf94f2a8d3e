"""Basic tiled Triton matmul: croq's tier-A starting point for the triton dsl.

A croq Triton candidate is a Python module exposing

    croq_matmul(problem: dict, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> None

which computes C = A @ B into the preallocated `c` on the current CUDA stream. croq's runner
(src/python/croq_runner.py) allocates the inputs, verifies the result and times it; the module
never checks or times itself. `problem` holds m, n, k, a_type, c_type ("f16", "bf16", "f32"),
b_layout ("row": B is K x N; "col": B is stored N x K) and the leading dimensions lda, ldb, ldc.
Return normally when done; raise NotImplementedError for a problem the kernel does not handle.
An optional croq_kernel_info() returns a dict describing the candidate.

One program computes a BLOCK_M x BLOCK_N tile of C, walking K in BLOCK_K slices with tl.dot
(tensor cores, f32 accumulation); edges are masked so every M, N, K works. Programs are grouped
along M (GROUP_M) so neighbouring programs share B tiles in L2. Fixed configuration, no autotune
(the seeds' rule for iter001 and later).
"""
# croq-kernel: {"dtypes": ["f16f32", "f16", "bf16f32", "bf16"], "rank": 30, "tensor_cores": true, "summary": "tl.dot tiles 128x128x32, grouped program ids"}
import triton
import triton.language as tl

BLOCK_M = 128
BLOCK_N = 128
BLOCK_K = 32
GROUP_M = 8
NUM_WARPS = 4
NUM_STAGES = 3


@triton.jit
def _matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                   stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                   GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    group_size = GROUP_M * num_pid_n
    group_id = pid // group_size
    first_m = group_id * GROUP_M
    rows_in_group = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group_size) % rows_in_group
    pid_n = (pid % group_size) // rows_in_group

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k0 * BLOCK_K
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < k_left) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    c = acc.to(c_ptr.dtype.element_ty)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, c, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def croq_matmul(problem, a, b, c):
    if problem["a_type"] not in ("f16", "bf16"):
        raise NotImplementedError("tiled.py handles f16 and bf16 inputs")
    m, n, k = problem["m"], problem["n"], problem["k"]
    if m == 0 or n == 0:
        return
    if problem["b_layout"] == "col":  # B stored N x K: element (p, j) at b[j, p]
        stride_bk, stride_bn = b.stride(1), b.stride(0)
    else:
        stride_bk, stride_bn = b.stride(0), b.stride(1)
    grid = (triton.cdiv(m, BLOCK_M) * triton.cdiv(n, BLOCK_N),)
    _matmul_kernel[grid](a, b, c, m, n, k,
                         a.stride(0), a.stride(1), stride_bk, stride_bn, c.stride(0), c.stride(1),
                         BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=GROUP_M,
                         num_warps=NUM_WARPS, num_stages=NUM_STAGES)


def croq_kernel_info():
    return {"name": "tiled", "dsl": "triton",
            "params": {"BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N, "BLOCK_K": BLOCK_K, "GROUP_M": GROUP_M,
                       "num_warps": NUM_WARPS, "num_stages": NUM_STAGES}}
