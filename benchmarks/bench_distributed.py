"""Data-parallel costs here (issue 24): the time of an all-reduce against its message size on 2
ranks, and a compiled DDP training step of the ``medium`` workload (benchmarks/workloads.py:
MLP 784-1024-1024-10, Adam, a global batch of 256 split over the ranks) at 1 and 2 ranks, with
the share of the step spent in all-reduce.

    python benchmarks/bench_distributed.py [--sizes 4K,64K,256K,1M,4M,16M] [--reps 30]
                                           [--ranks 1,2] [--steps 30] [--backend c] [--threads N]

The script launches its own ranks (``mpiexec -n N python -m mpi4py`` this file ``--worker ...``)
and prints markdown tables. Each rank uses ``cores // N`` threads (the ranks share the machine),
or ``--threads``.
Times are medians over the repetitions, as rank 0 sees them.

- all-reduce: ``tg.distributed.all_reduce`` of a float32 tensor (SUM); the in-place call that
  compiled programs make (``_mpi.allreduce_into``: the argument check, one small allgather,
  then MPI on the buffer itself); and mpi4py's ``Allreduce`` of the same buffer (the transport
  alone). The eager call also copies the tensor out and back (the op is out of place). "bus GB/s" is the ring all-reduce's
  traffic per rank, 2 (N-1)/N * bytes, over the time (docs/distributed.md's cost model).
- step: one call of the compiled step (forward, backward, the gradient all-reduces of DDP's
  buckets, Adam); "all-reduce" is the time inside the all-reduce calls of that step (measured
  by wrapping ``tracegrad.distributed._mpi.allreduce`` and ``allreduce_into``, which every path
  calls: eager, the interpreter and the C backend's callback).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

UNITS = {"K": 1 << 10, "M": 1 << 20}


def _bytes(text):
    text = text.strip().upper().rstrip("B")
    return int(text[:-1]) * UNITS[text[-1]] if text[-1] in UNITS else int(text)


def _label(n):
    return f"{n >> 20} MB" if n >= 1 << 20 else f"{n >> 10} KB"


def _median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def _emit(**kw):
    print("RESULT " + json.dumps(kw), flush=True)


def _worker_allreduce(args):
    import numpy as np

    import tracegrad as tg
    import tracegrad.distributed as dist
    from tracegrad.distributed import _mpi

    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    comm = _mpi.comm(0)
    MPI = _mpi.mpi()
    rows = []
    for size in map(_bytes, args.sizes.split(",")):
        buf = np.ones(size // 4, np.float32)
        t = tg.from_numpy(buf.copy())
        times = {"mpi4py": [], "tracegrad": [], "in_place": []}
        calls = {"mpi4py": lambda: comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM),
                 "tracegrad": lambda: dist.all_reduce(t),
                 "in_place": lambda: _mpi.allreduce_into(buf, "sum", 0)}
        for i in range(args.reps + 3):  # (3 warm-up calls)
            for name, call in calls.items():
                comm.Barrier()
                t0 = time.perf_counter()
                call()
                if i >= 3:
                    times[name].append(time.perf_counter() - t0)
        rows.append({"bytes": size, **{k: _median(v) for k, v in times.items()}})
    if rank == 0:
        _emit(kind="allreduce", world=world, rows=rows)
    dist.destroy_process_group()


def _worker_step(args):
    import warnings

    import tracegrad as tg
    import tracegrad.distributed as dist
    import workloads
    from tracegrad.distributed import _mpi

    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    tg.set_num_threads(args.threads or max(1, (os.cpu_count() or 1) // world))

    spent, depth = [], [0]  # seconds inside all-reduce calls since the last reset

    def timed(inner):
        def call(*a, **k):
            depth[0] += 1
            t0 = time.perf_counter()
            try:
                return inner(*a, **k)
            finally:
                depth[0] -= 1
                if not depth[0]:  # (allreduce_into may call allreduce: count the outer call only)
                    spent.append(time.perf_counter() - t0)
        return call

    _mpi.allreduce, _mpi.allreduce_into = timed(_mpi.allreduce), timed(_mpi.allreduce_into)

    batch = args.batch // world
    x, y = workloads._data(args.batch, 784, 10)
    x, y = x[rank * batch:(rank + 1) * batch], y[rank * batch:(rank + 1) * batch]
    model = tg.nn.parallel.DistributedDataParallel(workloads._mlp([784, 1024, 1024, 10], tg.nn.ReLU))
    opt = tg.optim.Adam(model.parameters(), lr=1e-3)

    @tg.compile(backend=args.backend)
    def step(x, y):
        opt.zero_grad()
        loss = tg.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            step(x, y)
    prog = step.programs[0]
    native = type(getattr(prog, "executable", None)).__name__
    steps, reduce = [], []
    for _ in range(args.steps):
        spent.clear()
        t0 = time.perf_counter()
        step(x, y)
        steps.append(time.perf_counter() - t0)
        reduce.append(sum(spent))
    shares = sorted(r / s for r, s in zip(reduce, steps))
    grad_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    if rank == 0:
        _emit(kind="step", world=world, batch=batch, step=_median(steps), allreduce=_median(reduce),
              share=shares[len(shares) // 2], calls=str(prog.graph).count("all_reduce"),
              grad_bytes=grad_bytes, executable=native, threads=tg.get_num_threads(),
              warnings=sorted({str(w.message)[:160] for w in caught}))
    dist.destroy_process_group()


def _launch(n, worker_args, timeout):
    beside = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    mpiexec = beside if os.path.exists(beside) else shutil.which("mpiexec")
    if mpiexec is None:
        sys.exit("no mpiexec: pip install -e '.[distributed]'")
    proc = subprocess.run([mpiexec, "-n", str(n), sys.executable, "-m", "mpi4py", __file__, *worker_args],
                          capture_output=True, text=True, timeout=timeout)
    if proc.returncode:
        sys.exit(f"{n} rank(s) failed:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return [json.loads(line[7:]) for line in proc.stdout.splitlines() if line.startswith("RESULT ")]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="4K,64K,256K,1M,4M,16M", help="all-reduce message sizes in bytes")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--ranks", default="1,2", help="rank counts of the DDP step")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--batch", type=int, default=256, help="the global batch (split over the ranks)")
    ap.add_argument("--backend", default="c")
    ap.add_argument("--threads", type=int, default=0, help="threads a rank (default: cores // ranks)")
    ap.add_argument("--skip-allreduce", action="store_true")
    ap.add_argument("--worker", choices=["allreduce", "step"], help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker == "allreduce":
        return _worker_allreduce(args)
    if args.worker == "step":
        return _worker_step(args)

    common = ["--sizes", args.sizes, "--reps", str(args.reps), "--steps", str(args.steps),
              "--batch", str(args.batch), "--backend", args.backend, "--threads", str(args.threads)]
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the start\n")
    if not args.skip_allreduce:
        (res,) = _launch(2, ["--worker", "allreduce", *common], timeout=600)
        n = res["world"]
        print(f"all-reduce, float32 SUM, {n} ranks (median of {args.reps})\n")
        print("| size | tg.distributed.all_reduce | in place (compiled programs) | mpi4py Allreduce "
              "| bus GB/s (in place) |")
        print("|---|---|---|---|---|")
        for r in res["rows"]:
            bus = 2 * (n - 1) / n * r["bytes"] / r["in_place"] / 1e9
            print(f"| {_label(r['bytes'])} | {r['tracegrad'] * 1e3:.3f} ms | {r['in_place'] * 1e3:.3f} ms "
                  f"| {r['mpi4py'] * 1e3:.3f} ms | {bus:.2f} |")
        print()
    print(f"compiled DDP step of medium (backend={args.backend!r}, global batch {args.batch}, "
          f"median of {args.steps} steps)\n")
    print("| ranks | batch/rank | threads/rank | step | all-reduce in step | share | all_reduce nodes | program |")
    print("|---|---|---|---|---|---|---|---|")
    notes = []
    for n in map(int, args.ranks.split(",")):
        (res,) = _launch(n, ["--worker", "step", *common], timeout=600)
        print(f"| {n} | {res['batch']} | {res['threads']} | {res['step'] * 1e3:.2f} ms | "
              f"{res['allreduce'] * 1e3:.2f} ms | {res['share'] * 100:.0f}% | {res['calls']} | {res['executable']} |")
        notes += [f"{n} rank(s): {w}" for w in res["warnings"]]
        grad_bytes = res["grad_bytes"]
    print(f"\ngradient: {grad_bytes / 2**20:.1f} MiB a step")
    for line in notes:
        print("warning:", line)


if __name__ == "__main__":
    main()
