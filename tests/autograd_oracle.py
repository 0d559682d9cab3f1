"""Run one program on tracegrad and on PyTorch (the oracle) and compare what comes back.

A program is a function ``prog(lib)`` written once against the shared API (``lib`` is
``tracegrad`` or ``torch``); it returns a nested structure of tensors, numbers, strings,
booleans and None. Tensors are compared by shape, dtype, values and ``requires_grad``.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import tracegrad as tg


def _is_torch_tensor(x):
    return type(x).__module__.startswith("torch") and hasattr(x, "detach") and hasattr(x, "numpy")


def to_numpy(t):
    if isinstance(t, tg.Tensor):
        return np.asarray(t.detach())
    return t.detach().numpy()


def _dtype_name(t):
    return str(t.dtype).split(".")[-1]


def assert_same(ours, theirs, rtol=1e-5, atol=1e-6, where="result"):
    """Recursively compare a tracegrad result with the PyTorch one."""
    if theirs is None:
        assert ours is None, f"{where}: expected None, got {ours!r}"
    elif _is_torch_tensor(theirs):
        assert isinstance(ours, tg.Tensor), f"{where}: expected a Tensor, got {type(ours).__name__}"
        assert tuple(ours.shape) == tuple(theirs.shape), \
            f"{where}: shape {tuple(ours.shape)} != {tuple(theirs.shape)}"
        assert _dtype_name(ours) == _dtype_name(theirs), \
            f"{where}: dtype {ours.dtype} != {theirs.dtype}"
        assert ours.requires_grad == theirs.requires_grad, \
            f"{where}: requires_grad {ours.requires_grad} != {theirs.requires_grad}"
        np.testing.assert_allclose(to_numpy(ours), to_numpy(theirs), rtol=rtol, atol=atol,
                                   err_msg=where)
    elif isinstance(theirs, (tuple, list)):
        assert isinstance(ours, (tuple, list)), f"{where}: expected a sequence, got {ours!r}"
        assert len(ours) == len(theirs), f"{where}: length {len(ours)} != {len(theirs)}"
        for i, (a, b) in enumerate(zip(ours, theirs)):
            assert_same(a, b, rtol, atol, f"{where}[{i}]")
    elif isinstance(theirs, dict):
        assert set(ours) == set(theirs), f"{where}: keys {set(ours)} != {set(theirs)}"
        for k in theirs:
            assert_same(ours[k], theirs[k], rtol, atol, f"{where}[{k!r}]")
    elif isinstance(theirs, float):
        assert ours == pytest.approx(theirs, rel=rtol, abs=atol), f"{where}: {ours} != {theirs}"
    else:
        assert ours == theirs, f"{where}: {ours!r} != {theirs!r}"


def run_both(prog, torch, rtol=1e-5, atol=1e-6):
    """Run ``prog`` with both libraries, compare, and return (ours, theirs)."""
    theirs = prog(torch)
    ours = prog(tg)
    assert_same(ours, theirs, rtol, atol)
    return ours, theirs


def raises_both(prog, torch, exc=RuntimeError, match=None):
    """Both libraries raise ``exc`` from ``prog``; when ``match`` is given both messages
    contain it (a regex). Returns (our message, PyTorch's message)."""
    with pytest.raises(exc) as theirs:
        prog(torch)
    with pytest.raises(exc) as ours:
        prog(tg)
    if match is not None:
        assert re.search(match, str(theirs.value)), f"oracle message changed: {theirs.value}"
        assert re.search(match, str(ours.value)), \
            f"message {str(ours.value)!r} lacks {match!r} (PyTorch: {str(theirs.value)!r})"
    return str(ours.value), str(theirs.value)


def node_name(fn):
    """A grad_fn's name with the library's prefix removed (for side-by-side comparison)."""
    if fn is None:
        return None
    return fn.name().replace("torch::autograd::", "")


def graph_names(t):
    """The names of the nodes reachable from ``t.grad_fn``, depth first, None for missing edges."""
    out, seen = [], set()

    def walk(fn):
        if fn is None:
            out.append(None)
            return
        out.append(node_name(fn))
        if id(fn) in seen:
            return
        seen.add(id(fn))
        for nxt, _ in fn.next_functions:
            walk(nxt)

    walk(t.grad_fn)
    return out
