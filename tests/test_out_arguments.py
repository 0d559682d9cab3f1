"""``out=`` on the functions of the tracegrad namespace that take it in torch: the result written
into ``out`` and ``out`` returned, PyTorch's dtype and shape rules and errors (out_arguments.py)."""
import re
import warnings

import numpy as np
import pytest

import tracegrad as tg
from oracle import torch
from tracegrad._api import out_arguments

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch (the oracle) is not installed")

A = np.array([[1.5, -2.0, 3.0], [0.5, 4.0, -1.0]], np.float32)
B = np.array([[2.0, 1.0, -1.0], [3.0, 0.5, 2.0]], np.float32)

# name -> (m, a, b) -> (result, out): the call, and the tensor (or tuple) given as out
CASES = {
    "add": lambda m, a, b: (lambda o: (m.add(a, b, alpha=2, out=o), o))(m.empty(2, 3)),
    "mul_into_double": lambda m, a, b: (lambda o: (m.mul(a, b, out=o), o))(m.empty(2, 3, dtype=m.float64)),
    "matmul": lambda m, a, b: (lambda o: (m.matmul(a, b.T, out=o), o))(m.empty(2, 2)),
    "cat_resizes_empty": lambda m, a, b: (lambda o: (m.cat([a, b], out=o), o))(m.empty(0)),
    "stack": lambda m, a, b: (lambda o: (m.stack([a, b], 1, out=o), o))(m.empty(2, 2, 3)),
    "sum_dim": lambda m, a, b: (lambda o: (m.sum(a, 1, out=o), o))(m.empty(2)),
    "exp": lambda m, a, b: (lambda o: (m.exp(a, out=o), o))(m.empty(2, 3)),
    "where": lambda m, a, b: (lambda o: (m.where(a > 0, a, b, out=o), o))(m.empty(2, 3)),
    "clamp": lambda m, a, b: (lambda o: (m.clamp(a, -1, 1, out=o), o))(m.empty(2, 3)),
    "sort": lambda m, a, b: (lambda o: (m.sort(a, 1, out=o), o))((m.empty(2, 3), m.empty(2, 3, dtype=m.int64))),
    "max_dim": lambda m, a, b: (lambda o: (m.max(a, 0, out=o), o))((m.empty(3), m.empty(3, dtype=m.int64))),
    "topk": lambda m, a, b: (lambda o: (m.topk(a, 2, out=o), o))((m.empty(2, 2), m.empty(2, 2, dtype=m.int64))),
    "eq_into_bool": lambda m, a, b: (lambda o: (m.eq(a, b, out=o), o))(m.empty(2, 3, dtype=m.bool)),
    "zeros_takes_outs_dtype": lambda m, a, b: (lambda o: (m.zeros(2, 2, out=o), o))(m.empty(2, 2, dtype=m.int64)),
    "arange": lambda m, a, b: (lambda o: (m.arange(5, out=o), o))(m.empty(5, dtype=m.int64)),
    "int_result_into_float": lambda m, a, b: (lambda o: (m.add(m.ones(2, dtype=m.int64), 3, out=o), o))(m.empty(2)),
}


def _flat(x):
    return list(x) if isinstance(x, tuple) else [x]


@needs_torch
@pytest.mark.parametrize("name", sorted(CASES))
def test_out_matches_torch(name):
    fn = CASES[name]
    want, want_out = fn(torch, torch.from_numpy(A), torch.from_numpy(B))
    got, got_out = fn(tg, tg.tensor(A), tg.tensor(B))
    for g, o in zip(_flat(got), _flat(got_out)):
        assert g is o  # the out tensors themselves come back
    for g, w in zip(_flat(got), _flat(want)):
        assert str(g.dtype).split(".")[-1] == str(w.dtype).split(".")[-1]
        np.testing.assert_allclose(g.numpy().astype(np.float64), w.numpy().astype(np.float64), rtol=1e-6)


def test_errors_and_warnings():
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        tg.add(tg.ones(2), 1.5, out=tg.empty(2, dtype=tg.int64))
    with pytest.raises(RuntimeError, match="out=... arguments don't support automatic differentiation"):
        tg.mul(tg.ones(2, requires_grad=True), 2, out=tg.empty(2))
    with tg.no_grad():
        tg.mul(tg.ones(2, requires_grad=True), 2, out=tg.empty(2))  # fine without grad mode
    with pytest.raises(TypeError, match="must be a tuple of 2 Tensors"):
        tg.sort(tg.ones(3), out=tg.empty(3))
    with pytest.warns(UserWarning, match="was resized since it had shape \\[2\\]"):
        tg.exp(tg.ones(3), out=tg.empty(2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tg.exp(tg.ones(3), out=tg.empty(0))  # an empty out is resized silently


@needs_torch
def test_every_function_torch_documents_with_out_takes_it():
    """The oracle is torch's namespace (its docstrings' ``out (Tensor, optional)``), so the list in
    tracegrad/__init__.py is written once; functions torch takes out= on undocumented (sum...)
    are there too."""
    documented = [n for n in dir(torch) if not n.startswith("_") and hasattr(tg, n)
                  and callable(getattr(torch, n)) and not isinstance(getattr(torch, n), type)
                  and re.search(r"\bout \(", getattr(torch, n).__doc__ or "")]
    assert len(documented) > 150
    missing = [n for n in documented if "out" not in out_arguments._parameters(getattr(tg, n))]
    assert not missing


@needs_torch
def test_range_and_qr_take_out():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # (both are deprecated in torch)
        for m in (tg, torch):
            r = m.range(0, 2, out=m.empty(0, dtype=m.int64))
            assert r.dtype == m.int64 and r.tolist() == [0, 1, 2]
            q, r = m.empty(0), m.empty(0)
            assert m.qr(m.eye(2), out=(q, r))[0] is q and q.shape == (2, 2)


def test_out_in_a_compiled_function_writes_the_argument():
    def f(a, b, c):
        tg.mul(a, b, out=c)
        return c.sum()

    c = tg.zeros(3)
    total = tg.compile(f, backend="c", fullgraph=True)(tg.ones(3), tg.full((3,), 2.0), c)
    assert float(total) == 6.0 and c.tolist() == [2.0, 2.0, 2.0]
