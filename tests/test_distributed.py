"""tracegrad.distributed over MPI: each test writes a script, runs it on 2 or 3 ranks under
``mpiexec -n N python -m mpi4py`` (so a rank that raises ends every rank) with a timeout, and
checks what each rank reported (JSON lines in a file per rank)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("mpi4py")


def _mpiexec():
    beside = os.path.join(os.path.dirname(sys.executable), "mpiexec")  # (the mpich wheel's, in this env)
    return beside if os.path.exists(beside) else shutil.which("mpiexec")


MPIEXEC = _mpiexec()
pytestmark = pytest.mark.skipif(MPIEXEC is None, reason="no mpiexec (pip install 'tracegrad[distributed]')")

PRELUDE = r"""
import json, sys
import numpy as np
import tracegrad as tg
import tracegrad.distributed as dist

def report(**kw):  # (a file per rank: the ranks' stdout lines can interleave)
    with open(f"result{rank}.jsonl", "a") as f:
        f.write(json.dumps({"rank": rank, **kw}) + "\n")

dist.init_process_group(backend="mpi")
rank, world = dist.get_rank(), dist.get_world_size()
"""


def run_ranks(tmp_path, body, n=2, timeout=90, expect_fail=False):
    """Run PRELUDE + ``body`` on ``n`` ranks; the reported dicts in rank order (and the process)."""
    script = tmp_path / "script.py"
    parts = body if isinstance(body, (list, tuple)) else [body]  # (each part dedented on its own)
    script.write_text(PRELUDE + "".join(textwrap.dedent(b) for b in parts))
    proc = subprocess.run([MPIEXEC, "-n", str(n), sys.executable, "-m", "mpi4py", str(script)],
                          capture_output=True, text=True, timeout=timeout, cwd=tmp_path)
    if not expect_fail:
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = [json.loads(line) for r in range(n) if (tmp_path / f"result{r}.jsonl").exists()
               for line in (tmp_path / f"result{r}.jsonl").read_text().splitlines()]
    return results, proc


def test_collectives_match_numpy_on_three_ranks(tmp_path):
    results, _ = run_ranks(tmp_path, """
        out = {}
        x = np.arange(4.0) + rank
        for name in ("SUM", "AVG", "MAX", "MIN", "PRODUCT"):
            t = tg.tensor(x); dist.all_reduce(t, op=getattr(dist.ReduceOp, name)); out[name] = t.tolist()
        i = tg.tensor([rank, 10 - rank]); dist.all_reduce(i, op=dist.ReduceOp.MAX); out["int_max"] = i.tolist()
        d = tg.tensor([0.5 * rank], dtype=tg.float64); dist.all_reduce(d); out["f64"] = [d.dtype == tg.float64, d.item()]
        v0 = d._version; dist.all_reduce(d); out["version_bumped"] = d._version > v0
        t = tg.tensor([rank * 10.0, 1.0]); dist.broadcast(t, src=2); out["bcast"] = t.tolist()
        lst = [tg.zeros(2) for _ in range(world)]; dist.all_gather(lst, tg.full((2,), float(rank)))
        out["all_gather"] = [a.tolist() for a in lst]
        o = tg.zeros(world, 2); dist.all_gather_into_tensor(o, tg.full((2,), float(rank))); out["agt"] = o.tolist()
        o = tg.zeros(2); dist.reduce_scatter_tensor(o, tg.arange(2.0 * world) * (rank + 1)); out["rs"] = o.tolist()
        gl = [tg.zeros(1) for _ in range(world)] if rank == 1 else None
        dist.gather(tg.tensor([float(rank)]), gl, dst=1); out["gather"] = gl and [a.item() for a in gl]
        s = tg.zeros(2); dist.scatter(s, [tg.full((2,), 7.0 * i) for i in range(world)] if rank == 0 else None, src=0)
        out["scatter"] = s.tolist()
        sub = dist.new_group([0, 2]); t = tg.tensor([1.0 + rank]); dist.all_reduce(t, group=sub)
        out["sub"] = [t.item(), dist.get_rank(sub), dist.get_world_size(sub)]
        out["work"] = dist.all_reduce(tg.ones(1), async_op=True).wait()
        dist.barrier()
        report(**out)
        dist.destroy_process_group()
        report(initialized=dist.is_initialized())
    """, n=3)
    import numpy as np

    xs = [np.arange(4.0) + r for r in range(3)]
    want = {"SUM": sum(xs), "AVG": sum(xs) / 3, "MAX": xs[2], "MIN": xs[0], "PRODUCT": xs[0] * xs[1] * xs[2]}
    ranks = [r for r in results if "SUM" in r]
    assert len(ranks) == 3
    for r in ranks:
        for k, v in want.items():
            np.testing.assert_allclose(r[k], v, rtol=1e-6)
        assert r["int_max"] == [2, 10] and r["f64"] == [True, 1.5] and r["version_bumped"]
        assert r["bcast"] == [20.0, 1.0]
        assert r["all_gather"] == [[float(i)] * 2 for i in range(3)] and r["agt"] == r["all_gather"]
        assert r["rs"] == [6.0 * (2 * r["rank"]), 6.0 * (2 * r["rank"] + 1)]
        assert r["gather"] == ([0.0, 1.0, 2.0] if r["rank"] == 1 else None)
        assert r["scatter"] == [7.0 * r["rank"]] * 2
        assert r["sub"] == ({0: [4.0, 0, 2], 2: [4.0, 1, 2], 1: [2.0, -1, 2]}[r["rank"]])
        assert r["work"] is True
    assert [r["initialized"] for r in results if "initialized" in r] == [False] * 3


def test_mismatched_arguments_raise_on_every_rank(tmp_path):
    results, _ = run_ranks(tmp_path, """
        cases = {
            "shape": lambda: dist.all_reduce(tg.ones(2 + rank)),
            "dtype": lambda: dist.all_reduce(tg.ones(2, dtype=tg.float64 if rank else tg.float32)),
            "root": lambda: dist.broadcast(tg.ones(2), src=rank),
            "avg_int": lambda: dist.all_reduce(tg.ones(2, dtype=tg.int64), op=dist.ReduceOp.AVG),
            "gather_list": lambda: dist.all_gather([tg.zeros(2)], tg.ones(2)),
            "agt_shape": lambda: dist.all_gather_into_tensor(tg.zeros(3), tg.ones(2)),
        }
        out = {}
        for name, fn in cases.items():
            try:
                fn()
                out[name] = None
            except RuntimeError as e:
                out[name] = str(e)
        t = tg.ones(2); dist.all_reduce(t); out["after"] = t.tolist()   # the group still works
        report(**out)
    """, n=2, timeout=60)
    assert len(results) == 2
    for r in results:
        assert "rank 0: float32 [2]" in r["shape"] and "rank 1: float32 [3]" in r["shape"]
        assert "float64" in r["dtype"] and "disagree" in r["dtype"]
        assert "broadcast" in r["root"]
        assert "AVG" in r["avg_int"]
        assert "tensor_list must hold 2 tensors" in r["gather_list"]
        assert "output_tensor of shape [3]" in r["agt_shape"]
        assert r["after"] == [2.0, 2.0]


def test_a_rank_that_raises_ends_the_job(tmp_path):
    _, proc = run_ranks(tmp_path, """
        if rank == 1:
            raise ValueError("rank one gives up")
        dist.barrier()   # rank 0 would wait here forever without python -m mpi4py's abort
    """, n=2, timeout=60, expect_fail=True)
    assert proc.returncode != 0
    assert "rank one gives up" in proc.stderr


def test_without_init_the_calls_say_so():
    import tracegrad as tg
    import tracegrad.distributed as dist

    assert dist.is_available() and not dist.is_initialized()
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        dist.all_reduce(tg.ones(2))
    with pytest.raises(ValueError, match="backend='mpi'"):
        dist.init_process_group(backend="nccl")


DDP_SETUP = """
import warnings
def make():
    tg.manual_seed(100 + rank)   # a different init on every rank: DDP must broadcast rank 0's
    return tg.nn.Sequential(tg.nn.Linear(5, 16), tg.nn.Tanh(), tg.nn.Linear(16, 3))

rng = np.random.default_rng(0)
X = tg.tensor(rng.standard_normal((12 * world, 5)), dtype=tg.float32)
Y = tg.tensor(rng.standard_normal((12 * world, 3)), dtype=tg.float32)
xs, ys = X[rank * 12:(rank + 1) * 12], Y[rank * 12:(rank + 1) * 12]

def pair(opt_cls, **kw):
    ddp = tg.nn.parallel.DistributedDataParallel(make(), bucket_cap_mb=0.0002)  # (several buckets)
    ref = make(); ref.load_state_dict(ddp.module.state_dict())
    return ddp, opt_cls(ddp.parameters(), **kw), ref, opt_cls(ref.parameters(), **kw)

def ref_step(ref, ropt):
    ropt.zero_grad(); tg.nn.functional.mse_loss(ref(X), Y).backward(); ropt.step()

def max_diff(a, b):
    return max(float((p - q).abs().max()) for p, q in zip(a.parameters(), b.parameters()))

def flat(m):
    return np.concatenate([p.detach().numpy().ravel() for p in m.parameters()])
"""


@pytest.mark.parametrize("n", [2, 3])
def test_ddp_eager_equals_single_process_training(tmp_path, n):
    results, _ = run_ranks(tmp_path, [DDP_SETUP, """
        out = {}
        fresh = make()
        ddp, opt, ref, ropt = pair(tg.optim.SGD, lr=0.1, momentum=0.9)
        out["broadcast"] = bool(np.array_equal(flat(ddp.module), flat(ref)))
        out["changed_from_own_init"] = rank == 0 or not np.array_equal(flat(fresh), flat(ddp.module))
        out["buckets"] = len(ddp._reducer.buckets)
        for _ in range(20):
            opt.zero_grad(); tg.nn.functional.mse_loss(ddp(xs), ys).backward(); opt.step(); ref_step(ref, ropt)
        out["sgd"] = max_diff(ddp.module, ref)
        ddp, opt, ref, ropt = pair(tg.optim.Adam, lr=0.01)
        for _ in range(20):
            opt.zero_grad(); tg.nn.functional.mse_loss(ddp(xs), ys).backward(); opt.step(); ref_step(ref, ropt)
        out["adam"] = max_diff(ddp.module, ref)
        # no_sync: two local backwards, then one synchronised: the average of the accumulated sums
        ddp, opt, ref, ropt = pair(tg.optim.SGD, lr=0.1)
        with ddp.no_sync():
            tg.nn.functional.mse_loss(ddp(xs), ys).backward()
        tg.nn.functional.mse_loss(ddp(xs), ys).backward()
        tg.nn.functional.mse_loss(ref(X), Y).backward()
        out["no_sync"] = float(np.abs(np.concatenate([p.grad.numpy().ravel() for p in ddp.parameters()])
                                     - 2 * np.concatenate([p.grad.numpy().ravel() for p in ref.parameters()])).max())
        out["params"] = flat(ddp.module).tolist()
        out["state_keys"] = sorted(ddp.state_dict())[:1]
        report(**out)
    """], n=n)
    assert len(results) == n
    for r in results:
        assert r["broadcast"] and r["changed_from_own_init"] and r["buckets"] > 1
        assert r["sgd"] < 1e-6 and r["adam"] < 1e-6 and r["no_sync"] < 1e-6, r
        assert r["params"] == results[0]["params"]  # identical replicas, bit for bit
        assert r["state_keys"] == ["module.0.bias"]


@pytest.mark.parametrize("backend,optimizer", [("interpreter", "Adam, lr=0.01"), ("c", "Adam, lr=0.01"),
                                               ("c", "SGD, lr=0.05, momentum=0.9")])
def test_ddp_compiled_step_captures_the_all_reduce(tmp_path, backend, optimizer):
    results, _ = run_ranks(tmp_path, [DDP_SETUP, f"""
        ddp, opt, ref, ropt = pair(tg.optim.{optimizer})

        @tg.compile(backend="{backend}")
        def step(x, y):
            opt.zero_grad()
            loss = tg.nn.functional.mse_loss(ddp(x), y)
            loss.backward()
            opt.step()
            return loss

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for _ in range(15):
                step(xs, ys); ref_step(ref, ropt)
        prog = step.programs[0]
        source = getattr(prog.executable, "source", "")
        report(diff=max_diff(ddp.module, ref), programs=len(step.programs),
               all_reduces=str(prog.graph).count("all_reduce"), buckets=len(ddp._reducer.buckets),
               warnings=[str(w.message) for w in caught], params=flat(ddp.module).tolist(),
               executable=type(prog.executable).__name__, native_collectives=source.count("if (tg_collective("),
               mpi_in_source=("mpi.h" in source.lower()) or ("MPI_" in source))
    """], n=2, timeout=120)
    assert len(results) == 2
    for r in results:
        assert r["diff"] < 1e-6, r
        # DDP's buckets, forced small here: the bucketing pass (compiler/passes/
        # bucket_collectives.py) merges those whose results nothing reads in between
        assert r["programs"] == 1 and r["buckets"] > 1 and 1 <= r["all_reduces"] <= r["buckets"]
        assert r["params"] == results[0]["params"]
        assert not r["warnings"], r["warnings"]  # (no graph break, no interpreter fallback)
        if backend == "c":  # one native call a step, the all-reduces inside; no MPI in the program
            assert r["executable"] == "CExecutable" and r["native_collectives"] == r["all_reduces"], r
            assert not r["mpi_in_source"]


def test_launcher_runs_the_example_on_two_ranks(tmp_path):
    """examples/ddp_train.py through ``python -m tracegrad.distributed.run`` (its replicas check
    themselves; the interpreter backend keeps this test off the C toolchain)."""
    example = os.path.join(os.path.dirname(__file__), "..", "examples", "ddp_train.py")
    proc = subprocess.run([sys.executable, "-m", "tracegrad.distributed.run", "-n", "2", example, "interpreter"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "2 rank(s), 30 steps" in proc.stdout and "replicas identical" in proc.stdout


def test_launcher_usage_errors():
    proc = subprocess.run([sys.executable, "-m", "tracegrad.distributed.run", "-n", "2"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "give one script to run" in proc.stderr


def test_collectives_in_a_c_program_equal_eager(tmp_path):
    """all_reduce (each reduction, several dtypes, in place on an input) and broadcast lowered
    by the C backend (fullgraph=True: no fallback) equal eager; mismatched shapes across ranks
    raise the same clear error on every rank from inside the program, and the group stays
    usable."""
    results, _ = run_ranks(tmp_path, """
        def fn(a, b, c, h):
            a = a * 2; dist.all_reduce(a)
            dist.all_reduce(b, op=dist.ReduceOp.AVG)            # float64, an input in place
            dist.all_reduce(c, op=dist.ReduceOp.MAX)            # int64
            h2 = h + 1; dist.all_reduce(h2, op=dist.ReduceOp.PRODUCT)  # float16
            m = a.clone(); dist.all_reduce(m, op=dist.ReduceOp.MIN)
            e = a[1:3] * (rank + 1); dist.broadcast(e, src=1)
            return a, e, h2, m

        def args():
            return (tg.arange(4.0) + rank, tg.tensor([1.0, 2.0 + rank], dtype=tg.float64),
                    tg.tensor([rank, 5 - rank]), tg.tensor([0.5, 1.5 + rank], dtype=tg.float16))

        eager_args = args(); want = fn(*eager_args)
        f = tg.compile(fn, backend="c", fullgraph=True)
        c_args = args(); got = f(*c_args)
        out = {"equal": [g.tolist() == w.tolist() and g.dtype == w.dtype for g, w in zip(got, want)],
               "inputs": [c_args[1].tolist() == eager_args[1].tolist(), c_args[2].tolist() == eager_args[2].tolist()],
               "executable": type(f.programs[0].executable).__name__}
        g = tg.compile(lambda x: (dist.all_reduce(x), x)[1], backend="c")
        try:
            g(tg.ones(2 + rank))
            out["mismatch"] = None
        except RuntimeError as e:
            out["mismatch"] = str(e)
        t = tg.ones(2); dist.all_reduce(t); out["after"] = t.tolist()
        def reduced(x):
            dist.all_reduce(x); return x * 2
        try:
            tg.export(reduced, tg.ones(2)); out["export"] = None
        except tg.compiler.CompileError as e:
            out["export"] = str(e)
        report(**out)
    """, n=2, timeout=120)
    assert len(results) == 2
    for r in results:
        assert r["equal"] == [True] * 4 and r["inputs"] == [True, True], r
        assert r["executable"] == "CExecutable"
        assert r["mismatch"] == ("all_reduce: the ranks disagree on the collective's arguments "
                                 "(rank 0: float32 [2], sum; rank 1: float32 [3], sum)"), r
        assert r["after"] == [2.0, 2.0]
        assert "tg.export: reduced holds all_reduce" in r["export"]


def test_all_reduces_written_one_by_one_are_bucketed(tmp_path):
    """``for p in params: dist.all_reduce(p.grad)`` inside a compiled step: the bucketing pass
    (compiler/passes/bucket_collectives.py) makes it one all-reduce of a flat buffer per dtype,
    and the step equals eager."""
    results, _ = run_ranks(tmp_path, """
        def make():
            tg.manual_seed(0)
            model = tg.nn.Sequential(tg.nn.Linear(3, 4), tg.nn.Tanh(), tg.nn.Linear(4, 2))
            return model, tg.optim.SGD(model.parameters(), lr=0.1)

        def stepper(model, opt):
            def step(x, y):
                opt.zero_grad()
                tg.nn.functional.mse_loss(model(x), y).backward()
                for p in model.parameters():
                    dist.all_reduce(p.grad, op=dist.ReduceOp.AVG)
                opt.step()
            return step

        x, y = tg.ones(5, 3) * (rank + 1), tg.zeros(5, 2)
        m1, o1 = make(); eager = stepper(m1, o1)
        m2, o2 = make(); compiled = tg.compile(stepper(m2, o2), backend="c", fullgraph=True)
        for _ in range(3):
            eager(x, y); compiled(x, y)
        graph = str(compiled.programs[0].graph)
        report(diff=max(float((a - b).abs().max()) for a, b in zip(m1.parameters(), m2.parameters())),
               all_reduces=graph.count("= all_reduce"))
    """, n=2, timeout=120)
    assert len(results) == 2
    for r in results:
        assert r["diff"] < 1e-6 and r["all_reduces"] == 1, r


# --- DistributedSampler: index lists against torch's sampler (no process group needed there) ---

@pytest.mark.parametrize("n,replicas", [(10, 3), (12, 4), (7, 2), (2, 3), (1, 1), (100, 8)])
def test_distributed_sampler_equals_torchs_index_lists(n, replicas):
    torch = pytest.importorskip("torch")
    from tracegrad.utils.data import distributed as D

    for shuffle in (False, True):
        for drop_last in (False, True):
            if drop_last and n < replicas:
                continue  # (PyTorch gives every rank 0 samples there; covered by the length check below)
            for seed in (0, 7):
                ours = [D.DistributedSampler(range(n), replicas, r, shuffle=shuffle, seed=seed, drop_last=drop_last)
                        for r in range(replicas)]
                theirs = [torch.utils.data.distributed.DistributedSampler(
                    range(n), replicas, r, shuffle=shuffle, seed=seed, drop_last=drop_last) for r in range(replicas)]
                for epoch in (0, 1, 5):
                    for s in ours + theirs:
                        s.set_epoch(epoch)
                    got, want = [list(s) for s in ours], [list(s) for s in theirs]
                    assert got == want, (n, replicas, shuffle, drop_last, seed, epoch)
                    assert [len(s) for s in ours] == [len(s) for s in theirs]
    assert [len(D.DistributedSampler(range(2), 3, r, drop_last=True)) for r in range(3)] == [0, 0, 0]


def test_distributed_sampler_order_and_errors():
    torch = pytest.importorskip("torch")
    from tracegrad.utils.data.distributed import DistributedSampler, _torch_randperm

    for n, seed in ((1000, 3), (50_000, 2**40 + 5)):  # (PyTorch keeps a seed's low 32 bits)
        assert _torch_randperm(n, seed) == torch.randperm(n, generator=torch.Generator().manual_seed(seed)).tolist()
    # an epoch changes the order; the union over the ranks is the dataset, padded by repeats
    a = [list(DistributedSampler(range(9), 2, r, seed=1)) for r in range(2)]
    s = DistributedSampler(range(9), 2, 0, seed=1)
    s.set_epoch(1)
    assert list(s) != a[0] and sorted(set(a[0] + a[1])) == list(range(9)) and len(a[0] + a[1]) == 10
    with pytest.raises(ValueError, match=r"Invalid rank 2, rank should be in the interval \[0, 1\]"):
        DistributedSampler(range(4), num_replicas=2, rank=2)
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        DistributedSampler(range(4))
    # with a DataLoader, as in PyTorch
    import tracegrad as tg

    ds = tg.utils.data.TensorDataset(tg.arange(10.0))
    loader = tg.utils.data.DataLoader(ds, batch_size=2, sampler=DistributedSampler(ds, 2, 1, shuffle=False))
    assert [b[0].tolist() for b in loader] == [[1.0, 3.0], [5.0, 7.0], [9.0]]


def test_checkpoint_written_by_rank_0_and_loaded_by_all(tmp_path):
    """docs/distributed.md's pattern: rank 0 saves (model and optimizer), a barrier, every rank
    loads; training resumed from the checkpoint equals training that never stopped, on every
    rank. Also DistributedSampler's rank and size from the group."""
    results, _ = run_ranks(tmp_path, [DDP_SETUP, """
        from tracegrad.utils.data.distributed import DistributedSampler

        sampler = DistributedSampler(range(10), shuffle=False)
        def train(ddp, opt, steps):
            for _ in range(steps):
                opt.zero_grad(); tg.nn.functional.mse_loss(ddp(xs), ys).backward(); opt.step()

        ddp, opt, _, _ = pair(tg.optim.Adam, lr=0.01)
        train(ddp, opt, 5)
        if rank == 0:
            tg.save({"model": ddp.state_dict(), "optimizer": opt.state_dict(), "step": 5}, "ckpt.pt")
        dist.barrier()                     # nobody reads before rank 0 has finished writing
        ckpt = tg.load("ckpt.pt")
        train(ddp, opt, 5)                 # the run that never stopped

        resumed = tg.nn.parallel.DistributedDataParallel(make())  # a fresh replica (other init)
        resumed.load_state_dict(ckpt["model"])
        ropt = tg.optim.Adam(resumed.parameters(), lr=0.01)
        ropt.load_state_dict(ckpt["optimizer"])
        train(resumed, ropt, 5)
        report(sampler=[sampler.num_replicas, sampler.rank, list(sampler)], step=ckpt["step"],
               diff=float(np.abs(flat(resumed.module) - flat(ddp.module)).max()), params=flat(resumed.module).tolist())
    """], n=2, timeout=90)
    assert len(results) == 2
    for r in results:
        assert r["sampler"][:2] == [2, r["rank"]] and r["sampler"][2] == list(range(r["rank"], 10, 2))
        assert r["step"] == 5 and r["diff"] == 0.0, r
        assert r["params"] == results[0]["params"]
