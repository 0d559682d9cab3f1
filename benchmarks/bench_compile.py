"""Compile time against depth (issue 26, deliverable 2): the first call of an MLP training step
(``depth`` x (Linear(width, width), ReLU), cross entropy, SGD), cold (a new, empty cache
directory) and warm (the same directory again), each in a new process; the same step under
``jax.jit`` where JAX is installed (cold: no persistent compilation cache; warm: JAX's
persistent cache, filled by the cold run).

    python benchmarks/bench_compile.py --depths 2 8 32 128 --repeats 2 --warm-repeats 3 [--no-jax]

Prints, per depth: IR nodes of the step's graph; tracegrad's cold first call (wall clock, and
CPU time: this process's threads and the compiler's processes, what other load on a shared
machine changes least), the C compiler's part of it (wall clock around its runs, and its CPU
time); the first call of a new program (a cache that holds the runtime object already, as
every cache does after its first program: "new", with its compiler CPU time); the warm first
call (wall, CPU) and the part
of it spent tracing the function (``trace_function``: the floor of a warm call, which must run
the Python function once to know its graph and guards) and its native run (the step itself,
whose threads other load on the machine slows most); jax.jit's cold and warm first calls.
Each figure is the best of ``--repeats`` cold runs and of ``--warm-repeats`` warm runs after
each (the machines are shared: the best run is the least disturbed). Then the cold time per added layer between
consecutive depths, and each against issue 26's goals (cold first call of the 32-layer step
<= 1.5 s; <= 25 ms per added layer from 8 to 128; warm first call <= 0.1 s at every depth).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

TG_CHILD = r"""
import json, resource, sys, time
import numpy as np
import tracegrad as tg
import tracegrad.nn.functional as F
from tracegrad.compiler import api
from tracegrad.compiler.backends.c import runtime_object, toolchain

spent = {"cc": 0.0, "cc_cpu": 0.0, "trace": 0.0, "native": 0.0}
inside = []

def timed(label, fn, cpu=False):
    def wrapper(*a, **k):
        if inside:  # (compile_linked calls compile_shared: counted once)
            return fn(*a, **k)
        inside.append(label)
        start, r0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
        try:
            return fn(*a, **k)
        finally:
            inside.pop()
            spent[label] += time.perf_counter() - start
            if cpu:
                r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                spent["cc_cpu"] += r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime
    return wrapper

# the compiler's runs: a program alone, or linked with the runtime object (built alongside
# when the cache has none yet)
toolchain.compile_shared = timed("cc", toolchain.compile_shared, cpu=True)
runtime_object.compile_linked = timed("cc", runtime_object.compile_linked, cpu=True)
api.trace_function = timed("trace", api.trace_function)
from tracegrad.compiler.backends.c import CExecutable
CExecutable.run_into = timed("native", CExecutable.run_into)  # the program's own run
CExecutable.__call__ = timed("native", CExecutable.__call__)
depth, width, batch = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
sys.path.insert(0, sys.argv[4])  # (benchmarks/: the step is workloads.make_deep_mlp)
from workloads import make_deep_mlp
f, (x, y) = make_deep_mlp("c", depth, width, batch)
r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu0, start = time.process_time(), time.perf_counter()
f(x, y)
first = time.perf_counter() - start
r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = time.process_time() - cpu0 + r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime
nodes = sum(len(p.graph.nodes) for p in f.programs)
print(json.dumps(dict(spent, first=first, cpu=cpu, nodes=nodes)))
"""

JAX_CHILD = r"""
import json, sys, time
import numpy as np
import jax
import jax.numpy as jnp

depth, width, batch, cache = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
jax.config.update("jax_compilation_cache_dir", cache)
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
rng = np.random.default_rng(0)
bound = 1 / np.sqrt(width)
params = [(jnp.asarray(rng.uniform(-bound, bound, (width, width)).astype(np.float32)),
           jnp.asarray(rng.uniform(-bound, bound, width).astype(np.float32))) for _ in range(depth)]
x = jnp.asarray(rng.standard_normal((batch, width)).astype(np.float32))
y = jnp.asarray(rng.integers(0, width, size=batch).astype(np.int32))

def loss_fn(params, x, y):
    h = x
    for w, b in params:
        h = jax.nn.relu(h @ w.T + b)
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(h), y[:, None], axis=1))

@jax.jit
def step(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return jax.tree_util.tree_map(lambda p, g: p - 0.01 * g, params, grads), loss

start = time.perf_counter()
jax.block_until_ready(step(params, x, y))
print(json.dumps({"first": time.perf_counter() - start}))
"""


def _child(code, args, env=None):
    out = subprocess.run([sys.executable, "-c", code, *map(str, args)], env=env,
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"child failed ({out.returncode}):\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def tracegrad_runs(depth, width, batch, repeats, warm_repeats):
    """(cold, new, warm) result dicts: the best of ``repeats`` cold runs (an empty cache), of
    as many runs of a new program (a cache holding another program and the runtime object
    that backends/c/runtime_object.py builds once per toolchain: a 1-layer step's), and of
    ``warm_repeats`` warm runs after each cold one."""
    colds, news, warms = [], [], []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory(prefix="tg-bench-compile-") as d:
            env = dict(os.environ, TRACEGRAD_CACHE_DIR=d)
            colds.append(_child(TG_CHILD, (depth, width, batch, HERE), env))
            warms += [_child(TG_CHILD, (depth, width, batch, HERE), env) for _ in range(warm_repeats)]
        with tempfile.TemporaryDirectory(prefix="tg-bench-compile-") as d:
            env = dict(os.environ, TRACEGRAD_CACHE_DIR=d)
            _child(TG_CHILD, (1, width // 2, batch, HERE), env)
            news.append(_child(TG_CHILD, (depth, width, batch, HERE), env))
    best = lambda runs: min(runs, key=lambda r: r["first"])
    return best(colds), best(news), best(warms)


def jax_runs(depth, width, batch, repeats, warm_repeats):
    """(cold, warm) first-call seconds of the jax.jit step, chosen as tracegrad_runs does."""
    colds, warms = [], []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory(prefix="tg-bench-compile-jax-") as d:
            colds.append(_child(JAX_CHILD, (depth, width, batch, d))["first"])
            warms += [_child(JAX_CHILD, (depth, width, batch, d))["first"] for _ in range(warm_repeats)]
    return min(colds), min(warms)


def _have_jax():
    try:
        import importlib.util

        return importlib.util.find_spec("jax") is not None
    except ValueError:
        return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--depths", type=int, nargs="+", default=[2, 8, 32, 128])
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=1, help="cold runs (each in a new cache)")
    ap.add_argument("--warm-repeats", type=int, default=3, help="warm runs after each cold one")
    ap.add_argument("--no-jax", action="store_true")
    ap.add_argument("--json", help="also write the rows to this file")
    args = ap.parse_args()
    with_jax = not args.no_jax and _have_jax()
    rows = []
    head = (f"{'depth':>5} {'IR nodes':>8} {'cold s':>7} {'cpu':>6} {'cc s':>6} {'cc cpu':>6} "
            f"{'new s':>6} {'cc cpu':>6} {'warm s':>7} {'cpu':>6} {'trace s':>7} {'run s':>6}")
    print(head + (f" {'jax cold':>8} {'jax warm':>8}" if with_jax else ""), flush=True)
    for depth in args.depths:
        cold, new, warm = tracegrad_runs(depth, args.width, args.batch, args.repeats, args.warm_repeats)
        row = {"depth": depth, "nodes": cold["nodes"], "cold": cold["first"], "cold_cpu": cold["cpu"],
               "cc": cold["cc"], "cc_cpu": cold["cc_cpu"], "new": new["first"], "new_cc_cpu": new["cc_cpu"],
               "warm": warm["first"], "warm_cpu": warm["cpu"], "warm_trace": warm["trace"],
               "warm_native": warm["native"]}
        line = (f"{depth:>5} {row['nodes']:>8} {row['cold']:>7.3f} {row['cold_cpu']:>6.3f} "
                f"{row['cc']:>6.3f} {row['cc_cpu']:>6.3f} {row['new']:>6.3f} {row['new_cc_cpu']:>6.3f} "
                f"{row['warm']:>7.3f} {row['warm_cpu']:>6.3f} {row['warm_trace']:>7.3f} "
                f"{row['warm_native']:>6.3f}")
        if with_jax:
            row["jax_cold"], row["jax_warm"] = jax_runs(depth, args.width, args.batch, args.repeats, args.warm_repeats)
            line += f" {row['jax_cold']:>8.3f} {row['jax_warm']:>8.3f}"
        rows.append(row)
        print(line, flush=True)
    for a, b in zip(rows, rows[1:]):
        layers = b["depth"] - a["depth"]
        per, per_cpu = ((b[k] - a[k]) / layers * 1000 for k in ("cold", "cold_cpu"))
        goal = " (goal <= 25 ms from 8 to 128)" if a["depth"] >= 8 else ""
        print(f"cold time per added layer {a['depth']} -> {b['depth']}: {per:.1f} ms, "
              f"CPU {per_cpu:.1f} ms{goal}")
    for r in rows:
        if r["depth"] == 32:
            print(f"cold first call at depth 32: {r['cold']:.2f} s (goal <= 1.5 s)")
    worst = max(rows, key=lambda r: r["warm"])
    print(f"slowest warm first call: {worst['warm']:.3f} s at depth {worst['depth']}, "
          f"{worst['warm_trace']:.3f} s of it tracing and {worst['warm_native']:.3f} s the step's "
          "native run (goal <= 0.1 s at every depth)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
