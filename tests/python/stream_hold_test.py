"""The Python runner's stream hold (src/python/croq_runner.py, StreamHold and time_candidate) on a
simulated device, without PyTorch: a fake `torch` whose stream is a timeline. Work enqueued by the
host starts when both the host has enqueued it and the stream is free; an event records the time
the stream reaches it; torch.cuda._sleep(n) is n cycles of spinning. The candidate's launch spends
host time (real time.sleep) before it enqueues its kernel, as Triton's Python dispatch does.

Checks:
  1. with the hold, a launch with 2 ms of host work before its 0.1 ms kernel times 0.1 ms;
  2. without it (--no-hold), the interval holds the host's 2 ms too (what the runner timed before);
  3. a repetition whose enqueueing outlasted the spin is run again with a longer spin, and the
     repetitions kept all time the kernel alone, a prompt launch's from the first spin;
  4. a launch that waits for the stream (it synchronises inside) outlasts every spin: the hold is
     given up and `launch_waits` set.
Exit 0 when every check holds; prints what failed otherwise.
Usage: python3 tests/python/stream_hold_test.py <source-dir>
"""
import argparse
import importlib.util
import os
import sys
import time

CYCLES_PER_MS = 1.0e6  # the simulated SM clock: 1 GHz


class Stream:
    def __init__(self):
        self.free_at = 0.0  # ms on the host clock when the stream's queued work ends

    def now(self):
        return time.perf_counter() * 1e3

    def enqueue(self, duration_ms):
        start = max(self.now(), self.free_at)
        self.free_at = start + duration_ms
        return self.free_at


STREAM = Stream()


class Event:
    def __init__(self, enable_timing=True):
        del enable_timing
        self.at = None

    def record(self):
        self.at = STREAM.enqueue(0.0)

    def synchronize(self):
        wait = STREAM.free_at - STREAM.now()
        if wait > 0:
            time.sleep(wait / 1e3)

    def elapsed_time(self, end):
        return end.at - self.at


class Cuda:
    Event = Event

    @staticmethod
    def _sleep(cycles):
        STREAM.enqueue(cycles / CYCLES_PER_MS)

    @staticmethod
    def synchronize():
        Event().synchronize()


class FakeTorch:
    cuda = Cuda


def load_runner(src):
    spec = importlib.util.spec_from_file_location("croq_runner", os.path.join(src, "src", "python", "croq_runner.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def timing_args(no_hold, reps):
    return argparse.Namespace(no_l2_flush=True, no_hold=no_hold, warmup=1, warmup_ms=0, rest_ratio=0,
                              rest_window_ms=10, max_reps=reps, min_reps=reps, min_time_ms=0, target_cv=0,
                              time_budget_ms=1e9)


def launcher(host_ms, kernel_ms, waits=False):
    def launch():
        time.sleep(host_ms / 1e3)  # the host's work before the kernel is enqueued (Python dispatch)
        STREAM.enqueue(kernel_ms)
        if waits:  # a launch function that synchronises inside: the host waits for the stream
            Cuda.synchronize()
    return launch


def main():
    runner = load_runner(sys.argv[1])
    failures = []

    def hold_of(t):  # a runner without the hold reports none
        return t.get("hold") or {"method": "none", "hold_ms": 0.0, "held": 0, "outlasted": 0, "launch_waits": False}

    def check(ok, what):
        if not ok:
            failures.append(what)
        print(("ok   " if ok else "FAIL ") + what)

    sync = Cuda.synchronize
    # 1. held: the 2 ms of host work stay outside; the first spins are too short and are run again.
    t = runner.time_candidate(FakeTorch, "cuda", timing_args(False, 8), launcher(2.0, 0.1), sync)
    hold = hold_of(t)
    check(abs(t["median_ms"] - 0.1) < 0.05, "held: median %.3f ms for a 0.1 ms kernel after 2 ms of host work"
          % t["median_ms"])
    check(t["max_ms"] < 0.15, "held: every kept repetition times the kernel alone (max %.3f ms)" % t["max_ms"])
    check(hold["outlasted"] >= 1 and hold["hold_ms"] > 2.0,
          "held: repetitions that outlasted the spin were run again with a longer one (%s)" % hold)
    check(hold["held"] == t["reps"] == 8 and not hold["launch_waits"], "held: 8 repetitions kept (%s)" % hold)
    # 2. --no-hold: the host's work is inside the interval.
    t = runner.time_candidate(FakeTorch, "cuda", timing_args(True, 5), launcher(2.0, 0.1), sync)
    check(t["median_ms"] > 1.9, "no hold: median %.3f ms holds the host's 2 ms" % t["median_ms"])
    check(hold_of(t)["method"] == "none" and hold_of(t)["held"] == 0, "no hold: reported as none (%s)" % hold_of(t))
    # 3. a prompt launch is held by the first spin (a busy machine may preempt the host now and then:
    #    such a repetition is run again, and still no repetition kept times more than the kernel).
    t = runner.time_candidate(FakeTorch, "cuda", timing_args(False, 5), launcher(0.0, 0.2), sync)
    check(t["max_ms"] < 0.25 and hold_of(t)["held"] == 5 and hold_of(t)["hold_ms"] < 20.0,
          "prompt launch: max %.3f ms for a 0.2 ms kernel (%s)" % (t["max_ms"], hold_of(t)))
    # 4. a launch that waits for the stream outlasts every spin: launch_waits.
    t = runner.time_candidate(FakeTorch, "cuda", timing_args(False, 3), launcher(0.0, 0.1, waits=True), sync)
    check(hold_of(t)["launch_waits"] and hold_of(t)["hold_ms"] >= 20.0,
          "synchronising launch: launch_waits after the longest spin (%s)" % hold_of(t))
    if failures:
        print("%d of the checks failed" % len(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
