# croq-kernel: {"dtypes": ["f16f32", "f16", "bf16f32", "bf16", "e4m3f16", "e4m3bf16"], "rank": 20, "tensor_cores": true, "summary": "the triton_gemm family's template at its default (128x256x64, 3 stages, 8 warps)"}
"""croq's triton_gemm family (src/croq/search/triton_gemm_family.cpp): one dense GEMM template whose
configuration croq's search chooses (`croq tune --dsl triton`). The constants between the two
configuration marker lines below are the configuration (croq replaces them); the rest is fixed.

  BLOCK_M, BLOCK_N, BLOCK_K   the tile of C one program computes and the depth of one k step
  GROUP_M                     programs grouped along M so that neighbours share B tiles in L2
  NUM_WARPS, NUM_STAGES       Triton's launch options (warps per program, software-pipeline buffers)
  PERSISTENT                  1: one program per SM looping over the tiles; 0: one program per tile
  TMA                         1: A and B read through TMA tensor descriptors (Hopper); 0: pointers
  WARP_SPEC                   1: the persistent tile loop warp-specialised (producer/consumer warps)
  SPLIT_K                     k slices per tile, each a program writing f32 partial sums to a
                              workspace, added in slice order by a second kernel
  C_TMA                       1: the persistent TMA kernel stores C through a TMA descriptor, two
                              halves of the tile from shared memory (the store drains while the
                              next tile loads); 0: stores from registers

The candidate contract is croq's (docs/dsl.md): croq_matmul(problem, a, b, c) computes C = A @ B
into `c` on the current stream; B is K x N ("row") or stored N x K ("col"). e4m3 inputs (B stored
N x K, the layout FP8 tensor cores read) come with per-tensor scales, problem["a_scale"] and
problem["b_scale"] (one-element f32 tensors): C = a_scale * b_scale * (A @ B), the f32 accumulator
scaled before the store (after the slices' sum with split-K). No autotune: the configuration is
fixed (the croq-tune skill's rule for every iteration after iter000).
"""
import torch
import triton
import triton.language as tl

# @CROQ_CONFIG@ begin: the configuration (this file as it stands: Triton's tutorial tile, the family's default for large problems before Hopper)
BLOCK_M = 128
BLOCK_N = 256
BLOCK_K = 64
GROUP_M = 8
NUM_WARPS = 8
NUM_STAGES = 3
PERSISTENT = 0
TMA = 0
WARP_SPEC = 0
SPLIT_K = 1
C_TMA = 0
CROQ_PARAMS = {"BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N, "BLOCK_K": BLOCK_K, "GROUP_M": GROUP_M, "NUM_WARPS": NUM_WARPS, "NUM_STAGES": NUM_STAGES, "PERSISTENT": PERSISTENT, "TMA": TMA, "WARP_SPEC": WARP_SPEC, "SPLIT_K": SPLIT_K, "C_TMA": C_TMA}
# @CROQ_CONFIG@ end

try:  # host-side TMA descriptors (Triton >= 3.3)
    from triton.tools.tensor_descriptor import TensorDescriptor
except ImportError:  # pragma: no cover - an older Triton has no TMA path
    TensorDescriptor = None


@triton.jit
def _croq_tile_of(tile_id, num_pid_m, num_pid_n, GROUP_M: tl.constexpr):
    group_size = GROUP_M * num_pid_n
    group_id = tile_id // group_size
    first_m = group_id * GROUP_M
    rows = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (tile_id % group_size) % rows
    pid_n = (tile_id % group_size) // rows
    return pid_m, pid_n


@triton.jit
def _croq_mm(a_ptr, b_ptr, c_ptr, sa_ptr, sb_ptr, M, N, K,
             stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn, stride_cs,
             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
             SPLIT_K: tl.constexpr, EVEN_K: tl.constexpr, SCALED: tl.constexpr):
    """One program per tile (and per k slice when SPLIT_K > 1)."""
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    pid_m, pid_n = _croq_tile_of(tl.program_id(0), num_pid_m, num_pid_n, GROUP_M)
    k_tiles = tl.cdiv(K, BLOCK_K)
    k_per = tl.cdiv(k_tiles, SPLIT_K)
    k_lo = tl.program_id(1) * k_per
    k_hi = min(k_lo + k_per, k_tiles)

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    am = tl.max_contiguous(tl.multiple_of(tl.where(offs_m < M, offs_m, 0), BLOCK_M), BLOCK_M)
    bn = tl.max_contiguous(tl.multiple_of(tl.where(offs_n < N, offs_n, 0), BLOCK_N), BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for kt in range(k_lo, k_hi):
        kk = kt * BLOCK_K + offs_k
        a_ptrs = a_ptr + am[:, None] * stride_am + kk[None, :] * stride_ak
        b_ptrs = b_ptr + kk[:, None] * stride_bk + bn[None, :] * stride_bn
        if EVEN_K:
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs)
        else:
            a = tl.load(a_ptrs, mask=kk[None, :] < K, other=0.0)
            b = tl.load(b_ptrs, mask=kk[:, None] < K, other=0.0)
        acc = tl.dot(a, b, acc)

    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    if SPLIT_K == 1:
        if SCALED:
            acc = acc * (tl.load(sa_ptr) * tl.load(sb_ptr))
        c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
        tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=mask)
    else:  # f32 partial sums into slice program_id(1) of the workspace
        w_ptrs = c_ptr + tl.program_id(1) * stride_cs + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
        tl.store(w_ptrs, acc, mask=mask)


@triton.jit
def _croq_mm_persistent(a_ptr, b_ptr, c_ptr, sa_ptr, sb_ptr, M, N, K,
                        stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                        NUM_PROGRAMS: tl.constexpr, EVEN_K: tl.constexpr, SCALED: tl.constexpr):
    """One program per SM, looping over the tiles."""
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_tiles = num_pid_m * num_pid_n
    k_tiles = tl.cdiv(K, BLOCK_K)
    offs_k = tl.arange(0, BLOCK_K)
    for tile_id in tl.range(tl.program_id(0), num_tiles, NUM_PROGRAMS):
        pid_m, pid_n = _croq_tile_of(tile_id, num_pid_m, num_pid_n, GROUP_M)
        offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        am = tl.max_contiguous(tl.multiple_of(tl.where(offs_m < M, offs_m, 0), BLOCK_M), BLOCK_M)
        bn = tl.max_contiguous(tl.multiple_of(tl.where(offs_n < N, offs_n, 0), BLOCK_N), BLOCK_N)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for kt in range(k_tiles):
            kk = kt * BLOCK_K + offs_k
            a_ptrs = a_ptr + am[:, None] * stride_am + kk[None, :] * stride_ak
            b_ptrs = b_ptr + kk[:, None] * stride_bk + bn[None, :] * stride_bn
            if EVEN_K:
                a = tl.load(a_ptrs)
                b = tl.load(b_ptrs)
            else:
                a = tl.load(a_ptrs, mask=kk[None, :] < K, other=0.0)
                b = tl.load(b_ptrs, mask=kk[:, None] < K, other=0.0)
            acc = tl.dot(a, b, acc)
        if SCALED:
            acc = acc * (tl.load(sa_ptr) * tl.load(sb_ptr))
        c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
        tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def _croq_mm_tma(a_desc, b_desc, c_ptr, sa_ptr, sb_ptr, M, N, K, stride_cm, stride_cn,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                 B_COL: tl.constexpr, SCALED: tl.constexpr):
    """One program per tile; A and B through TMA descriptors (out-of-range elements read as zero)."""
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    pid_m, pid_n = _croq_tile_of(tl.program_id(0), num_pid_m, num_pid_n, GROUP_M)
    off_m = pid_m * BLOCK_M
    off_n = pid_n * BLOCK_N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for kt in range(tl.cdiv(K, BLOCK_K)):
        a = a_desc.load([off_m, kt * BLOCK_K])
        if B_COL:
            b = b_desc.load([off_n, kt * BLOCK_K])
            acc = tl.dot(a, b.T, acc)
        else:
            b = b_desc.load([kt * BLOCK_K, off_n])
            acc = tl.dot(a, b, acc)
    if SCALED:
        acc = acc * (tl.load(sa_ptr) * tl.load(sb_ptr))
    offs_m = off_m + tl.arange(0, BLOCK_M)
    offs_n = off_n + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def _croq_mm_tma_persistent(a_desc, b_desc, c_ptr, c_desc, sa_ptr, sb_ptr, M, N, K, stride_cm, stride_cn,
                            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                            GROUP_M: tl.constexpr, B_COL: tl.constexpr, NUM_PROGRAMS: tl.constexpr,
                            WARP_SPEC: tl.constexpr, SCALED: tl.constexpr, C_TMA: tl.constexpr):
    """One program per SM looping over the tiles, TMA loads; WARP_SPEC: the loop warp-specialised;
    C_TMA: C stored through the descriptor c_desc (blocks of BLOCK_M x BLOCK_N/2), else through c_ptr."""
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_tiles = num_pid_m * num_pid_n
    k_tiles = tl.cdiv(K, BLOCK_K)
    for tile_id in tl.range(tl.program_id(0), num_tiles, NUM_PROGRAMS, flatten=False, warp_specialize=WARP_SPEC):
        pid_m, pid_n = _croq_tile_of(tile_id, num_pid_m, num_pid_n, GROUP_M)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for kt in range(k_tiles):
            a = a_desc.load([off_m, kt * BLOCK_K])
            if B_COL:
                b = b_desc.load([off_n, kt * BLOCK_K])
                acc = tl.dot(a, b.T, acc)
            else:
                b = b_desc.load([kt * BLOCK_K, off_n])
                acc = tl.dot(a, b, acc)
        offs_m = off_m + tl.arange(0, BLOCK_M)
        offs_n = off_n + tl.arange(0, BLOCK_N)
        if SCALED:
            acc = acc * (tl.load(sa_ptr) * tl.load(sb_ptr))
        if C_TMA:
            # Two halves of the tile, each through shared memory and a TMA store (out-of-range rows and
            # columns are clipped by the descriptor).
            halves = tl.permute(tl.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2)), (0, 2, 1))
            acc0, acc1 = tl.split(halves)
            c_desc.store([off_m, off_n], acc0.to(c_desc.dtype))
            c_desc.store([off_m, off_n + BLOCK_N // 2], acc1.to(c_desc.dtype))
        else:
            c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
            tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def _croq_mm_splitk_reduce(w_ptr, c_ptr, sa_ptr, sb_ptr, M, N, stride_cm, stride_cn, SPLIT_K: tl.constexpr,
                           BLOCK: tl.constexpr, SCALED: tl.constexpr):
    """C = the sum of the SPLIT_K partial products, added in slice order (deterministic), scaled."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < M * N
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for s in tl.static_range(SPLIT_K):
        acc += tl.load(w_ptr + s * M * N + offs, mask=mask, other=0.0)
    if SCALED:
        acc = acc * (tl.load(sa_ptr) * tl.load(sb_ptr))
    row = offs // N
    col = offs % N
    tl.store(c_ptr + row * stride_cm + col * stride_cn, acc.to(c_ptr.dtype.element_ty), mask=mask)


_SMS = {}
_WORKSPACE = {}
_DESCRIPTORS = {}


def _num_sms(device):
    key = device.index if device.index is not None else torch.cuda.current_device()
    if key not in _SMS:
        _SMS[key] = torch.cuda.get_device_properties(key).multi_processor_count
    return _SMS[key]


def _descriptor(t, block):
    """A TMA descriptor per tensor and block shape, made once (not on every launch)."""
    key = (t.data_ptr(), tuple(t.shape), tuple(t.stride()), t.dtype, tuple(block))
    d = _DESCRIPTORS.get(key)
    if d is None:
        if len(_DESCRIPTORS) > 64:
            _DESCRIPTORS.clear()
        d = TensorDescriptor.from_tensor(t, list(block))
        _DESCRIPTORS[key] = d
    return d


def croq_matmul(problem, a, b, c):
    scaled = problem["a_type"] == "e4m3"
    if problem["a_type"] not in ("f16", "bf16", "e4m3"):
        raise NotImplementedError("the triton_gemm family computes f16, bf16 and e4m3 inputs")
    b_col = problem["b_layout"] == "col"
    if scaled and (problem.get("scale_mode") != "tensor" or not b_col):
        raise NotImplementedError("the triton_gemm family computes e4m3 with per-tensor scales and B stored N x K")
    # The scales (one-element f32 tensors on the device) or, unscaled, any pointer the kernels ignore.
    sa, sb = (problem["a_scale"], problem["b_scale"]) if scaled else (c, c)
    m, n, k = problem["m"], problem["n"], problem["k"]
    if m == 0 or n == 0:
        return
    opts = {"num_warps": NUM_WARPS, "num_stages": NUM_STAGES}
    tiles = triton.cdiv(m, BLOCK_M) * triton.cdiv(n, BLOCK_N)
    even_k = k % BLOCK_K == 0
    if TMA:
        if TensorDescriptor is None:
            raise RuntimeError("TMA=1 needs triton.tools.tensor_descriptor (Triton >= 3.3)")
        a_desc = _descriptor(a, (BLOCK_M, BLOCK_K))
        b_desc = _descriptor(b, (BLOCK_N, BLOCK_K) if b_col else (BLOCK_K, BLOCK_N))
        if PERSISTENT:
            programs = min(_num_sms(a.device), tiles)
            c_desc = _descriptor(c, (BLOCK_M, BLOCK_N // 2)) if C_TMA else None
            _croq_mm_tma_persistent[(programs,)](a_desc, b_desc, c, c_desc, sa, sb, m, n, k, c.stride(0), c.stride(1),
                                                 BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=GROUP_M,
                                                 B_COL=b_col, NUM_PROGRAMS=programs, WARP_SPEC=bool(WARP_SPEC),
                                                 SCALED=scaled, C_TMA=bool(C_TMA), **opts)
        else:
            _croq_mm_tma[(tiles,)](a_desc, b_desc, c, sa, sb, m, n, k, c.stride(0), c.stride(1),
                                   BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=GROUP_M, B_COL=b_col,
                                   SCALED=scaled, **opts)
        return
    if b_col:  # B stored N x K: element (p, j) at b[j, p]
        stride_bk, stride_bn = b.stride(1), b.stride(0)
    else:
        stride_bk, stride_bn = b.stride(0), b.stride(1)
    if PERSISTENT:
        programs = min(_num_sms(a.device), tiles)
        _croq_mm_persistent[(programs,)](a, b, c, sa, sb, m, n, k, a.stride(0), a.stride(1), stride_bk, stride_bn,
                                         c.stride(0), c.stride(1), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                                         GROUP_M=GROUP_M, NUM_PROGRAMS=programs, EVEN_K=even_k, SCALED=scaled, **opts)
        return
    if SPLIT_K == 1:
        _croq_mm[(tiles, 1)](a, b, c, sa, sb, m, n, k, a.stride(0), a.stride(1), stride_bk, stride_bn,
                             c.stride(0), c.stride(1), 0, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                             GROUP_M=GROUP_M, SPLIT_K=1, EVEN_K=even_k, SCALED=scaled, **opts)
        return
    key = (a.device, m, n, SPLIT_K)  # a module whose constants change (a brute force) gets the right size
    w = _WORKSPACE.get(key)
    if w is None:  # made at the first call, reused by every later one
        w = torch.empty((SPLIT_K, m, n), device=a.device, dtype=torch.float32)
        _WORKSPACE[key] = w
    _croq_mm[(tiles, SPLIT_K)](a, b, w, sa, sb, m, n, k, a.stride(0), a.stride(1), stride_bk, stride_bn,
                               w.stride(1), w.stride(2), w.stride(0), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
                               BLOCK_K=BLOCK_K, GROUP_M=GROUP_M, SPLIT_K=SPLIT_K, EVEN_K=even_k, SCALED=False, **opts)
    block = 1024
    _croq_mm_splitk_reduce[(triton.cdiv(m * n, block),)](w, c, sa, sb, m, n, c.stride(0), c.stride(1),
                                                         SPLIT_K=SPLIT_K, BLOCK=block, SCALED=scaled, num_warps=4)


def croq_kernel_info():
    return {"name": "triton_gemm", "dsl": "triton", "family": "triton_gemm", "params": dict(CROQ_PARAMS)}
