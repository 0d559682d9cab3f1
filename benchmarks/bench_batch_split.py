"""Batch split (``options={"batch_split": ...}``, backends/c/batch_split.py) on tiny's MLP step
at several batch sizes: the program whole on one thread against its rows split over two
threads, side by side in one process, and what ``"auto"`` chooses (the evidence behind its rule;
see docs/performance.md).

    python benchmarks/bench_batch_split.py [--batches 32,48,64,96,128] [--steps 200] [--rounds 5]
                                           [--with-torch]

``--with-torch`` adds PyTorch eager's step for scale. The settings take turns
(bench_workloads.interleaved_medians); each time is the median of all its steps.
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
    ap.add_argument("--batches", default="32,48,64,96,128")
    ap.add_argument("--steps", type=int, default=200, help="steps per setting per round")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--with-torch", action="store_true")
    args = ap.parse_args(argv)

    import workloads
    from bench_workloads import interleaved_medians

    settings = [("whole", False), ("split", True), ("auto", "auto")]
    head = [name for name, _ in settings] + ["split / whole", "auto splits"]
    if args.with_torch:
        head.append("torch eager")
    print(f"| tiny, batch | {' | '.join(head)} |")
    print("|---|" + "---|" * len(head))
    for batch in map(int, args.batches.split(",")):
        contenders, auto_splits = {}, None
        for label, value in settings:
            step, step_args = workloads.make_tiny("c", batch=batch, options={"batch_split": value})
            step(*step_args)
            if value == "auto":
                auto_splits = "tg_half" in step.programs[0].executable.source
            contenders[label] = (lambda f=step, a=step_args: f(*a))
        if args.with_torch:
            contenders["torch eager"] = _torch_tiny(batch)
        t = interleaved_medians(contenders, args.steps, args.rounds)
        cells = [f"{t[name] * 1e6:.1f} us" for name, _ in settings]
        cells += [f"{t['split'] / t['whole']:.2f}", "yes" if auto_splits else "no"]
        if args.with_torch:
            cells.append(f"{t['torch eager'] * 1e6:.1f} us")
        print(f"| {batch} | {' | '.join(cells)} |")


def _torch_tiny(batch):
    import numpy as np
    import torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.Tanh(), torch.nn.Linear(128, 128),
                                torch.nn.Tanh(), torch.nn.Linear(128, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    rng = np.random.default_rng(0)
    x = torch.from_numpy(rng.standard_normal((batch, 64)).astype(np.float32))
    y = torch.from_numpy(rng.integers(0, 10, size=batch).astype(np.int64))

    def step():
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    return step


if __name__ == "__main__":
    main()
