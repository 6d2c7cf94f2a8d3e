#!/usr/bin/env python3
"""croq's runner for Python-DSL candidates (Triton): verifies and times a candidate module the
same way croq's C++ runner does, and writes the same measurement document (croq-measurement-v1).

A candidate is a Python module exposing

    croq_matmul(problem: dict, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> None

that computes C = A @ B into the preallocated `c` on the current CUDA stream (B is K x N when
problem["b_layout"] == "row", stored N x K when "col"), raising NotImplementedError for problems it
does not handle, and optionally croq_kernel_info() -> dict. The runner owns everything else:
inputs (fresh random values from a recorded seed, never zeros), the output poisoned with NaN, the
reference (torch, f32 accumulation, computed by the runner, never by the candidate), the
verification (element-wise |got - want| <= base_tol + rel_tol * |want| plus a normwise relative
error), a second seed, timing with CUDA events with the L2 cache flushed before every repetition,
the noise-based stopping rule, and a re-check of the output after timing.

Pure implementation rule: a candidate may not hand the core compute to a library. The runner
refuses torch.matmul / mm / bmm / addmm / einsum / linear / the `@` operator, torch.ops.*,
triton.ops.* and flash-attn-like packages twice: by reading the source (AST) before anything runs,
and at run time, by replacing those functions with ones that record the call and raise while the
candidate's code runs (including its import).

Modes:
  croq_runner.py --check FILE
      parse, AST purity check, then import in a child process; one JSON line on stdout
      {ok, stage, errors, findings, warnings}; exit 0 (ok), 2 (does not parse / import), 3 (forbidden).
  croq_runner.py --rules JSON --candidate FILE --m M --n N --k K --dtype DTYPE [--b-layout row|col] ...
      measures; writes the measurement JSON to --out (and stdout). --rules is croq's measurement
      rules document (dtypes, tolerances, timing defaults, peak table; croq-measurement-rules-v1),
      which croq measure passes and `croq-cpu-runner --print-rules` prints: this file holds no copy.
      --mode profile: one more launch inside the NVTX range croq_candidate (croq profile). FILE may also be a shared object
      implementing include/croq/kernel_abi.h (called through ctypes: a cross-check of the C++
      runner). By default the measurement runs
      in a child process with a time limit, so a crash (SEGFAULT) or a hang (HANG) becomes a
      verdict. Exit 0 for PASS, 8 for any other verdict, 2 for bad arguments.
"""
import argparse
import ast
import builtins
import datetime
import hashlib
import importlib.abc
import importlib.util
import json
import math
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import traceback

_STARTED = time.perf_counter()  # the process's start, near enough (reported with croq's gate)

SCHEMA = "croq-measurement-v1"
EXIT_OK, EXIT_USAGE, EXIT_FORBIDDEN_CHECK, EXIT_CANDIDATE = 0, 2, 3, 8

# ---------------------------------------------------------------------------------------------
# The measurement rules: dtypes, tolerances, timing defaults and the peak table come from croq's
# C++ tables (src/croq/measure/rules.hpp), passed as `--rules JSON` (croq measure does; by hand:
# --rules "$(croq-cpu-runner --print-rules)"). This file holds no copy of them.

RULES_SCHEMA = "croq-measurement-rules-v1"


class Rules:
    def __init__(self, doc):
        if not isinstance(doc, dict) or doc.get("schema") != RULES_SCHEMA:
            raise ValueError("the rules are not a %s document" % RULES_SCHEMA)
        for part in ("dtypes", "timing", "peak"):
            if not isinstance(doc.get(part), dict):
                raise ValueError("the rules have no %r table" % part)
        self.doc = doc
        self.dtypes = doc["dtypes"]
        self.timing = doc["timing"]
        self.peak = doc["peak"]

    def dtype(self, token):
        """The dtype entry of a spelling: {canonical, input, output, compute, peak_column, tolerance}."""
        entry = self.dtypes.get(str(token).lower())
        if entry is None:
            raise ValueError("unknown dtype %r (known: %s)" % (token, ", ".join(self.dtypes)))
        return entry

    def tolerance(self, token):
        t = self.dtype(token)["tolerance"]
        return {"base_tol": t["base_tol"], "rel_tol": t["rel_tol"], "normwise": t["normwise"], "rule": t["rule"]}

    def peak_tflops(self, name, cc_major, cc_minor, sm_count, max_clock_mhz, token):
        """The device's dense peak for the dtype (the same rows and estimate as measure/peak.cpp)."""
        column = self.dtype(token)["peak_column"]
        lower = (name or "").lower()
        for row in self.peak["rows"]:
            if row["contains"] not in lower:
                continue
            if row["excludes"] and row["excludes"] in lower:
                continue
            if row["cc_major"] != cc_major or row["cc_minor"] != cc_minor:
                continue
            return row["tflops"][column]
        est = self.peak["estimate"]
        per = self.peak["f16_flop_per_sm_clock"].get("%d.%d" % (cc_major, cc_minor),
                                                     self.peak["f16_flop_per_sm_clock_default"])
        clock_ghz = (max_clock_mhz if max_clock_mhz and max_clock_mhz > 0 else est["default_clock_mhz"]) / 1000.0
        if column == "f32":
            return (sm_count or 0) * clock_ghz * est["f32_flop_per_sm_clock"] / 1000.0
        return (sm_count or 0) * clock_ghz * per / 1000.0 * est["factor"][column]


def load_rules(text):
    """--rules: the JSON document itself, or the path of a file holding it."""
    text = (text or "").strip()
    if not text.startswith("{"):
        with open(text, encoding="utf-8") as f:
            text = f.read()
    return Rules(json.loads(text))


# ---------------------------------------------------------------------------------------------
# Verification: the figures and the verdict, one formula for every array kind (torch tensors on
# the device, plain Python lists in croq's tests), the same as measure/tolerance.cpp's
# compare_host: an element fails when !(|got - want| <= base_tol + rel_tol * |want|); a NaN or
# infinite output is counted apart; the normwise error ||got - want|| / ||want|| sums the finite
# elements; max_rel_err is taken where |want| >= base_tol; passed = no mismatch, no NaN and a
# finite normwise error within the limit.

class ListOps:
    """Flat lists of floats."""

    def size(self, x):
        return len(x)

    def abs(self, x):
        return [abs(v) for v in x]

    def sub(self, a, b):
        return [u - v if math.isfinite(u) else float("nan") for u, v in zip(a, b)]

    def affine(self, x, scale, offset):
        return [offset + scale * v for v in x]

    def isfinite(self, x):
        return [math.isfinite(v) for v in x]

    def le(self, a, b):
        return [u <= v for u, v in zip(a, b)]

    def ge(self, a, b_scalar):
        return [u >= b_scalar for u in a]

    def and_(self, a, b):
        return [u and v for u, v in zip(a, b)]

    def count(self, mask):
        return sum(1 for v in mask if v)

    def where(self, mask, a, fill):
        return [u if m else fill for m, u in zip(mask, a)]

    def div(self, a, b):
        return [u / v if v != 0 else (0.0 if u == 0 else float("inf")) for u, v in zip(a, b)]

    def max(self, x):
        return max(x) if x else 0.0

    def sumsq(self, x):
        return math.fsum(v * v for v in x)

    def topk(self, x, k):
        order = sorted(range(len(x)), key=lambda i: (-x[i], i))[:k]
        return order

    def item(self, x, i):
        return x[i]


class TorchOps:
    """torch tensors (flat, float64) on any device."""

    def __init__(self, torch):
        self.torch = torch

    def size(self, x):
        return int(x.numel())

    def abs(self, x):
        return x.abs()

    def sub(self, a, b):
        return a - b

    def affine(self, x, scale, offset):
        return x * scale + offset

    def isfinite(self, x):
        return self.torch.isfinite(x)

    def le(self, a, b):
        return a <= b

    def ge(self, a, b_scalar):
        return a >= b_scalar

    def and_(self, a, b):
        return a & b

    def count(self, mask):
        return int(mask.sum().item())

    def where(self, mask, a, fill):
        return self.torch.where(mask, a, self.torch.full_like(a, fill))

    def div(self, a, b):
        return a / b

    def max(self, x):
        return float(x.max().item()) if x.numel() else 0.0

    def sumsq(self, x):
        return float((x * x).sum().item())

    def topk(self, x, k):
        k = min(k, int(x.numel()))
        if k == 0:
            return []
        vals, idx = self.torch.topk(x, k)
        pairs = sorted(zip(vals.tolist(), idx.tolist()), key=lambda p: (-p[0], p[1]))
        return [int(i) for _, i in pairs]

    def item(self, x, i):
        return float(x[i].item())


def verification_figures(ops, got, want, tol, cols, worst_n=8):
    """got, want: flat arrays (row-major, `cols` columns) of the output as read back and of the f32
    reference. Returns the verification fields of the measurement document."""
    base, rel = tol["base_tol"], tol["rel_tol"]
    n = ops.size(got)
    aw = ops.abs(want)
    limit = ops.affine(aw, rel, base)
    finite = ops.isfinite(got)
    d = ops.abs(ops.sub(got, want))
    mismatches = n - ops.count(ops.le(d, limit))  # the negated test: a NaN fails
    nan_count = n - ops.count(finite)
    d_finite = ops.where(finite, d, 0.0)
    max_abs = ops.max(d_finite)
    max_rel = ops.max(ops.where(ops.and_(finite, ops.ge(aw, base)), ops.div(d_finite, aw), 0.0))
    sum_d2, sum_w2 = ops.sumsq(d_finite), ops.sumsq(want)
    if sum_w2 > 0:
        normwise = math.sqrt(sum_d2 / sum_w2)
    else:
        normwise = float("inf") if sum_d2 > 0 else 0.0
    score = ops.where(finite, ops.div(d_finite, limit), float("inf"))
    worst = []
    for i in ops.topk(score, worst_n):
        r, col = divmod(int(i), cols)
        worst.append({"i": r, "j": col, "got": _num(ops.item(got, i)), "want": _num(ops.item(want, i))})
    fig = {"elements": n, "mismatches": mismatches, "max_abs_err": _num(max_abs), "max_rel_err": _num(max_rel),
           "normwise_rel_err": _num(normwise), "worst": worst, "nan_count": nan_count}
    fig["passed"] = verdict_passed(mismatches, nan_count, normwise, tol)
    return fig


def verdict_passed(mismatches, nan_count, normwise, tol):
    return mismatches == 0 and nan_count == 0 and math.isfinite(normwise) and normwise <= tol["normwise"]


# ---------------------------------------------------------------------------------------------
# Purity: the static (AST) check

FORBIDDEN_TORCH = {"matmul", "mm", "bmm", "addmm", "addbmm", "baddbmm", "einsum", "tensordot",
                   "chain_matmul", "mv", "addmv", "linalg.matmul", "linalg.multi_dot",
                   "nn.functional.linear", "nn.functional.bilinear", "_C._nn.linear"}
FORBIDDEN_METHODS = {"matmul", "mm", "bmm", "addmm", "baddbmm", "addbmm", "mv", "addmv",
                     "__matmul__", "__rmatmul__"}
FORBIDDEN_MODULES = ("flash_attn", "xformers", "apex", "triton.ops", "cublas", "cupy")


def _dotted(node, aliases):
    """The dotted name of an attribute chain with import aliases resolved, or None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    base = aliases.get(node.id, node.id)
    return ".".join([base] + list(reversed(parts)))


def _forbidden_name(dotted):
    if dotted is None:
        return None
    if dotted == "torch.ops" or dotted.startswith("torch.ops."):
        return dotted
    if dotted == "triton.ops" or dotted.startswith("triton.ops."):
        return dotted
    if dotted.startswith("torch."):
        rest = dotted[len("torch."):]
        if rest in FORBIDDEN_TORCH:
            return dotted
    for m in FORBIDDEN_MODULES:
        if dotted == m or dotted.startswith(m + "."):
            return dotted
    return None


def static_check(source, filename):
    """Returns (findings, warnings). Each finding: {file, line, rule, what, text}."""
    tree = ast.parse(source, filename=filename)
    lines = source.splitlines()
    findings, warnings = [], []

    def add(node, rule, what):
        line = getattr(node, "lineno", 0)
        text = lines[line - 1].strip() if 0 < line <= len(lines) else ""
        findings.append({"file": filename, "line": line, "rule": rule, "what": what, "text": text[:200]})

    aliases = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if _forbidden_name(a.name) or any(a.name == m or a.name.startswith(m + ".") for m in FORBIDDEN_MODULES):
                    add(node, "forbidden_import", "import " + a.name)
                if a.asname:
                    aliases[a.asname] = a.name
                else:
                    aliases.setdefault(a.name.split(".")[0], a.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.module:
            mod = node.module
            if any(mod == m or mod.startswith(m + ".") for m in FORBIDDEN_MODULES):
                add(node, "forbidden_import", "from %s import ..." % mod)
                continue
            for a in node.names:
                full = mod + "." + a.name
                if _forbidden_name(full):
                    add(node, "forbidden_import", "from %s import %s" % (mod, a.name))
                aliases[a.asname or a.name] = full
    for node in ast.walk(tree):
        if isinstance(node, (ast.BinOp, ast.AugAssign)) and isinstance(node.op, ast.MatMult):
            add(node, "forbidden_call", "@ (matrix multiplication operator)")
        elif isinstance(node, ast.Attribute):
            name = _forbidden_name(_dotted(node, aliases))
            if name:
                add(node, "forbidden_call", name)
        elif isinstance(node, ast.Name) and node.id in aliases:
            name = _forbidden_name(aliases[node.id])
            if name and isinstance(getattr(node, "ctx", None), ast.Load):
                add(node, "forbidden_call", name)
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Attribute) and f.attr in FORBIDDEN_METHODS:
                base = _dotted(f.value, aliases) or ""
                if not (base.startswith("tl") or base.startswith("triton.language")):
                    add(node, "forbidden_call", "." + f.attr + "(...)")
            if isinstance(f, ast.Name) and f.id == "getattr" and len(node.args) >= 2:
                arg = node.args[1]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    if arg.value in FORBIDDEN_METHODS or arg.value == "ops" or arg.value in FORBIDDEN_TORCH:
                        add(node, "forbidden_call", "getattr(..., %r)" % arg.value)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for d in node.decorator_list:
                target = d.func if isinstance(d, ast.Call) else d
                if (_dotted(target, aliases) or "").endswith("autotune"):
                    warnings.append("%s:%d: @triton.autotune is allowed only in iter000 (pin the best config)"
                                    % (filename, d.lineno))
    # One finding per line and rule (ast.walk meets the outermost attribute of a chain first).
    unique, seen = [], set()
    for f in findings:
        k = (f["line"], f["rule"])
        if k not in seen:
            seen.add(k)
            unique.append(f)
    return unique, warnings


# ---------------------------------------------------------------------------------------------
# Purity: the run-time guard

class ForbiddenCall(RuntimeError):
    pass


class RuntimeGuard:
    """While active, the functions a candidate may not use record the call and raise."""

    def __init__(self, candidate_files):
        self.candidate_files = {os.path.realpath(f) for f in candidate_files}
        self.violations = []
        self._saved = []
        self.active = False

    def _raiser(self, name):
        guard = self

        def forbidden(*args, **kwargs):
            if guard.active:
                guard.violations.append(name)
                raise ForbiddenCall("%s is forbidden in a candidate (pure implementation rule)" % name)
            return guard._original(name)(*args, **kwargs)

        forbidden.__name__ = name.rsplit(".", 1)[-1]
        return forbidden

    def _original(self, name):
        for (obj, attr, value, label) in self._saved:
            if label == name:
                return value
        raise AttributeError(name)

    def _patch(self, obj, attr, label):
        if obj is None or not hasattr(obj, attr):
            return
        self._saved.append((obj, attr, getattr(obj, attr), label))
        try:
            setattr(obj, attr, self._raiser(label))
        except (AttributeError, TypeError):
            self._saved.pop()

    def install(self):
        import torch
        for name in ("matmul", "mm", "bmm", "addmm", "addbmm", "baddbmm", "einsum", "tensordot",
                     "chain_matmul", "mv", "addmv"):
            self._patch(torch, name, "torch." + name)
        self._patch(getattr(torch, "linalg", None), "matmul", "torch.linalg.matmul")
        self._patch(getattr(torch, "linalg", None), "multi_dot", "torch.linalg.multi_dot")
        import torch.nn.functional as F
        self._patch(F, "linear", "torch.nn.functional.linear")
        self._patch(F, "bilinear", "torch.nn.functional.bilinear")
        for name in ("matmul", "mm", "bmm", "addmm", "baddbmm", "addbmm", "mv", "addmv",
                     "__matmul__", "__rmatmul__", "__imatmul__"):
            self._patch(torch.Tensor, name, "Tensor." + name)
        # torch.ops: refused when the candidate's own code reaches for it.
        self._saved.append((torch, "ops", torch.ops, "torch.ops"))
        torch.ops = _OpsProxy(torch.ops, self)
        try:
            import triton
            if hasattr(triton, "ops"):
                self._saved.append((triton, "ops", triton.ops, "triton.ops"))
                triton.ops = _OpsProxy(triton.ops, self, always=True)
        except ImportError:
            pass
        self._finder = _ForbiddenImports(self)
        sys.meta_path.insert(0, self._finder)

    def uninstall(self):
        for (obj, attr, value, _) in reversed(self._saved):
            setattr(obj, attr, value)
        self._saved = []
        if getattr(self, "_finder", None) in sys.meta_path:
            sys.meta_path.remove(self._finder)

    def __enter__(self):
        self.active = True
        return self

    def __exit__(self, *exc):
        self.active = False
        return False

    def called_from_candidate(self, depth=2):
        """True when the code reaching for the attribute is the candidate's own (torch's internals
        may use torch.ops themselves)."""
        f = sys._getframe(depth)
        return f is not None and os.path.realpath(f.f_code.co_filename) in self.candidate_files


class _OpsProxy:
    def __init__(self, real, guard, always=False):
        object.__setattr__(self, "_real", real)
        object.__setattr__(self, "_guard", guard)
        object.__setattr__(self, "_always", always)

    def __getattr__(self, name):
        guard = object.__getattribute__(self, "_guard")
        real = object.__getattribute__(self, "_real")
        if guard.active and (object.__getattribute__(self, "_always") or guard.called_from_candidate()):
            label = ("triton.ops." if object.__getattribute__(self, "_always") else "torch.ops.") + name
            guard.violations.append(label)
            raise ForbiddenCall("%s is forbidden in a candidate (pure implementation rule)" % label)
        return getattr(real, name)


class _ForbiddenImports(importlib.abc.MetaPathFinder):
    def __init__(self, guard):
        self.guard = guard

    def find_spec(self, fullname, path, target=None):
        if self.guard.active and any(fullname == m or fullname.startswith(m + ".") for m in FORBIDDEN_MODULES):
            self.guard.violations.append("import " + fullname)
            raise ForbiddenCall("import of %s is forbidden in a candidate (pure implementation rule)" % fullname)
        return None


# ---------------------------------------------------------------------------------------------
# Loading the candidate

def load_module(path):
    name = "croq_candidate_" + hashlib.sha256(os.path.realpath(path).encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError("cannot load %s as a Python module" % path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    sys.path.insert(0, os.path.dirname(os.path.realpath(path)))
    spec.loader.exec_module(mod)
    return mod


class AbiCandidate:
    """A shared object implementing include/croq/kernel_abi.h, called through ctypes: lets this
    runner measure cuda/cpp candidates too (a cross-check of the C++ runner). Version 2's croq_gemm
    is called when exported (with CROQ_OP_MATMUL: this runner measures dense matmul only), else
    version 1's croq_matmul."""

    DTYPE = {"f16": 1, "bf16": 2, "f32": 3, "tf32": 4, "e4m3": 5}

    def __init__(self, path):
        import ctypes
        self.ctypes = ctypes

        class Problem(ctypes.Structure):
            _fields_ = [("abi_version", ctypes.c_uint32), ("m", ctypes.c_int64), ("n", ctypes.c_int64),
                        ("k", ctypes.c_int64), ("a_type", ctypes.c_int), ("b_type", ctypes.c_int),
                        ("c_type", ctypes.c_int), ("compute_type", ctypes.c_int), ("b_layout", ctypes.c_int),
                        ("lda", ctypes.c_int64), ("ldb", ctypes.c_int64), ("ldc", ctypes.c_int64)]

        class GemmDesc(ctypes.Structure):  # croq_gemm_desc (version 2)
            _fields_ = [("abi_version", ctypes.c_uint32), ("struct_bytes", ctypes.c_uint32), ("op", ctypes.c_int),
                        ("m", ctypes.c_int64), ("n", ctypes.c_int64), ("k", ctypes.c_int64),
                        ("a_type", ctypes.c_int), ("b_type", ctypes.c_int), ("c_type", ctypes.c_int),
                        ("compute_type", ctypes.c_int), ("b_layout", ctypes.c_int),
                        ("lda", ctypes.c_int64), ("ldb", ctypes.c_int64), ("ldc", ctypes.c_int64),
                        ("scale_mode", ctypes.c_int), ("scale_block_m", ctypes.c_int32),
                        ("scale_block_n", ctypes.c_int32), ("scale_block_k", ctypes.c_int32),
                        ("reserved", ctypes.c_int32 * 9)]

        class GemmOperands(ctypes.Structure):  # croq_gemm_operands
            _fields_ = [("a", ctypes.c_void_p), ("a_meta", ctypes.c_void_p), ("b", ctypes.c_void_p),
                        ("c", ctypes.c_void_p), ("a_scale", ctypes.c_void_p), ("b_scale", ctypes.c_void_p),
                        ("a_prepared", ctypes.c_void_p), ("a_prepared_bytes", ctypes.c_size_t),
                        ("workspace", ctypes.c_void_p), ("workspace_bytes", ctypes.c_size_t)]

        self.Problem = Problem
        self.GemmDesc = GemmDesc
        self.GemmOperands = GemmOperands
        self.lib = ctypes.CDLL(os.path.realpath(path), mode=getattr(ctypes, "RTLD_LOCAL", 0))
        self.gemm = getattr(self.lib, "croq_gemm", None)
        if self.gemm is not None:
            self.gemm.restype = ctypes.c_int
            self.gemm.argtypes = [ctypes.POINTER(GemmDesc), ctypes.POINTER(GemmOperands), ctypes.c_void_p]
            self.fn = None
        else:
            self.fn = self.lib.croq_matmul
            self.fn.restype = ctypes.c_int
            self.fn.argtypes = [ctypes.POINTER(Problem), ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
        self.info = None
        if hasattr(self.lib, "croq_kernel_info"):
            self.lib.croq_kernel_info.restype = ctypes.c_char_p
            try:
                self.info = json.loads(self.lib.croq_kernel_info().decode())
            except (ValueError, UnicodeDecodeError):
                self.info = None

    def croq_matmul(self, problem, a, b, c):
        import torch
        p = self.Problem(1, problem["m"], problem["n"], problem["k"], self.DTYPE[problem["a_type"]],
                         self.DTYPE[problem["b_type"]], self.DTYPE[problem["c_type"]],
                         self.DTYPE[problem["compute_type"]], 1 if problem["b_layout"] == "col" else 0,
                         problem["lda"], problem["ldb"], problem["ldc"])
        stream = torch.cuda.current_stream().cuda_stream if a.is_cuda else None
        if self.gemm is not None:
            d = self.GemmDesc()
            d.abi_version, d.struct_bytes, d.op = 2, self.ctypes.sizeof(self.GemmDesc), 1  # CROQ_OP_MATMUL
            for f in ("m", "n", "k", "a_type", "b_type", "c_type", "compute_type", "b_layout", "lda", "ldb", "ldc"):
                setattr(d, f, getattr(p, f))
            ops = self.GemmOperands()
            ops.a, ops.b, ops.c = a.data_ptr(), b.data_ptr(), c.data_ptr()
            if problem.get("scale_mode") == "tensor":
                d.scale_mode = 1  # CROQ_SCALE_TENSOR
                ops.a_scale, ops.b_scale = problem["a_scale"].data_ptr(), problem["b_scale"].data_ptr()
            status = self.gemm(self.ctypes.byref(d), self.ctypes.byref(ops), stream)
        elif problem.get("scale_mode") == "tensor":
            raise NotImplementedError("e4m3 carries per-tensor scales, which version 1's croq_matmul cannot receive: "
                                      "export croq_gemm (kernel ABI version 2)")
        else:
            status = self.fn(self.ctypes.byref(p), a.data_ptr(), b.data_ptr(), c.data_ptr(), None, 0, stream)
        if status == 1:
            raise NotImplementedError("the candidate returned CROQ_UNSUPPORTED")
        if status != 0:
            raise RuntimeError("the candidate returned status %d" % status)


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def now_iso():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


# ---------------------------------------------------------------------------------------------
# --check

def run_check(path, timeout_s):
    report = {"ok": False, "stage": "parse", "file": path, "errors": [], "findings": [], "warnings": [],
              "python": sys.version.split()[0]}
    try:
        with open(path, encoding="utf-8") as f:
            source = f.read()
    except OSError as e:
        report["errors"].append("cannot read %s: %s" % (path, e))
        return report, EXIT_USAGE
    try:
        findings, warnings = static_check(source, path)
    except SyntaxError as e:
        report["errors"].append("%s:%s: SyntaxError: %s" % (path, e.lineno, e.msg))
        return report, EXIT_USAGE
    report["warnings"] = warnings
    report["stage"] = "purity"
    if findings:
        report["findings"] = findings
        report["errors"] = ["%s:%d: %s `%s`" % (f["file"], f["line"], f["rule"], f["what"]) for f in findings]
        return report, EXIT_FORBIDDEN_CHECK
    report["stage"] = "import"
    cmd = [sys.executable, os.path.realpath(__file__), "--import-only", path]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        report["errors"].append("importing %s took more than %d s" % (path, timeout_s))
        return report, EXIT_USAGE
    if p.returncode == EXIT_FORBIDDEN_CHECK:
        report["stage"] = "purity"
        report["errors"] = [l for l in p.stdout.splitlines() + p.stderr.splitlines() if l.strip()][-6:]
        report["findings"] = [{"file": path, "line": 0, "rule": "forbidden_call", "what": e, "text": ""}
                              for e in report["errors"]]
        return report, EXIT_FORBIDDEN_CHECK
    if p.returncode != 0:
        tail = [l for l in (p.stderr or p.stdout).splitlines() if l.strip()]
        report["errors"] = tail[-12:] or ["import failed (exit %d)" % p.returncode]
        return report, EXIT_USAGE
    report["ok"] = True
    report["stage"] = "done"
    return report, EXIT_OK


def run_import_only(path):
    """Child of --check: import the module under the run-time guard, check its entry point."""
    try:
        import torch  # noqa: F401  (the guard patches it)
        guard = RuntimeGuard([path])
        guard.install()
    except ImportError as e:
        print("cannot import the runtime: %s (install torch and triton; croq env validate --dsl triton)" % e,
              file=sys.stderr)
        return EXIT_USAGE
    try:
        with guard:
            mod = load_module(path)
    except ForbiddenCall as e:
        print(str(e))
        return EXIT_FORBIDDEN_CHECK
    except BaseException:
        traceback.print_exc()
        return EXIT_USAGE
    if guard.violations:
        print("forbidden call(s) during import: " + ", ".join(sorted(set(guard.violations))))
        return EXIT_FORBIDDEN_CHECK
    if not callable(getattr(mod, "croq_matmul", None)):
        print("%s defines no croq_matmul(problem, a, b, c) function (see docs/dsl.md)" % path, file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK


# ---------------------------------------------------------------------------------------------
# Measuring

def nvidia_smi(fields, index):
    try:
        p = subprocess.run(["nvidia-smi", "--query-gpu=" + fields, "--format=csv,noheader,nounits", "-i", str(index)],
                           capture_output=True, text=True, timeout=20)
        if p.returncode == 0 and p.stdout.strip():
            return [x.strip() for x in p.stdout.strip().splitlines()[0].split(",")]
    except (OSError, subprocess.TimeoutExpired):
        pass
    return None


def device_info(torch, device_key, rules, dtype):
    idx = torch.cuda.current_device()
    props = torch.cuda.get_device_properties(idx)
    name = torch.cuda.get_device_name(idx)
    cc = "%d.%d" % (props.major, props.minor)
    # torch numbers devices after CUDA_VISIBLE_DEVICES, nvidia-smi does not: ask by UUID.
    uuid = str(getattr(props, "uuid", "") or "")
    if uuid and not uuid.startswith("GPU-"):
        uuid = "GPU-" + uuid
    smi = nvidia_smi("uuid,driver_version,clocks.sm,clocks.max.sm", uuid or idx) or [None, None, None, None]
    uuid = smi[0] or uuid
    max_clock = float(smi[3]) if smi[3] not in (None, "", "[N/A]") else None
    key = device_key or "sm%d%d_%s" % (props.major, props.minor, name.replace(" ", "_"))
    return {
        "name": name, "uuid": uuid, "key": key, "compute_cap": cc, "driver": smi[1],
        "sm_clock_mhz": int(float(smi[2])) if smi[2] not in (None, "", "[N/A]") else None,
        "peak_tflops": rules.peak_tflops(name, props.major, props.minor, props.multi_processor_count, max_clock, dtype),
    }, idx


def percentile(sorted_values, q):
    if not sorted_values:
        return None
    pos = (len(sorted_values) - 1) * q
    lo, hi = int(math.floor(pos)), int(math.ceil(pos))
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


class Problem:
    def __init__(self, args):
        self.op = args.op
        self.m, self.n, self.k = args.m, args.n, args.k
        entry = args.rules.dtype(args.dtype)
        self.dtype = entry["canonical"]
        self.inp, self.out, self.compute = entry["input"], entry["output"], entry["compute"]
        self.b_layout = args.b_layout

    def to_dict(self):
        return {"op": self.op, "m": self.m, "n": self.n, "k": self.k, "dtype": self.dtype,
                "a_type": self.inp, "b_type": self.inp, "c_type": self.out, "b_layout": self.b_layout}

    def candidate_dict(self):
        d = self.to_dict()
        d.update({"compute_type": self.compute, "lda": self.k,
                  "ldb": self.k if self.b_layout == "col" else self.n, "ldc": self.n})
        return d


def torch_dtype(torch, t):
    return {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32,
            "e4m3": getattr(torch, "float8_e4m3fn", None)}[t]


def _exp2_neg_frac(f):
    """2^-f for f in [0, 1) (floats or tensors): the C++ runners' polynomial (portable.hpp), within
    about 2e-3 of the exact value, far below e4m3's rounding step."""
    return 1.0 + f * (-0.6931472 + f * (0.2402265 + f * (-0.0555041 + f * 0.0096181)))


def fp8_scaled_value(x):
    """An e4m3 input of a scaled problem from the generator's value x in [-1, 1) (before rounding to
    e4m3): sign(x) * 448 * 2^(-10 |x|), magnitudes log-uniform from 0.44 to 448, computed as the C++
    runners' fp8_scaled_from_uniform (src/croq/measure/portable.hpp) computes it;
    MeasureRules.BothRunnersDrawFp8InputsAndScalesAlike compares the two."""
    e = 10.0 * abs(x)
    ei = int(e)
    v = 448.0 * _exp2_neg_frac(e - ei) / float(1 << ei)
    return -v if x < 0 else v


def fp8_scaled_values(torch, x):
    """fp8_scaled_value of every element of the f32 tensor x."""
    e = 10.0 * x.abs()
    ei = torch.floor(e)
    v = 448.0 * _exp2_neg_frac(e - ei) * torch.exp2(-ei)
    return torch.where(x < 0, -v, v)


def pow10_approx(e):
    """10^e as portable.hpp's pow10_approx: 2^(e log2 10) split into a power of two and a polynomial."""
    y = e * 3.3219281
    yi = int(y) if y >= 0 else int(y - 1.0)
    f = y - yi
    return (1.0 + f * (0.6931472 + f * (0.2402265 + f * (0.0555041 + f * 0.0096181)))) * 2.0 ** yi


def fp8_tensor_scales(t, u_a, u_b):
    """The per-tensor scales (a_scale, b_scale) from the generator's values t, u_a, u_b in [-1, 1):
    six orders of magnitude, drawn so that the scaled products keep the output at the size of the
    unscaled operators' (portable.hpp's fp8_tensor_scale_from)."""
    return (pow10_approx(3.0 * t) / 128.0 * (1.0 + 0.25 * u_a), pow10_approx(-3.0 * t) / 384.0 * (1.0 + 0.25 * u_b))


def make_inputs(torch, pb, seed, device):
    """A, B, the poisoned C, the f32 reference and what the candidate's problem gains for these inputs
    (e4m3: the per-tensor scales, as f32 tensors of one element on the device, as the kernel ABI
    passes them; docs/measurement.md, step 3)."""
    g = torch.Generator(device=device)
    g.manual_seed(seed)
    ti = torch_dtype(torch, pb.inp)
    if ti is None:
        raise RuntimeError("this torch has no float8_e4m3fn")
    b_shape = (pb.n, pb.k) if pb.b_layout == "col" else (pb.k, pb.n)
    extra = {}
    if pb.inp == "e4m3":
        # The whole e4m3 range, and scales a kernel cannot ignore (the C++ runners' inputs, drawn
        # from this runner's generator).
        def draw(shape):
            x = torch.rand(shape, generator=g, device=device, dtype=torch.float32) * 2 - 1
            return fp8_scaled_values(torch, x).to(ti)

        a, b = draw((pb.m, pb.k)), draw(b_shape)
        t, u_a, u_b = (torch.rand(3, generator=g, device=device, dtype=torch.float32) * 2 - 1).tolist()
        sa, sb = fp8_tensor_scales(t, u_a, u_b)
        extra = {"scale_mode": "tensor",
                 "a_scale": torch.tensor([sa], device=device, dtype=torch.float32),
                 "b_scale": torch.tensor([sb], device=device, dtype=torch.float32)}
    else:
        a = (torch.rand((pb.m, pb.k), generator=g, device=device, dtype=torch.float32) * 2 - 1).to(ti)
        b = (torch.rand(b_shape, generator=g, device=device, dtype=torch.float32) * 2 - 1).to(ti)
    b_kn = b.t() if pb.b_layout == "col" else b
    # The reference: f32 accumulation, computed by the runner (never by the candidate), true f32
    # multiplies (no TF32) so it is the more precise of the two; the scales applied to the f32
    # product, as the C++ runners do.
    ref = torch.matmul(a.to(torch.float32), b_kn.to(torch.float32))
    if extra:
        ref = ref * (extra["a_scale"] * extra["b_scale"])
    c = torch.full((pb.m, pb.n), float("nan"), device=device, dtype=torch_dtype(torch, pb.out))
    return a, b, c, ref, extra


def verify(torch, c, ref, tol, worst_n=5):
    """The output `c` against the reference: verification_figures on the device, in float64."""
    return verification_figures(TorchOps(torch), c.reshape(-1).to(torch.float64), ref.reshape(-1).to(torch.float64),
                                tol, c.shape[1], worst_n)


def _num(v):
    """JSON has no NaN or Infinity: such values become strings."""
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return str(v)
    return v


def wait_at_gate(go_file):
    """croq's gate (--go-file): the imports that take seconds and touch no device (torch, triton)
    are done before croq takes the device's lease; this process says so with GO_FILE.ready and
    waits for GO_FILE, which croq creates once it holds the lease. Nothing of the candidate runs
    before."""
    try:
        import triton  # noqa: F401  (the candidate's import, later, finds it loaded)
    except ImportError:
        pass
    ready = time.perf_counter()
    with open(go_file + ".ready", "w", encoding="utf-8") as f:
        f.write("ready\n")
    while not os.path.exists(go_file):
        time.sleep(0.002)
    # Reported in process.gate: the seconds spent before the gate (the process's start and its
    # imports, outside the lease) and at it (waiting for croq to take the lease).
    return {"before_ms": round((ready - _STARTED) * 1e3, 1), "waited_ms": round((time.perf_counter() - ready) * 1e3, 1)}


def measure(args):
    """The measurement itself (in the child process unless --no-isolate). Returns the document."""
    doc = base_document(args)
    pb = Problem(args)
    doc["problem"] = pb.to_dict()
    tol = args.rules.tolerance(pb.dtype)
    doc["verification"]["tolerance"] = tol
    if args.op != "matmul":
        return finish(doc, "UNSUPPORTED", "the Python runner measures dense matmul only; %s (2:4 sparse A) is measured "
                      "by croq-gpu-runner (dsl cuda) and croq-cpu-runner (dsl cpp) through the kernel ABI's "
                      "croq_gemm" % args.op)

    try:
        import torch
    except ImportError as e:
        return finish(doc, "UNSUPPORTED", "cannot import torch: %s (croq env validate --dsl triton)" % e)
    gate = wait_at_gate(args.go_file) if args.go_file else None
    device = args.device
    if device == "cuda" and not torch.cuda.is_available():
        return finish(doc, "UNSUPPORTED", "torch sees no CUDA device")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    if device == "cuda":
        doc["device"], _ = device_info(torch, args.device_key, args.rules, pb.dtype)
    else:
        doc["device"] = {"name": "cpu", "uuid": None, "key": args.device_key or "cpu", "compute_cap": None,
                         "driver": None, "sm_clock_mhz": None, "peak_tflops": None}

    guard = RuntimeGuard([args.candidate])
    guard.install()
    try:
        doc = measure_guarded(args, doc, pb, tol, torch, device, guard)
    finally:
        guard.uninstall()
    if gate is not None:
        doc.setdefault("process", {})["gate"] = gate
    return doc


def measure_guarded(args, doc, pb, tol, torch, device, guard):
    def forbidden():
        names = ", ".join(sorted(set(guard.violations)))
        return finish(doc, "LIBRARY_CALL_FORBIDDEN", "the candidate called " + names)

    try:
        with guard:
            mod = AbiCandidate(args.candidate) if args.candidate.endswith(".so") else load_module(args.candidate)
    except ForbiddenCall:
        return forbidden()
    except BaseException as e:  # noqa: BLE001  (any failure of the candidate's import is data)
        return finish(doc, "RUNTIME_FAIL", "import failed: %s" % _exc_line(e))
    if guard.violations:
        return forbidden()
    fn = getattr(mod, "croq_matmul", None)
    if not callable(fn):
        return finish(doc, "UNSUPPORTED", "the module defines no croq_matmul(problem, a, b, c)")
    info = getattr(mod, "croq_kernel_info", None)
    if isinstance(mod, AbiCandidate):
        doc["candidate"]["info"] = mod.info
        doc["runner"]["dsl"] = "abi"
    elif callable(info):
        try:
            with guard:
                doc["candidate"]["info"] = info()
        except BaseException:  # noqa: BLE001
            doc["candidate"]["info"] = None
    problem = pb.candidate_dict()
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    def call(a, b, c, extra):
        with guard:
            fn(dict(problem, **extra), a, b, c)

    def run_checked(a, b, c, extra):
        """One call; returns a verdict string and reason when it failed, else None."""
        try:
            call(a, b, c, extra)
            sync()
        except ForbiddenCall:
            return "LIBRARY_CALL_FORBIDDEN", "the candidate called " + ", ".join(sorted(set(guard.violations)))
        except NotImplementedError as e:
            return "UNSUPPORTED", "the candidate does not handle this problem: %s" % (e or "NotImplementedError")
        except BaseException as e:  # noqa: BLE001
            what = type(e).__name__
            if "CompilationError" in what or "CompileError" in what:
                return "RUNTIME_FAIL", "JIT compile failed (first run): %s" % _exc_line(e)
            return "RUNTIME_FAIL", _exc_line(e)
        if guard.violations:
            return "LIBRARY_CALL_FORBIDDEN", "the candidate called " + ", ".join(sorted(set(guard.violations)))
        return None

    # 1. Verification with the recorded seed. The first call also compiles the Triton kernels and
    # runs any @triton.autotune benchmark: both happen here, outside every timed region, and are
    # reported (process.first_call_ms, process.autotune; croq measure keeps `process` as written).
    a, b, c, ref, extra = make_inputs(torch, pb, args.seed, device)
    first = time.perf_counter()
    failed = run_checked(a, b, c, extra)
    doc["process"]["first_call_ms"] = (time.perf_counter() - first) * 1e3
    tuners = autotuners(mod)
    if tuners:
        doc["process"]["autotune"] = autotune_report(tuners)
    if failed:
        return finish(doc, *failed)
    v = verify(torch, c, ref, tol)
    doc["verification"].update(v)
    if not v["passed"]:
        return finish(doc, "VERIFY_FAIL", verify_reason(v, tol))

    if args.mode == "profile":
        # One launch inside the NVTX range `croq_candidate` after the warm-up, the range that croq
        # profile's ncu filter captures (with the candidate's kernel names): neither the inputs,
        # nor the reference, nor the JIT compile or autotune, nor a warm-up launch is captured.
        for _ in range(args.warmup):
            c.fill_(float("nan"))
            failed = run_checked(a, b, c, extra)
            if failed:
                return finish(doc, *failed)
        c.fill_(float("nan"))
        sync()
        torch.cuda.nvtx.range_push(PROFILE_RANGE)
        failed = run_checked(a, b, c, extra)
        torch.cuda.nvtx.range_pop()
        if failed:
            return finish(doc, *failed)
        return finish(doc, "PASS", "")

    # 2. A second seed: fresh inputs in fresh buffers (catches results remembered between calls).
    a2, b2, c2, ref2, extra2 = make_inputs(torch, pb, args.seed + 1, device)
    failed = run_checked(a2, b2, c2, extra2)
    if failed:
        return finish(doc, *failed)
    v2 = verify(torch, c2, ref2, tol)
    doc["verification"]["second_seed_passed"] = v2["passed"]
    del a2, b2, c2, ref2, extra2
    if not v2["passed"]:
        doc["verification"]["passed"] = False
        return finish(doc, "VERIFY_FAIL", "second seed: " + verify_reason(v2, tol))

    if args.mode == "verify":
        return finish(doc, "PASS", "")

    # 3. Timing. Every launch is preceded by the poison (C := NaN), as the checked ones were, and a
    # timed launch's output is compared with the reference when a draw made after it ran says so
    # (1 in 4; the last one when none was drawn): a candidate cannot tell a checked launch from a
    # timed one.
    # While timing, `rotation_sets` input sets alternate, as in the C++ runners (set 0 and sets of
    # their own seeds; none with --no-l2-flush, which measures hot): a result kept by pointer is not
    # served on every launch.
    draws = random.SystemRandom()
    timed = {"checked": 0}
    n_sets = 1 if args.no_l2_flush else max(1, int(args.rotation_sets or 1))
    sets = [(a, b, c, ref, extra)] + [make_inputs(torch, pb, args.seed + 0x100 + s, device) for s in range(1, n_sets)]
    cur = {"i": 0}

    def poison():  # before every launch: the next set, its C := NaN
        cur["i"] = (cur["i"] + 1) % len(sets)
        sets[cur["i"]][2].fill_(float("nan"))

    def launch():
        sa, sb, sc, _, sx = sets[cur["i"]]
        call(sa, sb, sc, sx)

    def after_rep(rep, last):
        if not (draws.random() < 0.25 or (last and timed["checked"] == 0)):
            return None
        sync()
        vt = verify(torch, sets[cur["i"]][2], sets[cur["i"]][3], tol)
        timed["checked"] += 1
        if vt["passed"]:
            return None
        doc["verification"].update(vt)
        return ("VERIFY_FAIL", "timed launch %d, verified after it ran (chosen at random): %s" % (rep, verify_reason(vt, tol)))

    tuned_before = autotune_state(tuners)
    t = time_candidate(torch, device, args, launch, sync, poison, after_rep)
    del sets[1:]
    doc["verification"]["timed_checked"] = timed["checked"]
    if tuners and autotune_state(tuners) != tuned_before:
        doc["process"]["autotune"] = autotune_report(tuners)
        return finish(doc, "RUNTIME_FAIL", "@triton.autotune benchmarked again during the timing (a new tuning key): "
                      "its tuning would be timed as the kernel's; pin the configuration")
    if isinstance(t, tuple):
        if t[0] == "VERIFY_FAIL":
            doc["verification"]["passed"] = False
        return finish(doc, *t)
    # The hold's account goes with the process facts (the timing object is croq's schema).
    hold = t.pop("hold", None)
    if hold:
        doc["process"]["launch_hold"] = hold
        if hold.get("launch_waits"):
            doc.setdefault("flags", []).append("launch_waits")
            doc.setdefault("warnings", []).append(
                "the launch function waits for the stream (it synchronises inside croq_matmul, against the ABI); "
                "timed without holding the stream, so host launch overhead is inside the measured interval")
    t["rotation_sets"] = n_sets
    doc["timing"] = t
    if guard.violations:
        return finish(doc, "LIBRARY_CALL_FORBIDDEN", "the candidate called " + ", ".join(sorted(set(guard.violations))))
    flops = 2.0 * pb.m * pb.n * pb.k
    doc["tflops"] = flops / (t["median_ms"] * 1e-3) / 1e12 if t["median_ms"] > 0 else None
    if device == "cuda":
        smi = nvidia_smi("clocks.sm", doc["device"].get("uuid") or torch.cuda.current_device())
        if smi and smi[0] not in ("", "[N/A]"):
            doc["device"]["sm_clock_mhz"] = int(float(smi[0]))

    def checked_shot(inputs, want, field, what):
        """One launch on `inputs` (its output poisoned first, as every one), checked against `want`;
        the outcome under verification[field]. The failure, else None."""
        sa, sb, sc, sx = inputs
        sc.fill_(float("nan"))
        failed = run_checked(sa, sb, sc, sx)
        if failed:
            return failed
        v = verify(torch, sc, want, tol)
        doc["verification"][field] = v["passed"]
        if v["passed"]:
            return None
        doc["verification"]["passed"] = False
        return "VERIFY_FAIL", what + verify_reason(v, tol)

    # 4. One more launch on the first set, checked.
    failed = checked_shot((a, b, c, extra), ref, "rechecked_after_timing", "after timing: ")
    if failed:
        return finish(doc, *failed)

    # 5. The inputs refilled in place (the same pointers) from the second seed, one shot, checked, as
    # the C++ runners' last check: a candidate that keys a cache on the input pointers (a stored
    # result, operands packed once) returns stale values here. (Step 2's second seed had fresh
    # buffers, which such a cache misses.)
    a2, b2, _, ref2, extra2 = make_inputs(torch, pb, args.seed + 1, device)
    a.copy_(a2)
    b.copy_(b2)
    for key in ("a_scale", "b_scale"):
        if key in extra:
            extra[key].copy_(extra2[key])
    del a2, b2, extra2
    sync()
    failed = checked_shot((a, b, c, extra), ref2, "second_seed_in_place_passed",
                          "second seed, the inputs refilled in place (the same pointers; a result or operands kept "
                          "by the input pointers are stale): ")
    if failed:
        if failed[0] == "VERIFY_FAIL":
            doc["verification"]["second_seed_passed"] = False
        return finish(doc, *failed)

    peak = doc["device"].get("peak_tflops")
    if peak and doc["tflops"] and doc["tflops"] > peak:
        return finish(doc, "IMPOSSIBLE", "%.1f TFLOPS is above the device's peak of %.1f" % (doc["tflops"], peak))
    return finish(doc, "PASS", "")


PROFILE_RANGE = "croq_candidate"


def autotuners(mod):
    """The @triton.autotune kernels of the candidate module (none without triton)."""
    try:
        from triton.runtime.autotuner import Autotuner
    except ImportError:
        return []
    return [(name, obj) for name, obj in sorted(vars(mod).items()) if isinstance(obj, Autotuner)]


def autotune_state(tuners):
    return [(name, len(getattr(t, "cache", {}) or {}), getattr(t, "bench_time", None)) for name, t in tuners]


def autotune_report(tuners):
    """What each autotuner did at the first call: configurations, the one it chose, its tuning time."""
    out = []
    for name, t in tuners:
        best = getattr(t, "best_config", None)
        bench = getattr(t, "bench_time", None)
        timings = getattr(t, "configs_timings", None) or {}
        out.append({"kernel": name, "configs": len(getattr(t, "configs", []) or []),
                    "configs_timed": len(timings), "best_config": str(best) if best is not None else None,
                    "tuning_ms": bench * 1e3 if isinstance(bench, (int, float)) else None,
                    "keys_tuned": len(getattr(t, "cache", {}) or {})})
    return out


def verify_reason(v, tol):
    if v["nan_count"]:
        return "%d of %d outputs are NaN or Inf" % (v["nan_count"], v["elements"])
    if v["mismatches"]:
        return "%d of %d elements exceed %g + %g*|want| (max abs err %s)" % (
            v["mismatches"], v["elements"], tol["base_tol"], tol["rel_tol"], v["max_abs_err"])
    return "normwise relative error %s above %g" % (v["normwise_rel_err"], tol["normwise"])


class StreamHold:
    """Keeps the host's launch overhead out of the timed interval, as croq's C++ runner does with its
    blocking kernel: before the start event the stream is given a spin of known length
    (torch.cuda._sleep), so that the start event, the candidate's launch and the stop event are all
    enqueued while the GPU still spins, and the interval holds the GPU's work only. A repetition whose
    enqueueing outlasted the spin (checked on the host clock) is not kept: the hold doubles and the
    repetition is run again. One that still outlasts the longest hold waits for the stream inside its
    launch (it synchronises): the hold is given up, the rest is timed without it and flagged
    `launch_waits`, as the C++ runner flags it."""

    BASE_MS = 0.3
    MAX_MS = 20.0

    def __init__(self, torch, enabled):
        self.torch = torch
        self.enabled = enabled and hasattr(torch.cuda, "_sleep")
        self.ms_per_cycle = None
        self.hold_ms = self.BASE_MS
        self.held = 0
        self.leaks = 0
        self.waits = False
        if self.enabled:
            self._calibrate()

    def _calibrate(self):
        torch = self.torch
        cycles = 200000
        fastest = None
        for _ in range(3):  # the fastest of three: the shortest a spin of n cycles can last
            s = torch.cuda.Event(enable_timing=True)
            e = torch.cuda.Event(enable_timing=True)
            s.record()
            torch.cuda._sleep(cycles)
            e.record()
            e.synchronize()
            per = s.elapsed_time(e) / cycles
            fastest = per if fastest is None else min(fastest, per)
        self.ms_per_cycle = fastest if fastest and fastest > 0 else None
        self.enabled = self.ms_per_cycle is not None

    def begin(self):
        if not self.enabled:
            return None
        t0 = time.perf_counter()
        self.torch.cuda._sleep(max(1, int(self.hold_ms / self.ms_per_cycle)))
        return t0

    def end(self, t0):
        """After the stop event is enqueued: True when the enqueueing outlasted the spin."""
        if t0 is None:
            return False
        host_ms = (time.perf_counter() - t0) * 1e3
        if host_ms < 0.9 * self.hold_ms:
            self.held += 1
            return False
        self.leaks += 1
        if self.hold_ms >= self.MAX_MS:
            self.enabled = False  # the launch waits for the stream: no hold can cover it
            self.waits = True
            return True
        self.hold_ms = min(self.MAX_MS, self.hold_ms * 2)
        return True

    def report(self):
        return {"method": "spin (torch.cuda._sleep)" if self.ms_per_cycle else "none", "hold_ms": self.hold_ms,
                "held": self.held, "outlasted": self.leaks, "launch_waits": self.waits}


def time_candidate(torch, device, args, launch, sync, before=lambda: None, after=lambda rep, last: None):
    """Warm-up, then repetitions until the spread is low, the budget is spent or max reps.
    `before()` runs before every launch (the poison), `after(rep, last)` after every repetition,
    outside its timed interval: a failure tuple it returns ends the timing."""
    flush_buf = None
    l2_flush = not args.no_l2_flush and device == "cuda"
    if l2_flush:
        l2 = getattr(torch.cuda.get_device_properties(torch.cuda.current_device()), "L2_cache_size", 0) or (64 << 20)
        flush_buf = torch.empty(2 * l2 // 4 + 1, dtype=torch.int32, device=device)

    def flush():
        if flush_buf is not None:
            flush_buf.zero_()  # writes 2x the L2 size: the candidate's operands are evicted

    warm_start = time.perf_counter()
    warmups = args.warmup
    try:
        for _ in range(args.warmup):
            flush()
            before()
            launch()
        sync()
        # Then back to back until the warm-up has lasted --warmup-ms: the GPU's clocks and power
        # draw settle under a sustained load (docs/measurement.md, as croq's C++ runner does).
        batch = 1
        while args.warmup_ms > 0 and (time.perf_counter() - warm_start) * 1e3 < args.warmup_ms:
            for _ in range(batch):
                before()
                launch()
            sync()
            warmups += batch
            batch = min(batch * 2, 256)
    except BaseException as e:  # noqa: BLE001
        return ("RUNTIME_FAIL", "during warm-up: " + _exc_line(e))
    warmup_ms = (time.perf_counter() - warm_start) * 1e3

    # The duty cycle (--rest-ratio, as croq's C++ runner does): once the device has been busy for
    # --rest-window-ms it idles rest-ratio times as long; rests are not part of the timed length.
    pacing = {"busy": 0.0, "rested": 0.0}

    def pace(busy_ms):
        pacing["busy"] += max(0.0, busy_ms)
        if args.rest_ratio <= 0 or pacing["busy"] < args.rest_window_ms:
            return 0.0
        idle = pacing["busy"] * args.rest_ratio
        time.sleep(idle / 1e3)
        pacing["busy"] = 0.0
        pacing["rested"] += idle
        return idle

    pace(warmup_ms)
    hold = StreamHold(torch, enabled=device == "cuda" and not args.no_hold)
    samples, walls = [], []
    budget_start = time.perf_counter()
    rested_in_reps = 0.0
    stop_reason = "max_reps"
    try:
        while len(samples) < args.max_reps:
            flush()
            before()
            sync()  # the flush and the poison are complete before the start event
            w0 = time.perf_counter()
            if device == "cuda":
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                held = hold.begin()
                start.record()
                launch()
                end.record()
                leaked = hold.end(held)
                torch.cuda.synchronize()  # the whole device: work on other streams is counted too
                ms = start.elapsed_time(end)
                if leaked:  # the host was still launching when the hold ended: this one is not kept
                    continue
            else:
                launch()
                ms = (time.perf_counter() - w0) * 1e3
            walls.append((time.perf_counter() - w0) * 1e3)
            samples.append(ms)
            n = len(samples)
            elapsed = (time.perf_counter() - budget_start) * 1e3 - rested_in_reps
            stop = None
            if n >= args.max_reps:
                stop = "max_reps"
            elif n >= max(args.min_reps, 2) and elapsed >= args.min_time_ms:
                mean = sum(samples) / n
                sd = math.sqrt(sum((x - mean) ** 2 for x in samples) / (n - 1)) if n > 1 else 0.0
                if mean > 0 and sd / mean <= args.target_cv:
                    stop = "cv_target"
            if stop is None and elapsed >= args.time_budget_ms and n >= min(3, args.max_reps):
                stop = "time_budget"
            v0 = time.perf_counter()
            failed = after(n, stop is not None)
            if failed:
                return failed
            rested_in_reps += (time.perf_counter() - v0) * 1e3  # the comparison is not timed
            if stop is not None:
                stop_reason = stop
                break
            rested_in_reps += pace(walls[-1])
    except BaseException as e:  # noqa: BLE001
        return ("RUNTIME_FAIL", "during timing: " + _exc_line(e))
    s = sorted(samples)
    n = len(s)
    mean = sum(s) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in s) / (n - 1)) if n > 1 else 0.0
    return {"method": "cuda_events" if device == "cuda" else "host_clock", "l2_flush": l2_flush,
            "warmup": warmups, "warmup_ms": warmup_ms,
            "timed_ms": (time.perf_counter() - budget_start) * 1e3 - rested_in_reps, "reps": n,
            "rest_ratio": args.rest_ratio if args.rest_ratio > 0 else None,
            "rest_ms": pacing["rested"] if args.rest_ratio > 0 else None, "median_ms": percentile(s, 0.5), "mean_ms": mean, "min_ms": s[0],
            "p90_ms": percentile(s, 0.9), "max_ms": s[-1], "cv": sd / mean if mean > 0 else None,
            "stop_reason": stop_reason, "wall_check_ms": percentile(sorted(walls), 0.5), "hold": hold.report()}


def _exc_line(e):
    text = "%s: %s" % (type(e).__name__, e)
    return text.strip().splitlines()[0][:500] if text.strip() else type(e).__name__


def base_document(args):
    cand = {"path": os.path.realpath(args.candidate) if args.candidate else None, "sha256": None, "info": None}
    if args.candidate and os.path.isfile(args.candidate):
        cand["sha256"] = sha256_file(args.candidate)
    return {
        "schema": SCHEMA,
        "croq": {"version": args.croq_version, "git": args.croq_git},
        "created_at": now_iso(),
        "kind": args.kind,
        "verdict": None,
        "reason": "",
        "candidate": cand,
        "problem": None,
        "device": None,
        "seed": args.seed,
        "verification": {"passed": False, "elements": 0, "mismatches": 0, "max_abs_err": None, "max_rel_err": None,
                         "normwise_rel_err": None, "tolerance": None, "worst": [], "nan_count": 0,
                         "rechecked_after_timing": None, "second_seed_passed": None},
        "timing": None,
        "tflops": None,
        "source": "measured",
        "runner": {"name": "croq_runner.py", "python": sys.version.split()[0], "dsl": "triton"},
        "process": {},
    }


def finish(doc, verdict, reason):
    doc["verdict"] = verdict
    doc["reason"] = reason
    if verdict != "PASS":
        doc["tflops"] = doc.get("tflops") if verdict == "IMPOSSIBLE" else None
    return doc


def measure_isolated(args, argv):
    """Runs the measurement in a child with a time limit; crashes and hangs become verdicts."""
    fd, out_path = tempfile.mkstemp(prefix="croq-measure-", suffix=".json")
    os.close(fd)
    cmd = [sys.executable, os.path.realpath(__file__)] + argv + ["--no-isolate", "--child-out", out_path]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    # With croq's gate the time limit counts from the gate on: the wait for the device's lease is not
    # the candidate's (croq's own limit on this process covers it). The child's output is read
    # meanwhile, so it never blocks on a full pipe before the gate.
    deadline = None if args.go_file else time.monotonic() + args.timeout_s
    while True:
        if deadline is None and os.path.exists(args.go_file):
            deadline = time.monotonic() + args.timeout_s
        try:
            _, err = proc.communicate(timeout=0.05 if deadline is None else max(0.0, deadline - time.monotonic()))
            timed_out = False
            break
        except subprocess.TimeoutExpired:
            if deadline is not None and time.monotonic() >= deadline:
                os.killpg(proc.pid, signal.SIGKILL)
                _, err = proc.communicate()
                timed_out = True
                break
    doc = None
    try:
        with open(out_path, encoding="utf-8") as f:
            text = f.read()
        if text.strip():
            doc = json.loads(text)
    except (OSError, ValueError):
        doc = None
    finally:
        try:
            os.unlink(out_path)
        except OSError:
            pass
    if doc is not None and not timed_out:
        return doc
    doc = base_document(args)
    try:
        doc["problem"] = Problem(args).to_dict()
        doc["verification"]["tolerance"] = args.rules.tolerance(args.dtype)
    except ValueError:
        pass
    tail = " | ".join([l for l in (err or "").splitlines() if l.strip()][-3:])
    if timed_out:
        return finish(doc, "HANG", "killed after %d s" % args.timeout_s)
    rc = proc.returncode
    if rc is not None and rc < 0:
        sig = -rc
        name = signal.Signals(sig).name if sig in {s.value for s in signal.Signals} else str(sig)
        verdict = "SEGFAULT" if sig in (signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE) else "RUNTIME_FAIL"
        return finish(doc, verdict, "the measurement process died of %s%s" % (name, (": " + tail) if tail else ""))
    return finish(doc, "RUNTIME_FAIL", "the measurement process exited %s without a result%s"
                  % (rc, (": " + tail) if tail else ""))


def read_raw(path, scalar):
    """A raw little-endian array of f32, f16 or bf16 values, as Python floats."""
    import array
    import struct
    with open(path, "rb") as f:
        data = f.read()
    if scalar == "f32":
        a = array.array("f")
        a.frombytes(data)
        if sys.byteorder != "little":
            a.byteswap()
        return [float(v) for v in a]
    if scalar == "f16":
        return [float(v) for v in struct.unpack("<%de" % (len(data) // 2), data)]
    if scalar == "bf16":
        halves = struct.unpack("<%dH" % (len(data) // 2), data)
        return [struct.unpack("<f", struct.pack("<I", h << 16))[0] for h in halves]
    raise ValueError("no raw reader for %s" % scalar)


def run_selftest(args):
    """croq's tests drive the runner's own rule functions on given arrays (no torch needed): one JSON
    document in, one out. {"verify": [{got, want, m, n, dtype}], "peak": [{name, cc_major, cc_minor,
    sm_count, max_clock_mhz, dtype}], "fp8": {"x": [...], "scales": [[t, u_a, u_b], ...]}}; got is raw
    output values of the dtype's output type, want raw f32."""
    if args.rules is None:
        print("croq_runner.py: --selftest needs --rules (%s)" % (args.rules_error or "missing"), file=sys.stderr)
        return EXIT_USAGE
    with open(args.selftest, encoding="utf-8") as f:
        req = json.load(f)
    out = {"verify": [], "peak": []}
    for v in req.get("verify", []):
        entry = args.rules.dtype(v["dtype"])
        tol = args.rules.tolerance(v["dtype"])
        got = read_raw(v["got"], entry["output"])
        want = read_raw(v["want"], "f32")
        if len(got) != v["m"] * v["n"] or len(want) != v["m"] * v["n"]:
            raise ValueError("array sizes differ from m x n")
        fig = verification_figures(ListOps(), got, want, tol, v["n"])
        fig["tolerance"] = tol
        out["verify"].append(fig)
    fp8 = req.get("fp8")
    if fp8 is not None:
        out["fp8"] = {"values": [fp8_scaled_value(x) for x in fp8.get("x", [])],
                      "scales": [list(fp8_tensor_scales(*tu)) for tu in fp8.get("scales", [])]}
    for q in req.get("peak", []):
        out["peak"].append(args.rules.peak_tflops(q["name"], q["cc_major"], q["cc_minor"], q["sm_count"],
                                                  q["max_clock_mhz"], q["dtype"]))
    print(json.dumps(out))
    return EXIT_OK


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--check", metavar="FILE", help="parse, purity (AST) and import check; JSON on stdout")
    p.add_argument("--import-only", metavar="FILE", help=argparse.SUPPRESS)
    p.add_argument("--candidate", metavar="FILE", help="the candidate module (.py) to measure")
    p.add_argument("--op", default="matmul", choices=["matmul", "gemm_sp"],
                   help="matmul (gemm_sp, 2:4 sparse A, is measured by croq-gpu-runner and croq-cpu-runner)")
    p.add_argument("--m", type=int)
    p.add_argument("--n", type=int)
    p.add_argument("--k", type=int)
    p.add_argument("--dtype", default="f16f32", help="a dtype spelling of the rules (f16f32, bf16f32, f16, bf16, ...)")
    p.add_argument("--rules", metavar="JSON|FILE",
                   help="croq's measurement rules (croq-measurement-rules-v1: dtypes, tolerances, timing defaults, "
                        "peak table), as croq measure passes them; by hand: --rules \"$(croq-cpu-runner --print-rules)\"")
    p.add_argument("--selftest", metavar="FILE", help=argparse.SUPPRESS)
    p.add_argument("--dump-cubins", metavar="DIR",
                   help="Triton's kernel cache for this run only (TRITON_CACHE_DIR=DIR): the candidate's compiled "
                        "kernels (<hash>/<kernel>.cubin) are left there, for croq sass dump")
    p.add_argument("--b-layout", default="row", choices=["row", "col", "auto"],
                   help="B as K x N row-major or N x K; auto (croq's default) is row for Python candidates")
    p.add_argument("--seed", type=int, default=None, help="input seed (default: random, recorded)")
    # The flags croq passes to every runner (src/croq/measure/runner_options.hpp), same names and
    # defaults as croq-gpu-runner's.
    p.add_argument("--mode", default="measure", choices=["measure", "verify", "profile"],
                   help="measure (verify and time) or verify (correctness only)")
    p.add_argument("--warmup", type=int, default=None, help="untimed launches before timing")
    p.add_argument("--warmup-ms", type=float, default=None, help="the warm-up lasts at least this long")
    p.add_argument("--min-reps", type=int, default=None)
    p.add_argument("--max-reps", type=int, default=None)
    p.add_argument("--cv-target", "--target-cv", dest="target_cv", type=float, default=None,
                   help="stop when stdev/mean falls to this")
    p.add_argument("--min-time-ms", type=float, default=None, help="time at least this long before the CV may stop")
    p.add_argument("--time-budget-ms", type=float, default=None)
    p.add_argument("--rest-ratio", type=float, default=None,
                   help="once busy --rest-window-ms, idle this many times as long (the power cap)")
    p.add_argument("--rest-window-ms", type=float, default=None)
    p.add_argument("--no-l2-flush", action="store_true")
    p.add_argument("--no-hold", action="store_true",
                   help="time without holding the stream (the host's launch overhead inside the interval)")
    p.add_argument("--rotation-sets", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--parse-only", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--kind", default="candidate", choices=["candidate", "baseline"])
    p.add_argument("--device-key", default=None, help="e.g. sm90_NVIDIA_H200 (default: derived from the device)")
    # cpu: the hidden CPU mode of croq's tests; anything else (croq passes a GPU index or UUID, the
    # device being chosen by CUDA_VISIBLE_DEVICES) is the CUDA device.
    p.add_argument("--device", default="cuda", help=argparse.SUPPRESS)
    p.add_argument("--cusparselt", default=None, help=argparse.SUPPRESS)  # the GPU runner's sparse baselines only
    p.add_argument("--out", metavar="FILE", help="write the measurement JSON here too")
    p.add_argument("--timeout-s", type=int, default=300, help="time limit of the isolated measurement")
    p.add_argument("--no-isolate", action="store_true", help="measure in this process (no crash/hang verdicts)")
    p.add_argument("--child-out", help=argparse.SUPPRESS)
    p.add_argument("--go-file", metavar="FILE",
                   help="croq's gate: after importing torch and triton, create FILE.ready and wait for FILE before "
                        "touching the device (croq creates it once it holds the device's lease)")
    p.add_argument("--croq-version", default=os.environ.get("CROQ_VERSION", "unknown"))
    p.add_argument("--croq-git", default=os.environ.get("CROQ_GIT", "unknown"))
    p.add_argument("--pretty", action="store_true")
    args = p.parse_args(argv)
    # The timing flags croq passes (runner_options.hpp); a flag left out takes the rules' default.
    args.rules_error = None
    try:
        args.rules = load_rules(args.rules) if args.rules else None
    except (OSError, ValueError) as e:
        args.rules, args.rules_error = None, "--rules: %s" % e
    timing = {"warmup": "warmup", "warmup_ms": "warmup_ms", "min_reps": "min_reps", "max_reps": "max_reps",
              "target_cv": "cv_target", "min_time_ms": "min_time_ms", "time_budget_ms": "time_budget_ms",
              "rest_ratio": "rest_ratio", "rest_window_ms": "rest_window_ms", "rotation_sets": "rotation_sets"}
    for attr, key in timing.items():
        if getattr(args, attr) is None and args.rules is not None:
            setattr(args, attr, args.rules.timing[key])
    if args.b_layout == "auto":
        # The layout the C++ runners try first (measure/problem.cpp, layout_order): B stored N x K for
        # e4m3 inputs, the layout FP8 tensor cores read; K x N otherwise.
        inp = None
        if args.rules is not None:
            try:
                inp = args.rules.dtype(args.dtype)["input"]
            except ValueError:
                inp = None
        args.b_layout = "col" if inp == "e4m3" else "row"
    if args.device != "cpu":
        args.device = "cuda"
    return args


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    if args.parse_only:  # for croq's tests: the flags croq passes are understood
        shown = dict(vars(args))
        shown["rules"] = shown["rules"].doc["schema"] if shown["rules"] is not None else None
        print(json.dumps(shown, sort_keys=True))
        return 0
    if args.selftest:
        return run_selftest(args)
    if args.dump_cubins:
        # Before anything imports triton: its cache for this run holds only the candidate's kernels.
        os.makedirs(args.dump_cubins, exist_ok=True)
        os.environ["TRITON_CACHE_DIR"] = os.path.realpath(args.dump_cubins)
    if args.import_only:
        return run_import_only(args.import_only)
    if args.check:
        report, rc = run_check(args.check, min(args.timeout_s, 600))
        print(json.dumps(report))
        return rc
    if not args.candidate or args.m is None or args.n is None or args.k is None:
        print("croq_runner.py: --candidate, --m, --n and --k are required (or --check FILE)", file=sys.stderr)
        return EXIT_USAGE
    if min(args.m, args.n, args.k) <= 0:
        print("croq_runner.py: --m, --n and --k must be positive", file=sys.stderr)
        return EXIT_USAGE
    if args.rules is None:
        print("croq_runner.py: %s" % (args.rules_error or "--rules is required: croq's measurement rules (croq measure "
              "passes them; by hand: --rules \"$(croq-cpu-runner --print-rules)\")"), file=sys.stderr)
        return EXIT_USAGE
    try:
        args.rules.dtype(args.dtype)
    except ValueError as e:
        print("croq_runner.py: %s" % e, file=sys.stderr)
        return EXIT_USAGE
    if args.seed is None:
        args.seed = int.from_bytes(os.urandom(4), "little") & 0x7FFFFFFF
        argv += ["--seed", str(args.seed)]

    # The static check first: a forbidden source never runs. (A shared object's dynamic symbols
    # are checked by croq measure; here it is only called.)
    try:
        if args.candidate.endswith(".so"):
            findings = []
            if not os.path.isfile(args.candidate):
                raise OSError("no such file")
        else:
            with open(args.candidate, encoding="utf-8") as f:
                source = f.read()
            findings, _ = static_check(source, args.candidate)
    except OSError as e:
        print("croq_runner.py: cannot read %s: %s" % (args.candidate, e), file=sys.stderr)
        return EXIT_USAGE
    except SyntaxError as e:
        doc = base_document(args)
        doc["problem"] = Problem(args).to_dict()
        doc = finish(doc, "RUNTIME_FAIL", "%s:%s: SyntaxError: %s" % (args.candidate, e.lineno, e.msg))
        findings = None
    if findings:
        doc = base_document(args)
        doc["problem"] = Problem(args).to_dict()
        doc["purity"] = findings
        doc = finish(doc, "LIBRARY_CALL_FORBIDDEN", "; ".join(
            "line %d: %s" % (f["line"], f["what"]) for f in findings[:5]))
    elif findings is not None:
        if args.no_isolate:
            doc = measure(args)
        else:
            doc = measure_isolated(args, argv)

    if args.dump_cubins and isinstance(doc, dict):
        found = []
        for root, _, files in os.walk(args.dump_cubins):
            found += [os.path.join(root, f) for f in files if f.endswith(".cubin")]
        doc.setdefault("process", {})["cubins"] = sorted(found)
    text = json.dumps(doc, indent=2 if args.pretty else None, allow_nan=False, default=str)
    if args.child_out:
        with open(args.child_out, "w", encoding="utf-8") as f:
            f.write(text)
        return EXIT_OK
    if args.out:
        tmp = args.out + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text + "\n")
        os.replace(tmp, args.out)
    print(text)
    return EXIT_OK if doc["verdict"] == "PASS" else EXIT_CANDIDATE


if __name__ == "__main__":
    sys.exit(main())
