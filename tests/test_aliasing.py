"""Aliasing between a compiled function's arguments, parameters and state (ir/aliasing.py):
compiled equals eager whether the tensors it binds are distinct, the same tensor twice,
overlapping views or disjoint views of one storage; results that eager returns as views of
an argument are views compiled too.

The differential tests draw a program of in-place ops on two arguments and a sequence of
calls, each with its own aliasing of the arguments, and run it eagerly and compiled on twin
tensors (both backends), comparing results and the arguments' storage after every call.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tracegrad as tg
import tracegrad.nn as nn
from tracegrad.compiler import CompileError

BACKENDS = ("interpreter", "c")


def _close(got, want):
    np.testing.assert_allclose(_np(got), _np(want), rtol=1e-5, atol=1e-5)


def _np(x):
    return x.detach().numpy() if isinstance(x, tg.Tensor) else np.asarray(x)


# ----------------------------------------------------------------------------- the examples
@pytest.mark.parametrize("backend", BACKENDS)
def test_same_tensor_twice_sees_the_write(backend):
    def f(a, b):
        a.add_(1)
        return a * b

    cf = tg.compile(f, backend=backend)
    x = tg.ones(3)
    _close(cf(x, x), [4, 4, 4])  # eager: (1 + 1) * (1 + 1)
    _close(x, [2, 2, 2])
    y, z = tg.ones(3), tg.ones(3)
    _close(cf(y, z), [2, 2, 2])  # distinct again: a second program
    _close(z, [1, 1, 1])
    x = tg.ones(3)
    _close(cf(x, x), [4, 4, 4])  # the first program again
    assert len(cf.programs) == 2
    assert "aliasing: b is a" in "\n".join(cf.programs[0].guards)
    assert cf.programs[0].calls == 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_same_tensor_twice_with_gradients(backend):
    def f(a, b):
        return (a * b).sum()

    x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    tg.compile(f, backend=backend)(x, x).backward()
    _close(x.grad, [2, 4, 6])


def _overlapping_params():
    base = tg.arange(10.0)
    p1, p2 = nn.Parameter(base[0:6]), nn.Parameter(base[4:10])
    assert np.shares_memory(p1._value, p2._value)
    opt = tg.optim.SGD([p1, p2], lr=0.1)

    def step(x):
        opt.zero_grad()
        loss = (p1 * x).sum() + (p2 * x * 2).sum()
        loss.backward()
        opt.step()
        return loss

    return step, base


@pytest.mark.parametrize("backend", BACKENDS)
def test_overlapping_parameters_under_sgd(backend):
    fe, be = _overlapping_params()
    fc, bc = _overlapping_params()
    cf = tg.compile(fc, backend=backend)
    x = tg.ones(6)
    with pytest.warns(RuntimeWarning, match="p1 and p2 share memory"):
        cf(x)
    fe(x)
    for _ in range(2):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # warned once: later calls are eager silently
            _close(cf(x), fe(x))
    _close(bc, be)
    assert len(cf.programs) == 1 and "share memory" in "\n".join(cf.programs[0].guards)
    fg, _ = _overlapping_params()
    with pytest.raises(CompileError, match="share memory"):
        tg.compile(fg, backend=backend, fullgraph=True)(x)


@pytest.mark.parametrize("backend", BACKENDS)
def test_argument_that_is_a_parameter_the_function_updates(backend):
    lin = nn.Linear(3, 3)

    def f(w):
        with tg.no_grad():
            lin.weight.mul_(2)
        return w.sum()

    with tg.no_grad():
        lin.weight.fill_(1.0)
    cf = tg.compile(f, backend=backend)
    _close(cf(tg.ones(3, 3)), 9.0)  # distinct: compiled
    with pytest.warns(RuntimeWarning, match="argument w and lin.weight share memory"):
        r = cf(lin.weight)
    _close(r, 36.0)  # eager reads the doubled weight: 9 * 2 * 2
    _close(lin.weight, np.full((3, 3), 4.0))


@pytest.mark.parametrize("backend", BACKENDS)
def test_tied_weights_stay_one_tensor(backend):
    """The same Parameter in two modules is lifted once: no aliasing, one program."""
    def make():
        tg.manual_seed(0)
        emb = nn.Linear(4, 4, bias=False)
        head = nn.Linear(4, 4, bias=False)
        head.weight = emb.weight
        opt = tg.optim.SGD(list(emb.parameters()), lr=0.1)

        def step(x):
            opt.zero_grad()
            loss = head(emb(x)).pow(2).sum()
            loss.backward()
            opt.step()
            return loss

        return step, emb.weight

    fe, we = make()
    fc, wc = make()
    cf = tg.compile(fc, backend=backend)
    x = tg.ones(2, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            _close(cf(x), fe(x))
    _close(wc, we)
    assert len(cf.programs) == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_disjoint_views_of_one_storage_compile(backend):
    """Same base, no element in common: nothing to fall back for."""
    def f(a, b):
        a.mul_(2)
        return a + b

    cf = tg.compile(f, backend=backend)
    for _ in range(2):
        base = tg.arange(8.0)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            r = cf(base[0::2], base[1::2])
        _close(r, np.arange(0, 8, 2) * 2 + np.arange(1, 8, 2))
        _close(base, [0, 1, 4, 3, 8, 5, 12, 7])
    assert len(cf.programs) == 1 and cf.programs[0].calls == 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_grad_tensors_sharing_a_buffer(backend):
    """.grad tensors that are views of one flat buffer accumulate as eagerly; when they
    overlap, the call runs eagerly."""
    def make(overlap):
        w1 = tg.ones(3, requires_grad=True)
        w2 = tg.ones(3, requires_grad=True)
        buf = tg.zeros(6)
        w1.grad = buf[0:3]
        w2.grad = buf[2:5] if overlap else buf[3:6]

        def f(x):
            (w1 * x).sum().backward()
            (w2 * x * 2).sum().backward()

        return f, buf

    for overlap in (False, True):
        fe, be = make(overlap)
        fc, bc = make(overlap)
        cf = tg.compile(fc, backend=backend)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for _ in range(2):
                fe(tg.arange(3.0))
                cf(tg.arange(3.0))
        _close(bc, be)
        if overlap:  # (disjoint ones are written through their buffer, which the
            # grads' own inputs overlap: that may run eagerly too, and must equal eager)
            assert any("share memory" in str(w.message) for w in caught)


# ----------------------------------------------------------------------------- view results
VIEWS = {
    "view": lambda a: a.view(-1),
    "reshape": lambda a: a.reshape(3, 2),
    "transpose": lambda a: a.t(),
    "slice": lambda a: a[1:],
    "select": lambda a: a[0],
    "expand": lambda a: a[:, :1].expand(2, 5),
    "squeeze": lambda a: a.unsqueeze(0).squeeze(0),
    "unsqueeze": lambda a: a.unsqueeze(1),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(VIEWS))
def test_returned_view_writes_through(backend, name):
    view = VIEWS[name]
    cf = tg.compile(lambda a: view(a), backend=backend)
    for _ in range(2):  # the first call and a cached one
        a = tg.tensor(np.arange(6.0, dtype=np.float32).reshape(2, 3))
        r = cf(a)
        assert r._base is a and r._version == a._version
        assert np.shares_memory(r._value, a._value)
        root = tg.arange(6.0)
        assert cf(root.view(2, 3))._base is root  # (a view of a view: of the root, as eagerly)
        if name != "expand":  # (writing into an expanded view is refused, as in PyTorch)
            r.mul_(10)
            assert a._version == r._version
            e = tg.tensor(np.arange(6.0, dtype=np.float32).reshape(2, 3))
            view(e).mul_(10)
            _close(a, e)


@pytest.mark.parametrize("backend", BACKENDS)
def test_returned_view_after_an_in_place_write(backend):
    def f(a):
        a.add_(1)
        return a.t(), a.sum()

    cf = tg.compile(f, backend=backend)
    a = tg.zeros(2, 3)
    v, s = cf(a)
    _close(v, np.ones((3, 2)))
    v[0, 0] = 7.0
    assert a[0, 0].item() == 7.0 and float(s) == 6.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_returned_view_of_a_parameter_carries_its_gradient(backend):
    w = nn.Parameter(tg.arange(6.0).reshape(2, 3))
    cf = tg.compile(lambda: w.t(), backend=backend)
    r = cf()
    assert r._base is w and r.requires_grad
    (r * tg.arange(6.0).reshape(3, 2)).sum().backward()
    _close(w.grad, np.arange(6.0).reshape(3, 2).T)


@pytest.mark.parametrize("backend", BACKENDS)
def test_returned_view_of_an_argument_that_requires_grad(backend):
    def f(a):
        return a[1:] * 1, a[1:]

    x = tg.arange(4.0, requires_grad=True)
    y = x * 2
    _, v = tg.compile(f, backend=backend)(y)
    assert v._base is y and v.grad_fn is not None
    v.sum().backward()
    _close(x.grad, [0, 2, 2, 2])


# ----------------------------------------------------------------------------- dynamic=True
@pytest.mark.parametrize("backend", BACKENDS)
def test_dynamic_same_tensor_twice(backend):
    def f(a, b):
        a.mul_(2)
        return a + b

    cf = tg.compile(f, backend=backend, dynamic=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (a per-size build may warn why it is not symbolic)
        for n in (2, 3, 5, 7):
            x = tg.ones(n, 2)
            _close(cf(x, x), np.full((n, 2), 4.0))
            y, z = tg.ones(n, 2), tg.ones(n, 2)
            _close(cf(y, z), np.full((n, 2), 3.0))


# ----------------------------------------------------------------------------- differential
# An in-place op: (target 0/1, kind, constant). Kinds read the other argument or not.
OPS = st.tuples(st.integers(0, 1), st.sampled_from(["add", "mul", "add_other", "copy_other", "clamp"]),
                st.sampled_from([0.5, 2.0, -1.0, 3.0]))
# How the two arguments alias at one call.
MODES = ["distinct", "same", "same_memory", "overlap", "disjoint", "interleaved", "nested"]


def _program(ops, ret):
    def f(a, b):
        for target, kind, c in ops:
            t, o = (a, b) if target == 0 else (b, a)
            if kind == "add":
                t.add_(c)
            elif kind == "mul":
                t.mul_(c)
            elif kind == "add_other":
                t.add_(o * c)
            elif kind == "copy_other":
                t.copy_(o * c + 1)
            else:
                t.clamp_(min=c)
        if ret == "product":
            return a * b + a
        if ret == "pair":
            return b.sum(), a * 2
        return None

    return f


def _arguments(mode, seed):
    """(a, b, storage tensors to compare): both arguments of shape (4,), float32."""
    rng = np.random.default_rng(seed)
    data = rng.standard_normal(12).astype(np.float32)
    if mode == "distinct":
        a, b = tg.tensor(data[:4]), tg.tensor(data[4:8])
        return a, b, [a, b]
    base = tg.tensor(data)
    if mode == "same":
        return base[:4], None, [base]
    if mode == "same_memory":
        a = base[:4]
        return a, a.view(4), [base]
    if mode == "overlap":
        return base[0:4], base[2:6], [base]
    if mode == "disjoint":
        return base[0:4], base[4:8], [base]
    if mode == "interleaved":
        return base[0:8:2], base[1:8:2], [base]
    return base[0:8:2], base[2:6], [base]  # "nested": every other element of a is in b


def _call(fn, mode, seed):
    a, b, watched = _arguments(mode, seed)
    out = fn(a, a if b is None else b)
    return out, watched


def _values(out):
    if out is None:
        return []
    if isinstance(out, tuple):
        return [np.array(_np(o), copy=True) for o in out]
    return [np.array(_np(out), copy=True)]


def _differential(backend, ops, ret, calls):
    f = _program(ops, ret)
    cf = tg.compile(f, backend=backend)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # (eager fallbacks say why)
        for k, mode in enumerate(calls):
            want, want_state = _call(f, mode, k)
            got, got_state = _call(cf, mode, k)
            for g, w in zip(_values(got), _values(want)):
                _close(g, w)
            for g, w in zip(got_state, want_state):
                _close(g, w)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(OPS, min_size=1, max_size=4), ret=st.sampled_from(["product", "pair", "none"]),
       calls=st.lists(st.sampled_from(MODES), min_size=1, max_size=6))
def test_differential_interpreter(ops, ret, calls):
    _differential("interpreter", ops, ret, calls)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(OPS, min_size=1, max_size=3), ret=st.sampled_from(["product", "pair"]),
       calls=st.lists(st.sampled_from(MODES), min_size=2, max_size=4))
def test_differential_c(ops, ret, calls):
    _differential("c", ops, ret, calls)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(OPS, min_size=1, max_size=3), calls=st.lists(st.sampled_from(MODES), min_size=1, max_size=5))
def test_differential_parameter_and_argument(ops, calls):
    """The written tensor is a lifted one (a global) and the argument may view it."""
    def run(fn, mode, k, g):
        rng = np.random.default_rng(k)
        with tg.no_grad():
            g.copy_(tg.tensor(rng.standard_normal(8).astype(np.float32)))
        arg = {"distinct": lambda: g.clone()[0:4], "same": lambda: g[0:4], "same_memory": lambda: g[0:4],
               "overlap": lambda: g[2:6], "disjoint": lambda: g[4:8], "interleaved": lambda: g[1::2],
               "nested": lambda: g[0::2]}[mode]()
        return fn(arg), g

    def make():
        g = tg.zeros(8)

        def f(x):
            view = g[0:4]
            for target, kind, c in ops:
                t, o = (view, x) if target == 0 else (x, view)
                if kind == "add":
                    t.add_(c)
                elif kind == "mul":
                    t.mul_(c)
                elif kind == "add_other":
                    t.add_(o * c)
                elif kind == "copy_other":
                    t.copy_(o * c + 1)
                else:
                    t.clamp_(min=c)
            return x * g.sum()

        return f, g

    fe, ge = make()
    fc, gc = make()
    cf = tg.compile(fc, backend="interpreter")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for k, mode in enumerate(calls):
            want, _ = run(fe, mode, k, ge)
            got, _ = run(cf, mode, k, gc)
            _close(got, want)
            _close(gc, ge)


def test_returned_views_with_dynamic_batch_sizes():
    """dynamic=True: a result that is a view of an argument is its view at every batch size
    (such a program stays one program per shape: its view functions hold the traced sizes)."""
    f = tg.compile(lambda x: x.reshape(-1), dynamic=True)
    for B in (8, 16, 3, 40):
        x = tg.randn(B, 5)
        out = f(x)
        assert out.shape == (B * 5,) and out._base is x
        out[0] = 7.0
        assert x[0, 0].item() == 7.0
