"""The batch split of the C backend (backends/c/batch_split.py): a program whose rows are
independent runs them on two threads, half the batch each, and must agree with eager mode and
with the same program unsplit; a program whose rows are not provably independent is not split.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.nn.functional as F
from compile_oracle import run_both

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SPLIT = {"batch_split": True}


def is_split(compiled):
    return all("tg_half" in p.executable.source for p in compiled.programs)


def mlp_step(batch, act=tg.nn.Tanh, opt=tg.optim.SGD, loss=F.cross_entropy, sizes=(12, 16, 5), clip=None,
             **kw):
    """A ``compile_oracle.run_both`` maker: a small MLP's whole training step."""
    def make():
        tg.manual_seed(0)
        layers = [tg.nn.Linear(sizes[0], sizes[1]), act(), tg.nn.Linear(sizes[1], sizes[2])]
        model = tg.nn.Sequential(*layers)
        o = opt(model.parameters(), lr=0.05, **kw)
        rng = np.random.default_rng(1)
        data = [(tg.tensor(rng.standard_normal((batch, sizes[0])).astype(np.float32)),
                 tg.tensor(rng.integers(0, sizes[2], batch)) if loss is F.cross_entropy
                 else tg.tensor(rng.standard_normal((batch, sizes[2])).astype(np.float32)))
                for _ in range(3)]

        def step(x, y):
            o.zero_grad()
            out = model(x)
            value = loss(out, y)
            value.backward()
            if clip is not None:  # (every update then depends on every gradient)
                tg.nn.utils.clip_grad_norm_(model.parameters(), clip)
            o.step()
            return value, out

        return step, lambda k: data[k], list(model.parameters())
    return make


@pytest.mark.parametrize("case", [
    dict(batch=8), dict(batch=6, act=tg.nn.ReLU), dict(batch=10, opt=tg.optim.Adam),
    dict(batch=8, opt=tg.optim.SGD, momentum=0.9, weight_decay=0.01),
    dict(batch=4, loss=F.mse_loss), dict(batch=8, loss=F.l1_loss, act=tg.nn.GELU),
    dict(batch=8, clip=0.5, sizes=(12, 32, 20)), dict(batch=8, opt=tg.optim.Adam, clip=0.5, sizes=(12, 32, 20)),
])
def test_training_steps_agree_with_eager(case):
    """Forward, backward and the update, the loss and the returned batch of outputs (written by
    the two halves into one array), over three calls. The updates run as two tails, a share of
    the parameters each, unless every update depends on every gradient (clipping by the norm:
    then one, as the gradients are too large to add up twice)."""
    cf = run_both(mlp_step(**case), calls=3, backend="c", options=SPLIT)
    assert is_split(cf)
    assert ("static int tg_tail1(" in cf.programs[0].executable.source) == ("clip" not in case)


def test_an_update_that_reads_another_parameter_stays_with_its_writer():
    """A small parameter written in place by one update and read by another (before or after
    its update): both go to the same tail, else one core would read it while the other writes."""
    def make():
        tg.manual_seed(0)
        w = tg.randn(6, 40, requires_grad=True)
        v = tg.randn(40, 3, requires_grad=True)
        s = tg.randn(3, requires_grad=True)

        def step(x):
            loss = ((x @ w).tanh() @ v * s).square().mean()
            loss.backward()
            with tg.no_grad():
                w.sub_(0.1 * w.grad)
                s.sub_(0.1 * s.grad)
                v.sub_(0.1 * (v.grad + s.sum()))  # reads s after its update
                w.add_(0.01 * s.mean())  # and w's second write reads s too
            for t in (w, v, s):
                t.grad = None
            return loss

        xs = [tg.randn(8, 6) for _ in range(3)]
        return step, lambda k: (xs[k],), [w, v, s]

    cf = run_both(make, calls=3, backend="c", options=SPLIT)
    assert is_split(cf)


def test_cross_entropy_with_ignored_targets_and_out_of_range_ones():
    """The count of valid targets (the mean's divisor) is computed over the whole batch by each
    half; an out-of-range target in either half raises eager's error."""
    tg.manual_seed(0)
    lin = tg.nn.Linear(6, 4)

    def step(x, y):
        loss = F.cross_entropy(lin(x), y, ignore_index=-100)
        loss.backward()
        return loss

    cf = tg.compile(step, options=SPLIT)
    x = tg.randn(8, 6)
    y = tg.tensor([0, -100, 3, 1, -100, 2, 2, 0])
    want = F.cross_entropy(lin(x), y, ignore_index=-100)
    lin.zero_grad()
    np.testing.assert_allclose(cf(x, y).item(), want.item(), rtol=1e-6)
    assert is_split(cf)
    bad = tg.tensor([0, 1, 2, 3, 0, 1, 2, 9])  # in the second half
    with pytest.raises(IndexError):
        cf(x, bad)


@pytest.mark.parametrize("what", ["dropout", "odd batch", "batch norm", "softmax over the batch"])
def test_programs_whose_rows_are_not_independent_are_not_split(what):
    tg.manual_seed(0)
    lin = tg.nn.Linear(6, 4)
    bn = tg.nn.BatchNorm1d(4)
    body = {"dropout": lambda x: F.dropout(lin(x), 0.5),
            "odd batch": lin,
            "batch norm": lambda x: bn(lin(x)),
            "softmax over the batch": lambda x: lin(x).softmax(dim=0)}[what]

    def step(x):
        out = body(x)
        out.sum().backward()
        return out

    cf = tg.compile(step, options=SPLIT)
    x = tg.randn(7 if what == "odd batch" else 8, 6)
    out = cf(x)
    assert out.shape == (x.shape[0], 4)
    assert not is_split(cf)
    if what != "dropout":  # (the rest is deterministic: compare with eager)
        lin.zero_grad()
        np.testing.assert_allclose(out.detach().numpy(), body(x).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_auto_rule(monkeypatch):
    """Auto splits tiny's MLP from batch 64 on, with two threads allowed; never on one."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import workloads
    from tracegrad.compiler.backends.c import threads

    monkeypatch.setattr(threads, "get_num_threads", lambda: 2)
    for batch, want in ((48, False), (64, True)):
        step, args = workloads.make_tiny("c", batch=batch)
        step(*args)
        assert is_split(step) == want, batch
    monkeypatch.setattr(threads, "get_num_threads", lambda: 1)
    step, args = workloads.make_tiny("c", batch=64)
    step(*args)
    assert not is_split(step)


def test_a_forked_child_runs_both_halves_itself():
    """A child process has no worker thread (fork copies only the caller): the caller runs the
    second half too, and gets the same numbers (as in a DataLoader worker)."""
    script = textwrap.dedent("""
        import os, numpy as np, tracegrad as tg
        tg.manual_seed(0)
        w = tg.randn(16, 8, requires_grad=True)
        f = tg.compile(lambda x: tg.autograd.grad((x @ w).tanh().sum(), [w])[0],
                       options={"batch_split": True})
        x = tg.randn(32, 16)
        want = f(x).numpy()
        assert "tg_half" in f.programs[0].executable.source
        pid = os.fork()
        if pid == 0:
            ok = all(np.array_equal(f(x).numpy(), want) for _ in range(50))
            os._exit(0 if ok else 3)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, status
        assert np.array_equal(f(x).numpy(), want)
        print("ok")
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]


# ----------------------------------------------------------------------------- random programs
W = np.random.default_rng(7).standard_normal((4, 3))
UNARY = {
    "tanh": lambda t: t.tanh(),
    "relu": lambda t: t.relu(),
    "square": lambda t: t * t,
    "transposed": lambda t: (t.t() * 2.0).t() if t.ndim == 2 else t + 1.0,
    "flip": lambda t: t.flip(-1),
    "reshape": lambda t: t.reshape(t.shape[0], -1).reshape(t.shape),
    "sum_last": lambda t: t.sum(dim=-1, keepdim=True),
    "product": lambda t: (t @ tg.tensor(W[: t.shape[-1]]))[..., :1] * t if t.ndim == 2 else t,
    "batch_sum": lambda t: t.sum(dim=0) * t,  # reduced over the batch, then read by every row
    "gram": lambda t: t + (t.t() @ t).sum() if t.ndim == 2 else t,
    "amax_first": lambda t: t.amax(dim=0, keepdim=True) + t if t.ndim == 2 else t,
    "cumsum": lambda t: t.cumsum(dim=-1),
    "cumsum_transposed": lambda t: t.t().cumsum(dim=0).t() if t.ndim == 2 else t,
    "argmax": lambda t: t * t.argmax(dim=-1, keepdim=True).to(t.dtype) if t.ndim == 2 else t,
}
BINARY = {"add": lambda a, b: a + b, "mul": lambda a, b: a * b,
          "where": lambda a, b: tg.where(a > b, a, b)}


@st.composite
def batched_programs(draw):
    kinds = [draw(st.sampled_from(["full", "col", "row", "last"])) for _ in range(draw(st.integers(1, 3)))]
    kinds[0] = "full"  # the first argument carries the batch
    steps = [(draw(st.sampled_from(sorted(UNARY) + sorted(BINARY))), draw(st.integers(0, 99)),
              draw(st.integers(0, 99))) for _ in range(draw(st.integers(1, 7)))]
    return kinds, steps, draw(st.integers(0, 2**16))


def make_fn(steps):
    def fn(*xs):
        pool = list(xs)
        for op, i, j in steps:
            a, b = pool[i % len(pool)], pool[j % len(pool)]
            pool.append(UNARY[op](a) if op in UNARY else BINARY[op](a, b))
        return pool[-1] * 1.0, sum(p.sum() for p in pool)
    return fn


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batched_programs())
def test_random_programs_split_or_not_agree_with_eager(prog):
    """Random programs over a batch (elementwise ops, broadcasting, transposes, products with a
    batch-free weight, reductions over and across the batch): split where the analysis proves
    the rows independent, whole otherwise, equal to eager either way."""
    kinds, steps, seed = prog
    rng = np.random.default_rng(seed)
    fn = make_fn(steps)
    arrays = [rng.standard_normal({"full": (6, 4), "col": (6, 1), "row": (1, 4), "last": (4,)}[k])
              for k in kinds]
    want = [o.numpy() for o in fn(*[tg.tensor(a) for a in arrays])]
    f = tg.compile(fn, fullgraph=True, options=SPLIT)
    got = [o.numpy() for o in f(*[tg.tensor(a) for a in arrays])]
    for w, g in zip(want, got):
        assert w.shape == g.shape
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-10)


def test_the_random_programs_do_split():
    """(So that the test above exercises the split, not only the refusals.)"""
    fn = make_fn([("product", 0, 0), ("tanh", 1, 0), ("mul", 2, 1), ("transposed", 3, 0), ("flip", 4, 0),
                  ("sum_last", 5, 0), ("where", 6, 2)])
    x = tg.randn(6, 4, dtype=tg.float64)
    f = tg.compile(fn, fullgraph=True, options=SPLIT)
    got = [o.numpy() for o in f(x)]
    for w, g in zip([o.numpy() for o in fn(x)], got):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-10)
    assert is_split(f)


def test_one_thread_runs_both_halves_on_the_caller():
    """``tg.set_num_threads(1)`` after the build: the worker thread runs no half (the caller
    runs both), the numbers stay; back at two threads (where the machine has two cores), the
    worker takes halves again."""
    from tracegrad.compiler.backends.c.pool import worker_runs

    tg.manual_seed(0)
    w = tg.randn(128, 128, requires_grad=True)  # (halves long enough for the worker to take one)
    f = tg.compile(lambda x: tg.autograd.grad((x @ w).tanh().sum(), [w])[0], options=SPLIT)
    x = tg.randn(64, 128)
    want = f(x).numpy()
    assert is_split(f)
    before = tg.get_num_threads()
    try:
        tg.set_num_threads(1)
        runs = worker_runs()
        for _ in range(100):
            assert np.array_equal(f(x).numpy(), want)
        assert worker_runs() == runs
        tg.set_num_threads(2)
        for _ in range(300):
            assert np.array_equal(f(x).numpy(), want)
        if len(os.sched_getaffinity(0)) >= 2:
            assert worker_runs() > runs
    finally:
        tg.set_num_threads(before)
