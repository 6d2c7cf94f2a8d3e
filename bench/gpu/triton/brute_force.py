"""A brute-force autotune of the triton_gemm family's space, for the comparison in issue 22's goal
("fewer measurements than an exhaustive autotune of the same space to reach within 2 % of its best").

The space is croq's own: `croq tune <key> --dsl triton --gpu <key> --list-space` lists every legal
configuration (the product of the family's parameter values, filtered by its constraints). This
script measures a seeded random sample of it (the whole space when --sample covers it), the family's
default always included, as a Triton user's autotune would: every configuration compiled (in
parallel worker processes, into Triton's shared cache), checked against torch.matmul, then timed with
triton.testing.do_bench (L2 flushed between repetitions, the median). The template is the one croq
renders (kernels/triton/matmul/family/gemm.py); a configuration is its module constants.

Writes --out (TSV: rank, TFLOPS, ms, the configuration as JSON) and --summary (JSON: the space's size,
the sample, compiled, failed, timed, the best). The best few are then measured again by croq measure
(bench/gpu/triton_evidence.sh), so that they compare with the tune's measurements by one procedure.

Usage: python3 brute_force.py --space space.json --shape M N K --sample 400 --seed 1 --jobs 14
           --budget-s 200 --out bf.tsv --summary bf.json [--render-top 3 --render-dir D]
       python3 brute_force.py --render-from bf.json --render-top 3 --render-dir D
           (an earlier run's fastest as candidates again, without measuring anything)
"""
import argparse
import importlib.util
import json
import os
import random
import sys
import time

TEMPLATE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                        "kernels", "triton", "matmul", "family", "gemm.py")


def load_template():
    spec = importlib.util.spec_from_file_location("croq_triton_gemm_bf", TEMPLATE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def configure(mod, cfg):
    for name, value in cfg.items():
        setattr(mod, name, int(value))


def problem_of(m, n, k):
    return {"m": m, "n": n, "k": k, "a_type": "f16", "b_type": "f16", "c_type": "f32", "b_layout": "row"}


def tensors(m, n, k, seed):
    import torch
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.rand((m, k), device="cuda", generator=g, dtype=torch.float32).sub_(0.5).half()
    b = torch.rand((k, n), device="cuda", generator=g, dtype=torch.float32).sub_(0.5).half()
    c = torch.empty((m, n), device="cuda", dtype=torch.float32)
    return a, b, c


def render(cfg, path):
    """The template with the configuration's values in its constant lines (the block croq's search
    rewrites for a triton_gemm candidate: `NAME = value`, CROQ_PARAMS after them), the rest as it is."""
    lines = open(TEMPLATE).read().split("\n")
    at = next(i for i, line in enumerate(lines) if line.startswith("# @CROQ_CONFIG@ begin"))
    stop = next(i for i, line in enumerate(lines) if line.startswith("# @CROQ_CONFIG@ end"))
    for i in range(at + 1, stop):
        name = lines[i].split(" = ", 1)[0]
        if name in cfg:
            lines[i] = "%s = %s" % (name, cfg[name])
    with open(path, "w") as f:
        f.write("\n".join(lines))


def compile_one(args):
    """In a worker: compile (and run once) one configuration; its cubin lands in Triton's cache."""
    cfg, m, n, k = args
    import torch
    t0 = time.time()
    try:
        mod = load_template()
        configure(mod, cfg)
        a, b, c = tensors(m, n, k, 1)
        mod.croq_matmul(problem_of(m, n, k), a, b, c)
        torch.cuda.synchronize()
        return cfg, None, time.time() - t0
    except Exception as e:  # pylint: disable=broad-except
        return cfg, "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:200] if str(e) else ""), time.time() - t0


def worker_main(path):
    """A compile worker: the configurations of `path` ([index, config] pairs) one after another, a JSON line
    each. A CUDA error leaves the context unusable, so the worker reports it and exits (3); the parent
    goes on with the rest in a fresh worker."""
    todo = json.load(open(path))
    m, n, k = todo["shape"]
    for index, cfg in todo["configs"]:
        cfg, err, secs = compile_one((cfg, m, n, k))
        print(json.dumps({"i": index, "err": err, "s": secs}), flush=True)
        if err and ("CUDA error" in err or "AcceleratorError" in err):
            sys.exit(3)


def compile_all(sample, m, n, k, jobs, deadline, per_config_s=30):
    """Compiles the sample in `jobs` worker processes (each with its own CUDA context and the shared
    Triton cache). A configuration that breaks its worker's context (an illegal memory access is
    sticky) is recorded as failed and its worker is replaced, so that it takes no other down with it;
    one that gives no result in `per_config_s` (a kernel that never finishes: the second H200 run hung
    on one until its time limit) is killed with its worker and recorded as failed. Every worker is
    killed at the deadline."""
    import select
    import subprocess
    import tempfile
    import threading
    results = {}
    lock = threading.Lock()
    chunks = [list(enumerate(sample))[i::jobs] for i in range(jobs)]

    def lines_of(proc, first_timeout):
        """The worker's output lines as they come; None when one takes longer than `per_config_s` (the
        first allows for the worker's start: torch, CUDA) or the deadline passes."""
        buf, fd, timeout = b"", proc.stdout.fileno(), first_timeout
        while True:
            wait = min(timeout, deadline - time.time())
            if wait <= 0 or not select.select([fd], [], [], wait)[0]:
                yield None
                return
            data = os.read(fd, 65536)
            if not data:
                return
            buf += data
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                yield line.decode(errors="replace")
                timeout = per_config_s

    def slot(chunk):
        while chunk and time.time() < deadline:
            fd, path = tempfile.mkstemp(suffix=".json")
            with os.fdopen(fd, "w") as f:
                json.dump({"shape": [m, n, k], "configs": chunk}, f)
            proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", path],
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            done, hung = set(), False
            for line in lines_of(proc, per_config_s + 30):
                if line is None:
                    hung = True
                    proc.kill()
                    break
                try:
                    r = json.loads(line)
                except ValueError:
                    continue
                with lock:
                    results[r["i"]] = (r["err"], r["s"])
                done.add(r["i"])
            proc.wait()
            proc.stdout.close()
            os.unlink(path)
            chunk = [c for c in chunk if c[0] not in done]
            if not chunk or time.time() >= deadline:
                break
            if hung:  # the configuration it was on ran past per_config_s: a kernel that does not finish
                with lock:
                    results[chunk[0][0]] = ("no result in %d s: killed (a kernel that does not finish)" % per_config_s,
                                            float(per_config_s))
                chunk = chunk[1:]
            elif proc.returncode not in (0, 3):
                # Died without a word on its current configuration (a crash of the process): that one.
                with lock:
                    results[chunk[0][0]] = ("the worker process died (exit %s) on it" % proc.returncode, 0.0)
                chunk = chunk[1:]

    threads = [threading.Thread(target=slot, args=(c,)) for c in chunks]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    compiled, failed, secs = [], [], []
    for i, cfg in enumerate(sample):
        if i not in results:
            continue
        err, s = results[i]
        secs.append(s)
        (failed if err else compiled).append((cfg, err))
    left = len(sample) - len(results)
    if left:
        print("compile budget spent: %d left uncompiled" % left, flush=True)
    return compiled, failed, secs


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        worker_main(sys.argv[2])
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--space", help="the output of croq tune <key> --dsl triton --list-space")
    ap.add_argument("--shape", nargs=3, type=int, metavar=("M", "N", "K"))
    ap.add_argument("--render-from", metavar="SUMMARY", help="write an earlier run's fastest (its summary's top) "
                    "as candidates and exit")
    ap.add_argument("--sample", type=int, default=400, help="configurations to measure (the default among them)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) - 2))
    ap.add_argument("--budget-s", type=float, default=200.0, help="stop compiling and timing after this long")
    ap.add_argument("--out")
    ap.add_argument("--summary")
    ap.add_argument("--render-top", type=int, default=0, metavar="N",
                    help="write the N fastest as candidates (the template with their constants) into --render-dir")
    ap.add_argument("--render-dir", default=".")
    args = ap.parse_args()
    if args.render_from:
        top = json.load(open(args.render_from)).get("top") or []
        for i, entry in enumerate(top[:args.render_top]):
            render(entry["config"], os.path.join(args.render_dir, "bf_top%d.py" % (i + 1)))
        print("rendered %d of %s's fastest" % (min(len(top), args.render_top), args.render_from))
        return
    if not (args.space and args.shape and args.out and args.summary):
        ap.error("--space, --shape, --out and --summary are needed to measure")
    m, n, k = args.shape
    start = time.time()

    space = json.load(open(args.space))
    shape = next((s for s in space["shapes"] if s["shape_key"].endswith("_%dx%dx%d" % (m, n, k))), None)
    if shape is None:
        sys.exit("brute_force: %s lists no shape %dx%dx%d" % (args.space, m, n, k))
    legal = shape["configs"]
    default = shape["default"]
    rng = random.Random(args.seed)
    others = [c for c in legal if c != default]
    sample = [default] + rng.sample(others, min(len(others), max(0, args.sample - 1)))
    print("brute force %dx%dx%d: %d legal configurations, measuring %d (seed %d), %d compile workers"
          % (m, n, k, len(legal), len(sample), args.seed, args.jobs), flush=True)

    # 1. compile every sampled configuration, in parallel, each worker with its own CUDA context.
    compiled, failed, compile_s = compile_all(sample, m, n, k, args.jobs, start + args.budget_s * 0.55)
    print("compiled %d, failed %d in %.0f s" % (len(compiled), len(failed), time.time() - start), flush=True)

    # 2. check and time each compiled configuration in this process (the cache is warm).
    import torch
    import triton.testing
    mod = load_template()
    a, b, c = tensors(m, n, k, 2)
    ref = (a.float() @ b.float())
    scale = ref.abs().max().item() or 1.0
    timed, wrong = [], []
    flops = 2.0 * m * n * k
    for cfg, _ in compiled:
        if time.time() - start > args.budget_s:
            break
        configure(mod, cfg)
        try:
            c.fill_(float("nan"))
            mod.croq_matmul(problem_of(m, n, k), a, b, c)
            torch.cuda.synchronize()
            err = ((c - ref).abs().max().item()) / scale
            if not err < 1e-2:
                wrong.append((cfg, "max error %.3g of max |C|" % err))
                continue
            ms = triton.testing.do_bench(lambda: mod.croq_matmul(problem_of(m, n, k), a, b, c),
                                         warmup=10, rep=40, return_mode="median")
            timed.append((flops / (ms * 1e-3) / 1e12, ms, cfg))
        except Exception as e:  # pylint: disable=broad-except
            wrong.append((cfg, "%s: %s" % (type(e).__name__, str(e)[:160])))
    timed.sort(key=lambda t: -t[0])
    with open(args.out, "w") as f:
        f.write("rank\ttflops\tms\tconfig\n")
        for i, (tf, ms, cfg) in enumerate(timed):
            f.write("%d\t%.1f\t%.4f\t%s\n" % (i + 1, tf, ms, json.dumps(cfg, sort_keys=True)))
    for i, (_, _, cfg) in enumerate(timed[:args.render_top]):
        render(cfg, os.path.join(args.render_dir, "bf_top%d.py" % (i + 1)))
    default_tf = next((tf for tf, _, cfg in timed if cfg == default), None)
    summary = {
        "shape": [m, n, k], "shape_key": shape["shape_key"], "family": shape["family"],
        "space_product": shape["product"], "space_legal": len(legal), "sample": len(sample), "seed": args.seed,
        "compiled": len(compiled), "compile_failed": len(failed), "timed": len(timed), "wrong_or_failed": len(wrong),
        "seconds": round(time.time() - start, 1),
        "median_compile_s": sorted(compile_s)[len(compile_s) // 2] if compile_s else None,
        "best": {"tflops": round(timed[0][0], 1), "config": timed[0][2]} if timed else None,
        "top": [{"tflops": round(tf, 1), "config": cfg} for tf, _, cfg in timed[:5]],
        "default_tflops": round(default_tf, 1) if default_tf else None,
        "failures": [{"config": cfg, "error": e} for cfg, e in (failed + wrong)[:60]],
        "procedure": "triton.testing.do_bench(warmup=10, rep=40, median), L2 flushed between repetitions",
    }
    json.dump(summary, open(args.summary, "w"), indent=1)
    print(json.dumps({k: summary[k] for k in ("space_legal", "sample", "compiled", "timed", "seconds", "best",
                                              "default_tflops")}), flush=True)


if __name__ == "__main__":
    main()
