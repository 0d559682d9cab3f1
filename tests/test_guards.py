"""Compiled equals eager when the Python state a traced function reads changes between calls:
globals, closure cells, object attributes, container items, module hyper-parameters and
parameters, rebound tensors; nondeterministic calls break the graph; scalar guards compare
floats by bits. Differential generators (hypothesis) mutate the state between calls and
compare each compiled call with the same function run eagerly."""
from __future__ import annotations

import math
import os
import random
import time
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tracegrad as tg
from tracegrad.compiler import CompileError

SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])

floats = st.one_of(st.sampled_from([0.0, -0.0, math.nan, math.inf, -math.inf, 1.0, 2.0]),
                   st.floats(-4, 4, allow_nan=False))
scalars = st.one_of(floats, st.integers(-3, 3), st.booleans())


def same(a, b):
    a, b = np.asarray(a.detach().numpy()), np.asarray(b.detach().numpy())
    # equal with NaNs in the same places and zeros of the same sign
    return a.shape == b.shape and np.array_equal(np.signbit(a), np.signbit(b)) and \
        np.allclose(a, b, equal_nan=True, rtol=1e-6, atol=1e-7)


def compiled(fn, backend="interpreter"):
    return tg.compile(fn, backend=backend)


def quiet(f, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # recompile-limit warnings
        return f(*args)


# ----------------------------------------------------------------------------- generators
@SETTINGS
@given(st.lists(scalars, min_size=1, max_size=6))
def test_global_scalar_changes_between_calls(values):
    ns = {"tg": tg}
    exec("def f(x):\n    return x * K + K", ns)  # a module-level function reading a global
    f = ns["f"]
    c = compiled(f)
    x = tg.tensor([1.0, -2.0, 0.0])
    for v in values:
        ns["K"] = v
        assert same(quiet(c, x), f(x)), v


@SETTINGS
@given(st.lists(floats, min_size=1, max_size=6))
def test_closure_cell_changes_between_calls(values):
    scale = 1.0

    def f(x):
        return x / scale

    def set_scale(v):
        nonlocal scale
        scale = v

    c = compiled(f)
    x = tg.tensor([1.0, -1.0])
    for v in values:
        set_scale(v)
        assert same(quiet(c, x), f(x)), v


class Config:
    def __init__(self):
        self.scale = 1.0
        self.shift = [0.0, 1.0]
        self.table = {"a": 1.0}
        self.inner = None


@SETTINGS
@given(st.lists(st.tuples(st.sampled_from(["scale", "shift0", "shift_len", "table", "inner",
                                           "rebind"]), floats), min_size=1, max_size=8))
def test_attributes_and_items_change_between_calls(edits):
    ns = {"cfg": Config()}
    exec("def f(x):\n"
         "    y = x * cfg.scale + cfg.shift[0] * len(cfg.shift) + cfg.table['a']\n"
         "    if cfg.inner is not None:\n"
         "        y = y + cfg.inner.scale\n"
         "    return y", ns)
    f = ns["f"]
    c = compiled(f)
    x = tg.tensor([1.0, 2.0])
    for what, v in edits:
        cfg = ns["cfg"]
        if what == "scale":
            cfg.scale = v
        elif what == "shift0":
            cfg.shift[0] = v
        elif what == "shift_len":
            cfg.shift.append(v)
        elif what == "table":
            cfg.table["a"] = v
        elif what == "inner":
            cfg.inner = Config()
            cfg.inner.scale = v
        else:
            ns["cfg"] = Config()
            ns["cfg"].scale = v
        assert same(quiet(c, x), f(x)), (what, v)


@SETTINGS
@given(st.lists(st.sampled_from(["slope", "param", "bias_data", "hook", "unhook", "train", "eval",
                                 "child"]), min_size=1, max_size=6), st.randoms(use_true_random=False))
def test_module_state_changes_between_calls(edits, rnd):
    tg.manual_seed(0)
    model = tg.nn.Sequential(tg.nn.Linear(3, 4), tg.nn.LeakyReLU(0.1), tg.nn.Linear(4, 2))
    c = compiled(model)
    x = tg.randn(5, 3)
    handles = []
    for e in edits:
        if e == "slope":
            model[1].negative_slope = rnd.choice([0.0, 0.2, 0.5])
        elif e == "param":
            model[0].weight = tg.nn.Parameter(tg.randn(4, 3))
        elif e == "bias_data":
            with tg.no_grad():
                model[2].bias.add_(1.0)  # in place: the program reads it at every call
        elif e == "hook":
            handles.append(model[2].register_forward_hook(lambda m, a, out: out * 2))
        elif e == "unhook" and handles:
            handles.pop().remove()
        elif e == "train":
            model.train()
        elif e == "eval":
            model.eval()
        else:
            model[1] = tg.nn.Tanh()
        with tg.no_grad():
            assert same(quiet(c, x), model(x)), e


@SETTINGS
@given(st.lists(st.booleans(), min_size=2, max_size=5))
def test_rebound_global_tensor(rebinds):
    ns = {"W": tg.ones(3)}
    exec("def f(x):\n    return x * W", ns)
    f = ns["f"]
    c = compiled(f)
    x = tg.arange(3.0)
    for k, rebind in enumerate(rebinds):
        if rebind:
            ns["W"] = tg.full((3,), float(k + 2))
        assert same(quiet(c, x), f(x))


# ----------------------------------------------------------------------------- the examples
@pytest.mark.parametrize("backend", ["interpreter", "c"])
def test_global_float_is_guarded(backend):
    ns = {}
    exec("def f(x):\n    return x * K", ns)
    ns["K"] = 2.0
    c = tg.compile(ns["f"], backend=backend)
    x = tg.ones(2)
    assert c(x).tolist() == [2.0, 2.0]
    ns["K"] = 5.0
    assert c(x).tolist() == [5.0, 5.0]
    assert len(c.programs) == 2


@pytest.mark.parametrize("backend", ["interpreter", "c"])
def test_replaced_parameter_and_hyper_parameters(backend):
    lin = tg.nn.Linear(2, 2)
    act = tg.nn.LeakyReLU(0.1)
    drop = tg.nn.Dropout(0.0)
    c = tg.compile(lambda x: drop(act(lin(x))).sum(), backend=backend)
    x = tg.ones(1, 2)
    c(x)
    lin.weight = tg.nn.Parameter(tg.zeros(2, 2))
    lin.bias = tg.nn.Parameter(-tg.ones(2))
    assert c(x).item() == pytest.approx(-0.2)
    act.negative_slope = 0.5
    assert c(x).item() == pytest.approx(-1.0)
    drop.p = 1.0
    assert c(x).item() == 0.0


def test_minus_zero_and_nan_arguments():
    c = compiled(lambda x, s: x / s)
    x = tg.ones(1)
    assert c(x, 0.0).item() == math.inf
    assert c(x, -0.0).item() == -math.inf
    n = len(c.programs)
    for _ in range(4):  # a NaN matches itself: no recompile storm
        assert math.isnan(c(x, math.nan).item())
    assert len(c.programs) == n + 1


def test_item_guard_on_nan_tensor_does_not_storm():
    t = tg.tensor(math.nan)
    c = compiled(lambda x: x * t.item())
    for _ in range(4):
        c(tg.ones(1))
    assert len(c.programs) == 1


@pytest.mark.parametrize("call", [lambda: random.random(), lambda: random.randint(0, 3),
                                  lambda: np.random.rand(), lambda: np.random.default_rng().random(),
                                  lambda: time.time(), lambda: float(os.urandom(1)[0])])
def test_nondeterministic_calls_break_the_graph(call):
    def f(x):
        return x * call()

    c = compiled(f)
    with pytest.warns(RuntimeWarning, match="graph break.*returns a new value at every call"):
        c(tg.ones(1))
    with pytest.raises(CompileError, match="returns a new value"):
        tg.compile(f, backend="interpreter", fullgraph=True)(tg.ones(1))


def test_dynamic_net_tutorial_trains_the_same_model():
    """PyTorch's dynamic_net: a random number of middle layers per call."""
    class DynamicNet(tg.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = tg.nn.Linear(4, 4), tg.nn.Linear(4, 1)

        def forward(self, x):
            for _ in range(random.randint(0, 3)):
                x = self.a(x).clamp(min=0)
            return self.b(x)

    net = DynamicNet()
    c = tg.compile(net, backend="interpreter")
    random.seed(1)
    with pytest.warns(RuntimeWarning, match="random.randint"):
        out = c(tg.ones(2, 4))
    random.seed(1)
    assert same(out, net(tg.ones(2, 4)))


def test_assignments_to_python_state_break_the_graph():
    ns = {"count": 0}
    exec("def f(x):\n    global count\n    count += 1\n    return x * count", ns)
    c = compiled(ns["f"])
    with pytest.warns(RuntimeWarning, match="assigns the global count"):
        assert c(tg.ones(1)).item() == 1.0  # assigned once: the trace stopped before it
    assert c(tg.ones(1)).item() == 2.0 and ns["count"] == 2

    class Counter(tg.nn.Module):
        def forward(self, x):
            self.calls = getattr(self, "calls", 0) + 1
            return x * self.calls

    m = Counter()
    cm = tg.compile(m, backend="interpreter")
    with pytest.warns(RuntimeWarning, match="assigns Counter.calls"):
        assert cm(tg.ones(1)).item() == 1.0
    assert cm(tg.ones(1)).item() == 2.0 and m.calls == 2


@pytest.mark.parametrize("backend", ["interpreter", "c"])
def test_python_state_changed_inside_the_function_changes_once_per_call(backend):
    """An append to an outer list, an attribute of a config object, an argument's attribute:
    the trace made the change once, so the first call runs the traced program and later calls
    run eagerly; every call makes its change exactly once, as eagerly."""
    log, cfg = [], Config()

    def f(x, stats):
        log.append(1.0)
        cfg.scale += 1.0
        stats.scale *= 2.0
        return x * len(log) + cfg.scale + stats.scale

    stats = Config()
    c = tg.compile(f, backend=backend)
    x = tg.ones(2)
    with pytest.warns(RuntimeWarning, match="the function changes .* a compiled program would not repeat"):
        first = c(x, stats)
    assert first.tolist() == [1.0 + 2.0 + 2.0] * 2 and len(log) == 1 and cfg.scale == 2.0 and stats.scale == 2.0
    assert c(x, stats).tolist() == [2.0 + 3.0 + 4.0] * 2 and len(log) == 2 and stats.scale == 4.0
    assert c.programs == []
    with pytest.raises(CompileError, match="the function changes"):
        tg.compile(f, backend="interpreter", fullgraph=True)(x, stats)


def test_guard_log_names_the_failed_guard(monkeypatch, caplog):
    import logging

    ns = {}
    exec("def f(x):\n    return x + OFFSET", ns)
    ns["OFFSET"] = 1.0
    c = compiled(ns["f"])
    c(tg.ones(1))
    ns["OFFSET"] = -0.0
    monkeypatch.setenv("TRACEGRAD_LOG", "guards")
    with caplog.at_level(logging.INFO, logger="tracegrad"):
        c(tg.ones(1))
    assert "global OFFSET changed: it was 1.0, now -0.0" in caplog.text


def test_guards_are_listed():
    ns = {"K": 3.0, "model": tg.nn.Linear(2, 2)}
    exec("def f(x):\n    return model(x) * K", ns)
    c = compiled(ns["f"])
    c(tg.ones(1, 2))
    lines = c.programs[0].guards
    assert "global K == 3.0" in lines
    assert any(line.startswith("module state of Linear") for line in lines)
