"""A hopper_gemm configuration as a complete CUDA source, the way the family renders it
(src/croq/search/gemm_family_common.cpp, render_config): its parameters as CROQ_<NAME> macros in the
family's order, the dtype and B-layout masks, a #line directive and the template. For the bench
scripts that build recorded or hand-named configurations outside a tune."""
import os

ORDER = ["BM", "BN", "BK", "STAGES", "CONSUMERS", "PINGPONG", "MMA_DEPTH", "CLUSTER_M", "CLUSTER_N",
         "PERSISTENT", "RASTER", "GROUP", "SPLIT_K", "STREAM_K", "EPILOGUE", "SWIZZLE", "PROMOTE_EVERY", "SCALE_STAGE"]
# Parameters the family added after configurations were recorded, and the value such a recorded
# configuration is read with (ParamSpec::recorded_default).
RECORDED_DEFAULTS = {"STREAM_K": "0", "PROMOTE_EVERY": "1", "SCALE_STAGE": "0"}
DTYPE_BITS = {"f16fp32": 1, "f16": 2, "bf16fp32": 4, "bf16": 8}
# The configuration the hand-named lists (bench/gpu/gemm_configs*.txt) state their changes from:
# cooperative 128x256, 4 stages, persistent, register epilogue.
HAND_BASE = dict(BM="128", BN="256", BK="64", STAGES="4", CONSUMERS="2", PINGPONG="0", MMA_DEPTH="1", CLUSTER_M="1",
                 CLUSTER_N="1", PERSISTENT="1", RASTER="1", GROUP="8", SPLIT_K="1", STREAM_K="0", EPILOGUE="0",
                 SWIZZLE="128")


# e4m3 inputs (ELEM_BYTES 1, B "row.col"): dense keys promote (two-level accumulation) above this K
# (hopper_gemm_family.cpp, k_fp8_promote_k); block-scaled keys always do, one scale block per stage.
DTYPE_BITS.update({"e4m3f16": 16, "e4m3bf16": 32})
FP8_PROMOTE_K = 4096


def render(repo, params, shape_key, comment, template=None, defines=None):
    """params: every name of ORDER (RECORDED_DEFAULTS fill in the newer ones); shape_key:
    matmul_<dtype>_<M>x<N>x<K> (B row-major), e4m3 dense (matmul_e4m3bf16_..., B "row.col") or
    blockscaled_e4m3bf16_<M>x<N>x<K>; template: another copy of the template (an older commit's, to
    compare in one run), else the repository's; defines: template macros the family does not set
    ({"CROQ_BS_GROUP": "4"}), written after the family's."""
    params = {**RECORDED_DEFAULTS, **params}
    missing = [n for n in ORDER if n not in params]
    extra = sorted(set(params) - set(ORDER))
    if missing or extra:
        raise ValueError(f"{shape_key}: not the hopper family's parameters (missing {missing}, unknown {extra})")
    template = open(template or os.path.join(repo, "kernels/cuda/matmul/hopper/gemm_sm90.cu")).read()
    op, dtype, shape = shape_key.split("_")[:3]
    text = f"// {comment}\n" + "".join(f"#define CROQ_{n} {params[n]}\n" for n in ORDER)
    if dtype.startswith("e4m3"):
        text += "#define CROQ_ELEM_BYTES 1\n"
        if op == "blockscaled":
            text += "#define CROQ_BLOCKSCALE 1\n"
        elif int(shape.split("x")[2]) > FP8_PROMOTE_K:
            text += "#define CROQ_PROMOTE 1\n"
        text += f"#define CROQ_DTYPES {DTYPE_BITS[dtype]}\n#define CROQ_BLAYOUTS 2\n"
    else:
        text += f"#define CROQ_DTYPES {DTYPE_BITS[dtype]}\n#define CROQ_BLAYOUTS 1\n"
    text += "".join(f"#define {k} {v}\n" for k, v in (defines or {}).items())
    return text + "#line 1 \"gemm_sm90.cu\"\n" + template


def describe(params):
    params = {**RECORDED_DEFAULTS, **params}
    return " ".join(f"{n}={params[n]}" for n in ORDER)


# The hopper_gemm_sp family (src/croq/search/hopper_gemm_sp_family.cpp): its parameters in the
# family's order, the dtype bits of its keys, and the configuration the hand-named gemm_sp lists
# state their changes from: the family's default at 4096x8192x8192 (cooperative 128x256, 2x1
# cluster, TMA stores; BK 64 for f16 and 128 for e4m3).
SP_ORDER = ["BM", "BN", "BK", "STAGES", "CONSUMERS", "PINGPONG", "PERSISTENT", "RASTER", "GROUP", "CLUSTER_M",
            "CLUSTER_N", "EPILOGUE", "SWIZZLE_A", "SWIZZLE_B", "MMA_DEPTH", "META", "SPLIT_K", "SPLIT_TAIL", "PROMOTE",
            "PROMOTE_SUB"]
SP_DTYPE_BITS = {"f16fp32": 1, "f16": 2, "bf16fp32": 4, "bf16": 8, "e4m3fp16": 16, "e4m3bf16": 32, "e4m3fp32": 64}
SP_HAND_BASE = dict(BM="128", BN="256", BK="64", STAGES="4", CONSUMERS="2", PINGPONG="0", PERSISTENT="1", RASTER="1",
                    GROUP="8", CLUSTER_M="2", CLUSTER_N="1", EPILOGUE="1", SWIZZLE_A="64", SWIZZLE_B="128",
                    MMA_DEPTH="1", META="1", SPLIT_K="1", SPLIT_TAIL="0", PROMOTE="0", PROMOTE_SUB="0")


def sp_base(shape_key):
    """SP_HAND_BASE for a gemm_sp key: BK 128 for e4m3 inputs (two k64 WGMMAs per stage)."""
    base = dict(SP_HAND_BASE)
    if shape_key.split("_")[2].startswith("e4m3"):
        base["BK"] = "128"
    return base


def render_sp(repo, params, shape_key, comment, template=None, defines=None):
    """A hopper_gemm_sp configuration for gemm_sp_<dtype>_<M>x<N>x<K>: params names every SP_ORDER
    parameter; template and defines as render()."""
    missing = [n for n in SP_ORDER if n not in params]
    extra = sorted(set(params) - set(SP_ORDER))
    if missing or extra:
        raise ValueError(f"{shape_key}: not the hopper_gemm_sp family's parameters (missing {missing}, unknown {extra})")
    template = open(template or os.path.join(repo, "kernels/cuda/gemm_sp/hopper/gemm_sp_sm90.cu")).read()
    dtype = shape_key.split("_")[2]
    text = f"// {comment}\n" + "".join(f"#define CROQ_{n} {params[n]}\n" for n in SP_ORDER)
    text += f"#define CROQ_DTYPES {SP_DTYPE_BITS[dtype]}\n"
    text += "".join(f"#define {k} {v}\n" for k, v in (defines or {}).items())
    return text + "#line 1 \"gemm_sp_sm90.cu\"\n" + template


def describe_sp(params):
    return " ".join(f"{n}={params[n]}" for n in SP_ORDER)
