"""The C backend's reshape of a strided view (backends/c/views.py: View.reshape): a view where
the strides allow it, else None (the lowering copies first). Checked against NumPy over random
permuted, sliced, flipped and broadcast views, and in compiled programs against eager."""
from __future__ import annotations

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.compiler.backends.c.views import View

BASE = np.arange(4096, dtype=np.float64)


def _elements(view):
    """The elements ``view`` reads from BASE, in row-major order of its shape."""
    strided = np.lib.stride_tricks.as_strided(BASE[view.offset:], view.shape, [s * 8 for s in view.strides])
    return strided.copy()


def _random_view(rng):
    """(a View over BASE, the NumPy array it stands for)."""
    shape = tuple(int(n) for n in rng.integers(1, 5, size=rng.integers(1, 4)))
    arr = BASE[:int(np.prod(shape))].reshape(shape)
    view = View("b", 0, shape, tuple(s // 8 for s in arr.strides))
    if rng.random() < 0.5:
        perm = tuple(int(d) for d in rng.permutation(arr.ndim))
        view, arr = view.permute(perm), arr.transpose(perm)
    d = int(rng.integers(arr.ndim))
    if rng.random() < 0.5 and arr.shape[d] > 1:
        lo = int(rng.integers(0, arr.shape[d] - 1))
        hi = int(rng.integers(lo + 1, arr.shape[d] + 1))
        arr = arr[(slice(None),) * d + (slice(lo, hi),)]
        view = View("b", view.offset + lo * view.strides[d], arr.shape, view.strides)
    if rng.random() < 0.3:
        strides = list(view.strides)
        offset = view.offset + (view.shape[d] - 1) * strides[d]
        strides[d] = -strides[d]
        view, arr = View("b", offset, view.shape, strides), np.flip(arr, d)
    if rng.random() < 0.2:
        view = View("b", view.offset, (2,) + view.shape, (0,) + view.strides)
        arr = np.broadcast_to(arr[None], (2,) + arr.shape)
    return view, arr


def _random_shape(rng, size):
    factors, rest = [], size
    for f in (2, 3, 2, 2, 3, 5):
        if rest % f == 0 and rng.random() < 0.6:
            factors.append(f)
            rest //= f
    factors.append(rest)
    rng.shuffle(factors)
    if rng.random() < 0.3:
        factors.insert(int(rng.integers(len(factors) + 1)), 1)
    return tuple(factors)


def test_reshape_of_strided_views_reads_numpy_order():
    rng = np.random.default_rng(0)
    expressible = 0
    for _ in range(2000):
        view, arr = _random_view(rng)
        assert np.array_equal(_elements(view), arr)
        shape = _random_shape(rng, arr.size)
        out = view.reshape(shape)
        if out is not None:
            expressible += 1
            assert np.array_equal(_elements(out), arr.reshape(shape)), (view, shape, out)
    assert expressible > 1000  # (most are: the check above is not vacuous)


def test_reshape_refuses_what_no_strides_express():
    assert View("b", 0, (4, 6), (1, 4)).reshape((24,)) is None  # a transpose, flattened
    assert View("b", 0, (2, 3), (10, 2)).reshape((3, 2)) is None  # rows 10 apart, elements 2
    assert View("b", 0, (2, 3), (10, 2)).reshape((2, 3, 1)).strides[:2] == (10, 2)


@pytest.mark.parametrize("t", [64, 67])
def test_heads_of_a_projection_stay_views(t):
    """split then view(B, T, H, D): the heads are read in place (no copy kernel before the
    products), and the gradients equal eager's."""
    rng = np.random.default_rng(1)
    bsz, c, nh = 2, 48, 4
    x = tg.tensor(rng.standard_normal((bsz, t, 3 * c)).astype(np.float32), requires_grad=True)

    def fn(x):
        q, k, v = (z.view(bsz, t, nh, c // nh).transpose(1, 2) for z in x.split(c, dim=2))
        out = (q @ k.transpose(-2, -1)).softmax(-1) @ v
        return tg.autograd.grad(out.transpose(1, 2).reshape(bsz, t, c).square().sum(), [x])[0]

    f = tg.compile(fn, backend="c", options={"batch_split": False})
    np.testing.assert_allclose(f(x).numpy(), fn(x).numpy(), rtol=1e-3, atol=1e-4)
    source = f.programs[0].executable.source.split("/* ---- end of runtime")[-1]
    # q @ k^T reads the argument itself: items T*3C and C/H apart (in a loop of calls below the
    # batched call's threshold, in its strides array above it), rows 3C apart
    assert f"b0*{t * 3 * c} + b1*{c // nh}" in source or f"{{{t * 3 * c}, {c // nh}}}" in source
