"""The C backend's optimisation level chosen by measurement (issue 26, deliverable 2): each
workload's program built at each level of LEVELS in one process (a fresh, private
cache directory), the C compiler's CPU time per build (user + system of its processes: what
other load on a shared machine changes least), then the steps timed side by side: the levels
take turns, ``--rounds`` rounds of ``--steps`` steps, and each level's time is its fastest
step (the one least disturbed by other processes; the code's speed is what is compared).

    python benchmarks/bench_opt_level.py [--workloads tiny,chain,medium,cnn,lenet5,transformer,mlp32]
                                         [--levels O1,O2,O2dyn,O3] [--steps 30] [--rounds 5]

``mlp32``: bench_compile.py's 32-layer MLP step (Linear(256, 256) + ReLU, SGD, batch 64).
Prints, per workload and level: cc CPU seconds, the fastest step, and both relative to the
first level given.
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))


# name -> the flags that replace BASE_FLAGS' -O3. O2dyn: -O2 with -O3's vectorizer cost model
# (GCC 12's -O2 vectorizes only loops that need no epilogue or runtime check: "very-cheap")
LEVELS = {"O1": ("-O1",), "O2": ("-O2",), "O2dyn": ("-O2", "-fvect-cost-model=dynamic"), "O3": ("-O3",)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workloads", default="tiny,chain,medium,cnn,lenet5,transformer,mlp32")
    ap.add_argument("--levels", default="O1,O2,O2dyn,O3", help=f"of {', '.join(LEVELS)}")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    levels = args.levels.split(",")
    os.environ["TRACEGRAD_CACHE_DIR"] = tempfile.mkdtemp(prefix="tg-bench-olevel-")

    import workloads
    from tracegrad.compiler.backends.c import toolchain

    level = {"now": "O3"}
    original_toolchain, original_compile = toolchain.toolchain, toolchain.compile_shared
    cc = {"time": 0.0}

    def with_level(*a, **k):  # the flags in use, with this build's level instead of BASE_FLAGS'
        version, flags = original_toolchain(*a, **k)
        return version, tuple(g for f in flags for g in (LEVELS[level["now"]] if f == "-O3" else (f,)))

    def cpu_of_children():
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        return r.ru_utime + r.ru_stime

    def timed_compile(*a, **k):
        start = cpu_of_children()
        try:
            return original_compile(*a, **k)
        finally:
            cc["time"] += cpu_of_children() - start

    toolchain.toolchain, toolchain.compile_shared = with_level, timed_compile
    makers = dict(workloads.WORKLOADS, mlp32=workloads.make_deep_mlp)
    first = levels[0]
    print(f"{'workload':<12} {'level':<5} {'cc cpu s':>8} {'vs ' + first:>7} {'step ms':>9} {'vs ' + first:>7}")
    for name in args.workloads.split(","):
        if name not in makers:
            print(f"{name}: no such workload (have {', '.join(makers)})")
            continue
        steps, cc_times = {}, {}
        for lv in levels:
            level["now"], cc["time"] = lv, 0.0
            step, inputs = makers[name]()
            step(*inputs)  # (builds it, with this level)
            cc_times[lv] = cc["time"]
            steps[lv] = (lambda s, i: lambda: s(*i))(step, inputs)
        best = fastest_steps(steps, args.steps, args.rounds)
        for lv in levels:
            print(f"{name:<12} {lv:<5} {cc_times[lv]:>8.3f} {cc_times[lv] / cc_times[first]:>7.2f} "
                  f"{best[lv] * 1e3:>9.3f} {best[lv] / best[first]:>7.2f}", flush=True)


def fastest_steps(contenders, steps, rounds, warmup=3):
    """{name: fastest step} of ``{name: fn}``, the contenders taking turns (the order rotated
    every round)."""
    names = list(contenders)
    best = dict.fromkeys(names, float("inf"))
    for fn in contenders.values():
        for _ in range(warmup):
            fn()
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            for _ in range(steps):
                start = time.perf_counter()
                contenders[name]()
                best[name] = min(best[name], time.perf_counter() - start)
    return best


if __name__ == "__main__":
    main()
