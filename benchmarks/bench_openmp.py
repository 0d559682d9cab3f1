"""The C backend's loops on one thread against OpenMP, per workload, side by side in one process
(the evidence behind ``options={"openmp": "auto"}``; see docs/performance.md).

    python benchmarks/bench_openmp.py [--workloads chain,medium,tiny] [--steps 10] [--rounds 4]
                                      [--with-torch]

``--with-torch`` imports PyTorch first, as the peer benchmarks do: its own OpenMP runtime then
shares the process. The settings take turns (bench_workloads.interleaved_medians): ``--rounds``
rounds of ``--steps`` steps each, the order rotating; each time is the median of all its steps.
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
    ap.add_argument("--steps", type=int, default=10, help="steps per setting per round")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--with-torch", action="store_true")
    args = ap.parse_args(argv)
    if args.with_torch:
        import torch  # noqa: F401

    import tracegrad as tg
    import workloads
    from bench_workloads import interleaved_medians

    settings = [("one thread", False), ("openmp", True), ("auto", "auto")]
    print(f"| workload | {' | '.join(name for name, _ in settings)} |")
    print("|---|" + "---|" * len(settings))
    for name in args.workloads.split(","):
        contenders = {}
        for label, value in settings:
            step, step_args = getattr(workloads, f"make_{name}")(None)
            f = tg.compile(step, options={"openmp": value})
            contenders[label] = (lambda f=f, a=step_args: f(*a))
        times = interleaved_medians(contenders, args.steps, args.rounds)
        print(f"| {name} | {' | '.join(f'{times[s] * 1e3:.3f} ms' for s, _ in settings)} |")

if __name__ == "__main__":
    main()
