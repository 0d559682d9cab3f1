"""tg.special's orthogonal polynomials against torch.special: values over a grid of x and
degrees (negative, fractional, NaN, infinite, huge, past Hermite's limits), float64 and float32
(float32: PyTorch's float arithmetic, its overflow to inf and NaN included), dtype promotion and
broadcasting, no gradient (as PyTorch's), and compiled (C) against eager."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tracegrad as tg  # noqa: E402
from tracegrad.ops.orthogonal_polynomials import KINDS  # noqa: E402

X = np.concatenate([np.linspace(-3, 3, 121), [0.0, -0.0, 1.0, -1.0, 0.5, np.inf, -np.inf, 1 - 1e-16, -1 + 1e-16,
                                               1e-300, 0.999, 1.001, 2.5, -2.5, 1.25, -1.25]])
DEGREES = np.array([-3, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 13, 20, 44, 45, 46, 47, 48, 49, 50, 51, 100, 127, 128,
                    129, 300, 512, 513, 2000, 2.7, 0.5, -0.5, np.nan, np.inf, -np.inf, 1e20, -1e20])
GRID_X, GRID_N = np.meshgrid(X, DEGREES)
CHEBYSHEV = [name for name in KINDS if "chebyshev" in name]


def _ours(name, x, n, dtype):
    return getattr(tg.special, name)(tg.tensor(x, dtype=dtype), tg.tensor(n, dtype=dtype))


def _theirs(name, x, n, dtype):
    return getattr(torch.special, name)(torch.tensor(x, dtype=dtype), torch.tensor(n, dtype=dtype)).numpy()


def _compare(ours, theirs, tolerance, what):
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs), err_msg=f"{what}: NaN positions")
    infinite = np.isinf(theirs)
    np.testing.assert_array_equal(ours[infinite], theirs[infinite], err_msg=f"{what}: infinities")
    finite = np.isfinite(theirs)
    bound = tolerance[finite] if np.ndim(tolerance) else tolerance
    error = np.abs(ours[finite] - theirs[finite]) / np.maximum(np.abs(theirs[finite]), 1)
    assert (error <= bound).all(), f"{what}: worst {error.max():.3g}"


@pytest.mark.parametrize("name", KINDS)
def test_float64_values_and_edges_match_torch(name):
    ours = _ours(name, GRID_X, GRID_N, tg.float64)
    assert ours.dtype == tg.float64
    _compare(ours.numpy(), _theirs(name, GRID_X, GRID_N, torch.float64), 1e-11, name)


@pytest.mark.parametrize("name", KINDS)
def test_float32_values_and_overflow_match_torch(name):
    """float arithmetic as PyTorch's (with its compiled loop's fused multiply-add): the
    recurrences agree bit for bit, overflow to inf and NaN included. The Chebyshev closed forms
    (degree > 6 or so inside (-1, 1)) differ by PyTorch's float acos: up to ~n ulp of the angle, more for
    U, V, W near -1 (a quotient of sines)."""
    ours = _ours(name, GRID_X, GRID_N, tg.float32)
    assert ours.dtype == tg.float32
    theirs = _theirs(name, GRID_X, GRID_N, torch.float32)
    degree = np.where(np.isfinite(GRID_N), np.abs(GRID_N), 1.0)
    tolerance = 2e-6 * np.maximum(degree, 1) if name in CHEBYSHEV else 0.0
    _compare(ours.numpy(), theirs, tolerance, name)


@pytest.mark.parametrize("name", KINDS)
def test_nan_input_gives_nan(name):
    """(PyTorch's U, V, W, L, P return an uninitialised value at NaN x; ours NaN, as its T, H)"""
    out = _ours(name, np.full(4, np.nan), np.array([2.0, 3.0, 10.0, 100.0]), tg.float64).numpy()
    assert np.isnan(out).all()
    assert (_ours(name, np.full(2, np.nan), np.array([-1.0, np.nan]), tg.float64).numpy() == 0).all()


def test_dtypes_numbers_and_broadcasting_as_torch():
    P = tg.special.chebyshev_polynomial_t
    T = torch.special.chebyshev_polynomial_t
    cases = [((tg.tensor([1, 2]), 3), (torch.tensor([1, 2]), 3)),
             ((tg.tensor([1, 2]), tg.tensor([3])), (torch.tensor([1, 2]), torch.tensor([3]))),
             ((tg.tensor([1.0, 2.0]), tg.tensor([3])), (torch.tensor([1.0, 2.0]), torch.tensor([3]))),
             ((2, tg.tensor([3, 4])), (2, torch.tensor([3, 4]))),
             ((tg.tensor([0.5, 2.0], dtype=tg.float64), tg.tensor([3.0])),
              (torch.tensor([0.5, 2.0], dtype=torch.float64), torch.tensor([3.0]))),
             ((tg.tensor([[0.5], [2.0]]), tg.tensor([0.0, 1.0, 2.0, 7.0])),
              (torch.tensor([[0.5], [2.0]]), torch.tensor([0.0, 1.0, 2.0, 7.0])))]
    for (a, b), (c, d) in cases:
        ours, theirs = P(a, b), T(c, d)
        assert ours.dtype.name == str(theirs.dtype).split(".")[-1]
        assert tuple(ours.shape) == tuple(theirs.shape)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


@pytest.mark.parametrize("name", KINDS)
def test_no_gradient_as_torch(name):
    x = tg.tensor([0.3, 1.5], requires_grad=True)
    n = tg.tensor([3.0, 4.0], requires_grad=True)
    assert not getattr(tg.special, name)(x, n).requires_grad
    assert not getattr(torch.special, name)(torch.tensor([0.3, 1.5], requires_grad=True), 3).requires_grad


@pytest.mark.parametrize("dtype", [tg.float64, tg.float32])
def test_compiled_equals_eager(dtype):
    """Every polynomial in one C program; float32 runs the C float twin, bit for bit the NumPy."""
    x, n = tg.tensor(GRID_X, dtype=dtype), tg.tensor(GRID_N, dtype=dtype)

    def fn(x, n):
        return [getattr(tg.special, name)(x, n) for name in KINDS]

    compiled = tg.compile(fn, backend="c", fullgraph=True)
    got, want = compiled(x, n), fn(x, n)
    assert type(compiled.programs[0].executable).__name__ == "CExecutable"
    for name, g, w in zip(KINDS, got, want):
        g, w = g.numpy(), w.numpy()
        # (float64: libm's cos and acos against NumPy's, ~1 ulp, times n in the closed forms)
        tolerance = 0.0 if dtype is tg.float32 else 1e-11
        _compare(g, w, tolerance, f"compiled {name}")


def test_number_degree_compiles_and_broadcasts():
    """A Python-number degree is a constant of the trace; a tensor one broadcasts against x."""
    x = tg.tensor([[0.25], [-0.75], [1.5]])
    n = tg.tensor([0.0, 3.0, 9.0])

    def fn(x, n):
        return tg.special.legendre_polynomial_p(x, 4), tg.special.chebyshev_polynomial_u(x, n)

    got, want = tg.compile(fn, backend="c", fullgraph=True)(x, n), fn(x, n)
    theirs = (torch.special.legendre_polynomial_p(torch.tensor(x.numpy()), 4),
              torch.special.chebyshev_polynomial_u(torch.tensor(x.numpy()), torch.tensor(n.numpy())))
    for g, w, t in zip(got, want, theirs):
        assert tuple(g.shape) == tuple(t.shape)
        np.testing.assert_array_equal(g.numpy(), w.numpy())
        np.testing.assert_allclose(g.numpy(), t.numpy(), rtol=1e-5)  # (U_9: a float closed form)
