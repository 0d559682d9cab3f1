"""The cost of ``dynamic=True`` on the C backend: the tiny training step at batch 33, run by
the build with a runtime batch size against a build specialised for batch 33, side by side in
one process (bench_workloads.interleaved_medians).

    python benchmarks/bench_dynamic.py [--steps 200] [--rounds 5]
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
    ap.add_argument("--steps", type=int, default=200, help="steps per build per round")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)

    import tracegrad as tg
    import workloads
    from bench_workloads import interleaved_medians

    contenders = {}
    for label, dynamic in (("specialised for batch 33", False), ("runtime batch size", True)):
        step, _ = workloads.make_tiny(None)
        f = tg.compile(step, dynamic=dynamic)
        if dynamic:  # batch 32 builds the first program, a second batch size the symbolic one
            f(*workloads.make_tiny(None, batch=32)[1])
        x, y = workloads.make_tiny(None, batch=33)[1]
        f(x, y)
        if dynamic:
            exe = f.programs[0]._last.executable
            assert type(exe).__name__ == "DynamicCExecutable", type(exe).__name__
        contenders[label] = (lambda f=f, x=x, y=y: f(x, y))
    times = interleaved_medians(contenders, args.steps, args.rounds)
    print("| tiny step, batch 33 | median |")
    print("|---|---|")
    for label, t in times.items():
        print(f"| {label} | {t * 1e6:.1f} us |")


if __name__ == "__main__":
    main()
