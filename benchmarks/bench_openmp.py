"""The C backend's loops on one thread against OpenMP, per workload, side by side in one process
(the evidence behind ``options={"openmp": "auto"}``; see docs/performance.md).

    python benchmarks/bench_openmp.py [--workloads chain,medium,tiny] [--steps 20] [--with-torch]

``--with-torch`` imports PyTorch first, as the peer benchmarks do: its own OpenMP runtime then
shares the process. Each setting is warmed up and measured twice, in alternating order (the
first setting measured in a process also pays for growing the heap); the table shows both.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workloads", default="chain,medium,tiny")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--with-torch", action="store_true")
    args = ap.parse_args(argv)
    if args.with_torch:
        import torch  # noqa: F401

    import tracegrad as tg
    import workloads
    from bench_workloads import median_time

    settings = [("one thread", False), ("openmp", True), ("auto", "auto")]
    print(f"| workload | {' | '.join(name for name, _ in settings)} |")
    print("|---|" + "---|" * len(settings))
    for name in args.workloads.split(","):
        times = {s: [] for s, _ in settings}
        for order in (settings, settings[::-1]):
            for label, value in order:
                step, step_args = getattr(workloads, f"make_{name}")(None)
                f = tg.compile(step, options={"openmp": value})
                times[label].append(median_time(lambda: f(*step_args), args.steps) * 1e3)
        cells = [" / ".join(f"{t:.3f}" for t in times[s]) + " ms" for s, _ in settings]
        print(f"| {name} | {' | '.join(cells)} |")


if __name__ == "__main__":
    main()
