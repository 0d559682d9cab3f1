"""Hypothesis-generated programs (random op sequences over broadcastable shapes, size-0 shapes,
views and in-place updates) agree across eager mode, the interpreter and the C backend."""
from __future__ import annotations

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import tracegrad as tg  # noqa: E402
from tracegrad.ops.shapes import broadcast_shapes  # noqa: E402

BASES = [(3, 4), (0, 4), (2, 5)]


UNARY = {
    "tanh": lambda t: t.tanh(),
    "exp": lambda t: (t * 0.3).exp(),
    "sigmoid": lambda t: t.sigmoid(),
    "abs": lambda t: t.abs(),
    "neg": lambda t: -t,
    "relu": lambda t: t.relu(),
    "square": lambda t: t * t,
    "transposed": lambda t: (t.t() * 2.0).t() if t.ndim == 2 else t + 1.0,
    "flip": lambda t: t.flip(-1) if t.ndim else t,
    "reshape": lambda t: t.reshape(-1).reshape(t.shape),
    "sum_last": lambda t: t.sum(dim=-1, keepdim=True) if t.ndim else t,
    "amax_first": lambda t: t.amax(dim=0, keepdim=True) if t.ndim and t.shape[0] else t,
}
BINARY = {
    "add": lambda a, b: a + b,
    "mul": lambda a, b: a * b,
    "sub": lambda a, b: a - b,
    "maximum": lambda a, b: tg.maximum(a, b),
    "where": lambda a, b: tg.where(a > b, a, b),
}


@st.composite
def programs(draw):
    base = draw(st.sampled_from(BASES))
    n_in = draw(st.integers(1, 3))
    shapes = []
    for _ in range(n_in):
        kind = draw(st.sampled_from(["full", "row", "col", "last"]))
        shapes.append({"full": base, "row": (1, base[1]), "col": (base[0], 1), "last": (base[1],)}[kind])
    steps = []
    for _ in range(draw(st.integers(1, 8))):
        op = draw(st.sampled_from(sorted(UNARY) + sorted(BINARY) + ["inplace_add", "inplace_mul"]))
        steps.append((op, draw(st.integers(0, 100)), draw(st.integers(0, 100))))
    seed = draw(st.integers(0, 2**16))
    return shapes, steps, seed


def make_fn(steps):
    def fn(*xs):
        pool = list(xs)
        for op, i, j in steps:
            a, b = pool[i % len(pool)], pool[j % len(pool)]
            if op in UNARY:
                pool.append(UNARY[op](a))
            elif op in BINARY:
                pool.append(BINARY[op](a, b))
            elif broadcast_shapes(tuple(a.shape), tuple(b.shape)) == tuple(a.shape):
                u = a.clone()  # an in-place update of a fresh tensor, then read again
                (u.add_ if op == "inplace_add" else u.mul_)(b)
                pool.append(u * 1.0)
        return pool[-1], pool[len(xs) - 1:][0] + 0.0, sum(p.sum() for p in pool)
    return fn


def _run(fn, arrays, backend):
    xs = [tg.tensor(a.copy()) for a in arrays]
    f = fn if backend is None else tg.compile(fn, backend=backend, fullgraph=True)
    return [o.numpy() for o in f(*xs)], f


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_random_programs_agree(prog):
    shapes, steps, seed = prog
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s) for s in shapes]
    fn = make_fn(steps)
    eager, _ = _run(fn, arrays, None)
    interp, _ = _run(fn, arrays, "interpreter")
    native, f = _run(fn, arrays, "c")
    assert type(f.programs[0].executable).__name__ == "CExecutable"
    for e, i, c in zip(eager, interp, native):
        assert e.shape == i.shape == c.shape
        np.testing.assert_allclose(i, e, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(c, e, rtol=1e-10, atol=1e-12)


@st.composite
def batched_programs(draw):
    """Programs over inputs whose leading dimension is the batch (or broadcasts against it)."""
    n_in = draw(st.integers(1, 3))
    kinds = [draw(st.sampled_from(["full", "col", "row", "last"])) for _ in range(n_in)]
    kinds[0] = "full"  # the first argument carries the batch size
    steps = []
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(sorted(UNARY) + sorted(BINARY) + ["inplace_add", "inplace_mul"]))
        steps.append((op, draw(st.integers(0, 100)), draw(st.integers(0, 100))))
    return kinds, steps, draw(st.integers(0, 2**16))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batched_programs())
def test_random_programs_with_a_runtime_batch_size_agree(prog):
    """dynamic=True on the C backend: the code built for a runtime batch size (or a per-size
    build where the program's trace differs at that size) equals eager at every size."""
    kinds, steps, seed = prog
    rng = np.random.default_rng(seed)
    fn = make_fn(steps)
    f = tg.compile(fn, backend="c", fullgraph=True, dynamic=True)
    for B in (3, 6, 0, 9):
        shapes = [{"full": (B, 4), "col": (B, 1), "row": (1, 4), "last": (4,)}[k] for k in kinds]
        arrays = [rng.standard_normal(s) for s in shapes]
        eager, _ = _run(fn, arrays, None)
        native = [o.numpy() for o in f(*[tg.tensor(a) for a in arrays])]
        for e, c in zip(eager, native):
            assert e.shape == c.shape
            np.testing.assert_allclose(c, e, rtol=1e-10, atol=1e-12)
    # one program for every size, except where a result is a view of an argument (its view
    # function holds the traced sizes: one program per size, compiler/api.py _dynamic_wrap)
    assert len(f.programs) == (4 if f.programs[0].capture.view_outputs else 1)
