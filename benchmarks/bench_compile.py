"""Compile time against depth (issue 26, deliverable 2): the first call of an MLP training step
(``depth`` Linear(width, width) + ReLU layers, cross entropy, SGD), cold (a new, empty
TRACEGRAD_CACHE_DIR) and warm (the same directory again), each in a new process.

    python benchmarks/bench_compile.py --depths 2 8 32 128 --repeats 2

Prints, per depth: IR nodes of the step's graph, cold and warm first call (seconds, the best
of ``repeats``), the C compiler's share of the cold call (wall clock around
``toolchain.compile_shared``), and the cold time per layer between consecutive depths.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import json, os, sys, time
t0 = time.perf_counter()
import numpy as np
import tracegrad as tg
import tracegrad.nn.functional as F
from tracegrad.compiler.backends.c import toolchain
t_import = time.perf_counter() - t0
cc = {"time": 0.0, "runs": 0}
orig = toolchain.compile_shared
def timed(*a, **k):
    s = time.perf_counter()
    try:
        return orig(*a, **k)
    finally:
        cc["time"] += time.perf_counter() - s
        cc["runs"] += 1
toolchain.compile_shared = timed
depth, width, batch = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
tg.manual_seed(0)
layers = []
for _ in range(depth):
    layers += [tg.nn.Linear(width, width), tg.nn.ReLU()]
model = tg.nn.Sequential(*layers)
opt = tg.optim.SGD(model.parameters(), lr=0.01)
rng = np.random.default_rng(0)
x = tg.from_numpy(rng.standard_normal((batch, width)).astype(np.float32))
y = tg.from_numpy(rng.integers(0, width, size=batch).astype(np.int64))
def step(x, y):
    opt.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss
f = tg.compile(step, backend="c")
s = time.perf_counter()
f(x, y)
first = time.perf_counter() - s
nodes = sum(len(p.graph.nodes) for p in f.programs)  # (IR nodes of the step's graph)
print(json.dumps({"first": first, "cc": cc["time"], "cc_runs": cc["runs"], "import": t_import,
                  "nodes": nodes}))
"""


def run(depth, width, batch, cache_dir):
    env = dict(os.environ, TRACEGRAD_CACHE_DIR=cache_dir)
    out = subprocess.run([sys.executable, "-c", CHILD, str(depth), str(width), str(batch)],
                         env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--depths", type=int, nargs="+", default=[2, 8, 32, 128])
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=1)
    args = ap.parse_args()
    rows = []
    print(f"{'depth':>5} {'IR nodes':>8} {'cold s':>8} {'cc s':>7} {'cc runs':>7} {'warm s':>7}")
    for depth in args.depths:
        colds, warms = [], []
        for _ in range(args.repeats):
            with tempfile.TemporaryDirectory(prefix="tg-bench-compile-") as d:
                colds.append(run(depth, args.width, args.batch, d))
                warms.append(run(depth, args.width, args.batch, d))
        cold = min(colds, key=lambda r: r["first"])
        warm = min(w["first"] for w in warms)
        rows.append((depth, cold["first"], warm))
        print(f"{depth:>5} {cold['nodes']:>8} {cold['first']:>8.3f} {cold['cc']:>7.3f} {cold['cc_runs']:>7} {warm:>7.3f}",
              flush=True)
    for (d0, c0, _), (d1, c1, _) in zip(rows, rows[1:]):
        print(f"cold time per layer {d0} -> {d1}: {(c1 - c0) / (d1 - d0) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
