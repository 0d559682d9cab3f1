"""Per-op eager dispatch cost: tracegrad vs PyTorch on small tensors.

For each op (add, mul, a small matmul, sum, sum over a dim, reshape, integer indexing) it
times the forward alone and forward+backward, with tensors small enough that the time is the
framework's overhead rather than arithmetic, plus one eager training step of a small MLP
(forward, loss, backward, SGD step), and prints a table of microseconds per call and the ratio
tracegrad / PyTorch.

    python benchmarks/bench_dispatch.py [--repeat 5] [--number 2000] [--size 16]

No assertion is made on the numbers: they depend on the machine.
"""
from __future__ import annotations

import argparse
import timeit

import numpy as np

import tracegrad as tg

try:
    import torch
except ImportError:  # the comparison column is left empty without the oracle
    torch = None


def _cases(lib, size):
    """name -> (forward, forward+backward) closures for library ``lib``."""
    rng = np.random.default_rng(0)
    a_np = rng.standard_normal((size, size)).astype(np.float32)
    b_np = rng.standard_normal((size, size)).astype(np.float32)
    a, b = lib.tensor(a_np), lib.tensor(b_np)
    ga, gb = lib.tensor(a_np, requires_grad=True), lib.tensor(b_np, requires_grad=True)

    def backward_of(f):
        def run():
            f(ga, gb).sum().backward()
            ga.grad = None
            gb.grad = None

        return run

    ops = {"add": lambda x, y: x + y, "mul": lambda x, y: x * y,
           "matmul": lambda x, y: x @ y, "sum": lambda x, y: x.sum(),
           "sum(1)": lambda x, y: x.sum(1), "reshape": lambda x, y: x.reshape(-1),
           "x[0]": lambda x, y: x[0]}
    cases = {name: ((lambda f=f: f(a, b)), backward_of(f)) for name, f in ops.items()}
    cases["mlp step"] = (None, _mlp_step(lib, rng))
    return cases


def _mlp_step(lib, rng, batch=32, sizes=(16, 32, 4)):
    """One eager training step of a 2-layer MLP: forward, MSE loss, backward, SGD."""
    nn = lib.nn
    model = nn.Sequential(nn.Linear(sizes[0], sizes[1]), nn.ReLU(), nn.Linear(sizes[1], sizes[2]))
    with lib.no_grad():  # the same initial weights for both libraries
        for p in model.parameters():
            p.copy_(lib.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32) * 0.1))
    opt = lib.optim.SGD(model.parameters(), lr=0.01)
    x = lib.tensor(rng.standard_normal((batch, sizes[0])).astype(np.float32))
    y = lib.tensor(rng.standard_normal((batch, sizes[2])).astype(np.float32))

    def run():
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()

    return run


def _best_us(fn, repeat, number):
    fn()  # warm up caches and lazy imports
    return min(timeit.repeat(fn, repeat=repeat, number=number)) / number * 1e6


def measure(repeat=5, number=2000, size=16):
    """Rows of (op, mode, tracegrad µs, PyTorch µs or None)."""
    ours = _cases(tg, size)
    theirs = _cases(torch, size) if torch is not None else None
    if torch is not None:
        torch.set_num_threads(1)  # per-call overhead, not threading
    rows = []
    for name in ours:
        for mode, k in (("forward", 0), ("fwd+bwd", 1)):
            if ours[name][k] is None:
                continue
            t_ours = _best_us(ours[name][k], repeat, number if k == 0 else number // 4)
            t_theirs = None
            if theirs is not None:
                t_theirs = _best_us(theirs[name][k], repeat, number if k == 0 else number // 4)
            rows.append((name, mode, t_ours, t_theirs))
    return rows


def format_table(rows, size):
    lines = [f"eager dispatch cost, float32 {size}x{size} tensors (best of repeats, µs per call)",
             f"{'op':<8} {'mode':<8} {'tracegrad':>10} {'pytorch':>10} {'ratio':>7}",
             "-" * 47]  # fwd+bwd: f(...).sum().backward(); mlp step: see _mlp_step
    for name, mode, t_ours, t_theirs in rows:
        theirs = f"{t_theirs:10.2f}" if t_theirs is not None else f"{'-':>10}"
        ratio = f"{t_ours / t_theirs:7.1f}" if t_theirs else f"{'-':>7}"
        lines.append(f"{name:<8} {mode:<8} {t_ours:10.2f} {theirs} {ratio}")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--number", type=int, default=2000)
    p.add_argument("--size", type=int, default=16)
    args = p.parse_args(argv)
    print(format_table(measure(args.repeat, args.number, args.size), args.size))


if __name__ == "__main__":
    main()
