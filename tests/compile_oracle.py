"""Helpers for the compiler tests: run the same program eagerly and compiled (interpreter
backend) on twin states and compare results, every watched tensor and its ``.grad`` after
every call.

``make()`` builds one fresh state and returns ``(fn, args_for_call, watched)``: ``fn`` closes
over its own tensors (parameters, optimizer state, globals), ``args_for_call(k)`` gives the
arguments of call ``k`` and ``watched`` lists the tensors whose values and ``.grad`` must agree.
Calling ``make`` twice must give identical states (seed inside it).
"""
from __future__ import annotations

import numpy as np

import tracegrad as tg


def to_np(x):
    if isinstance(x, tg.Tensor):
        return np.array(x._value, copy=True)
    if isinstance(x, (list, tuple)):
        return type(x)(to_np(i) for i in x)
    if isinstance(x, dict):
        return {k: to_np(v) for k, v in x.items()}
    return x


def assert_tree_close(got, want, what, tol=1e-5):
    if isinstance(want, (list, tuple)):
        assert isinstance(got, type(want)) and len(got) == len(want), f"{what}: structure differs"
        for i, (g, w) in enumerate(zip(got, want)):
            assert_tree_close(g, w, f"{what}[{i}]", tol)
    elif isinstance(want, dict):
        assert got.keys() == want.keys(), f"{what}: keys differ"
        for k in want:
            assert_tree_close(got[k], want[k], f"{what}[{k!r}]", tol)
    elif isinstance(want, np.ndarray):
        assert isinstance(got, np.ndarray), f"{what}: got {type(got).__name__}, eager gave an array"
        assert got.shape == want.shape and got.dtype == want.dtype, \
            f"{what}: {got.dtype}{list(got.shape)} vs eager {want.dtype}{list(want.shape)}"
        if want.dtype.kind == "f":
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=what)
        else:
            np.testing.assert_array_equal(got, want, err_msg=what)
    else:
        assert got == want, f"{what}: {got!r} vs eager {want!r}"


def state_of(tensors):
    return [(to_np(t), None if t._grad is None else to_np(t._grad)) for t in tensors]


def run_both(make, calls=3, tol=1e-5, backend="interpreter", **compile_kwargs):
    """Run eager and compiled twins ``calls`` times; returns the CompiledFunction."""
    fe, args_e, watch_e = make()
    fc, args_c, watch_c = make()
    cf = tg.compile(fc, backend=backend, **compile_kwargs)
    for k in range(calls):
        want, got = to_np(fe(*args_e(k))), to_np(cf(*args_c(k)))
        assert_tree_close(got, want, f"call {k} result", tol)
        for i, ((ve, ge), (vc, gc)) in enumerate(zip(state_of(watch_e), state_of(watch_c))):
            assert_tree_close(vc, ve, f"call {k} watched tensor {i}", tol)
            assert (gc is None) == (ge is None), \
                f"call {k} watched tensor {i}: .grad is {gc is None and 'None' or 'set'} compiled, " \
                f"{ge is None and 'None' or 'set'} eager"
            if ge is not None:
                assert_tree_close(gc, ge, f"call {k} watched tensor {i} .grad", tol)
    return cf


def run_graph(graph, arrays):
    from tracegrad.compiler.backends.interpreter import run_graph as run

    return run(graph, [np.asarray(a) for a in arrays])


def random_inputs(graph, seed=0):
    """Arrays for a graph's inputs: normal floats, small non-negative ints, random bools."""
    rng = np.random.default_rng(seed)
    out = []
    for v in graph.inputs:
        if v.dtype.is_floating_point:
            out.append(rng.standard_normal(v.shape).astype(v.dtype.np))
        elif v.dtype.short == "b8":
            out.append(rng.random(v.shape) > 0.5)
        else:
            out.append(rng.integers(0, 2, v.shape).astype(v.dtype.np))
    return out
