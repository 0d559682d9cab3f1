"""igamma / igammac (torch.igamma, torch.special.gammainc and gammaincc): values over a wide
range and at the edges against PyTorch, the gradient in x, PyTorch's NotImplementedError for
the gradient in a (raised only when a backward needs it), and the C backend against NumPy."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tracegrad as tg  # noqa: E402

RNG = np.random.default_rng(3)
A = np.exp(RNG.uniform(-4, 5, 400))
X = np.concatenate([A[:200] * np.exp(RNG.uniform(-2, 2, 200)), np.exp(RNG.uniform(-7, 5, 200))])
EDGE_A = np.array([0.0, -1.0, 1.0, 0.0, np.inf, 2.0, 1.0, np.inf, np.nan, 1.0, 0.0, 3.0])
EDGE_X = np.array([0.0, 1.0, 0.0, 1.0, 1.0, np.inf, -1.0, np.inf, 1.0, np.nan, np.inf, 1e-300])


@pytest.mark.parametrize("name", ["igamma", "igammac"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_values_match_torch(name, dtype):
    a, x = np.concatenate([A, EDGE_A]).astype(dtype), np.concatenate([X, EDGE_X]).astype(dtype)
    ours = getattr(tg, name)(tg.tensor(a), tg.tensor(x)).numpy()
    theirs = getattr(torch, name)(torch.tensor(a), torch.tensor(x)).numpy()
    assert ours.dtype == theirs.dtype
    # (PyTorch's own error reaches ~2e-9 relative in float64 for a in the hundreds, and ~4e-5 in
    # float32, which it computes in single precision; ours runs in double and rounds)
    rtol = 1e-8 if dtype == np.float64 else 2e-4
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=1e-300 if dtype == np.float64 else 1e-30)


def test_special_names_and_methods_are_the_same_function():
    a, x = tg.tensor([0.5, 2.0]), tg.tensor([1.0, 3.0])
    np.testing.assert_array_equal(tg.special.gammainc(a, x).numpy(), a.igamma(x).numpy())
    np.testing.assert_array_equal(tg.special.gammaincc(a, x).numpy(), tg.igammac(a, x).numpy())
    np.testing.assert_allclose((tg.igamma(a, x) + tg.igammac(a, x)).numpy(), 1.0, rtol=1e-6)


@pytest.mark.parametrize("name", ["igamma", "igammac"])
def test_gradient_in_x_matches_torch_and_in_a_raises_as_torchs(name):
    def run(lib):
        a = lib.tensor(A[:50], requires_grad=True)
        x = lib.tensor(X[:50], requires_grad=True)
        y = getattr(lib, name)(a, x)
        (gx,) = lib.autograd.grad(y.sum(), x, retain_graph=True)  # (a requires grad, but is not asked for)
        with pytest.raises(NotImplementedError, match=f"the derivative for '{name}: input' is not implemented"):
            y.sum().backward()
        return gx

    np.testing.assert_allclose(run(tg).numpy(), run(torch).numpy(), rtol=1e-8)


def test_integer_inputs_are_refused_as_torchs():
    with pytest.raises(NotImplementedError, match="igamma"):
        tg.igamma(tg.tensor([1, 2]), tg.tensor([2, 3]))


def test_compiled_igamma_matches_eager():
    def fn(a, x):
        return tg.igamma(a, x) * 2 + tg.igammac(a, x)

    a, x = tg.tensor(np.concatenate([A, EDGE_A])), tg.tensor(np.concatenate([X, EDGE_X]))
    compiled = tg.compile(fn, fullgraph=True)
    np.testing.assert_allclose(compiled(a, x).numpy(), fn(a, x).numpy(), rtol=1e-13)
    assert "tg_igamma" in compiled.programs[0].source  # (the C backend, not the interpreter)
