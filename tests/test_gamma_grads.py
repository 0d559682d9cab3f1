"""The implicit reparametrization gradients (ops/gamma_grads.py) against PyTorch's
``_standard_gamma_grad`` and ``_dirichlet_grad`` on samples that reach every branch (small x,
large concentrations near and away from the mean, the rational corrections), and the C
backend against NumPy on the same points."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tracegrad as tg  # noqa: E402
from tracegrad.ops.gamma_grads import DIRICHLET_GRAD, STANDARD_GAMMA_GRAD  # noqa: E402

RNG = np.random.default_rng(0)
ALPHA = np.exp(RNG.uniform(-4, 5, 4000))
GAMMA_X = np.maximum(RNG.gamma(ALPHA), 1e-300)
TOTAL = ALPHA + np.exp(RNG.uniform(-4, 5, ALPHA.size))
BETA_X = np.clip(RNG.beta(ALPHA, TOTAL - ALPHA), 1e-300, 1 - 1e-16)


def test_branches_are_all_reached():
    assert (GAMMA_X < 0.8).any() and ((ALPHA > 8) & (np.abs(GAMMA_X / ALPHA - 1) < 0.1)).any()
    assert ((ALPHA > 8) & (np.abs(GAMMA_X / ALPHA - 1) > 0.1)).any() and ((ALPHA < 8) & (GAMMA_X > 0.8)).any()
    boundary = TOTAL * BETA_X * (1 - BETA_X)
    assert ((BETA_X <= 0.5) & (boundary < 2.5)).any() and ((BETA_X >= 0.5) & (boundary < 0.75)).any()
    assert ((ALPHA > 6) & (TOTAL - ALPHA > 6)).any() and (boundary > 2.5).any()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_values_match_torch(dtype):
    a, x, t, b = (v.astype(dtype) for v in (ALPHA, GAMMA_X, TOTAL, BETA_X))
    # float32: against PyTorch's float64 values at the same (rounded) points, since PyTorch runs
    # part of its float32 _dirichlet_grad in single precision, where the series lose ~0.5%;
    # ours runs in double throughout and rounds once
    ref = (lambda v: torch.tensor(v).double()) if dtype == np.float32 else torch.tensor
    rtol, atol = (1e-11, 1e-300) if dtype == np.float64 else (1e-4, 1e-38)  # (float32 subnormals)
    np.testing.assert_allclose(STANDARD_GAMMA_GRAD(tg.tensor(a), tg.tensor(x)).numpy(),
                               torch._standard_gamma_grad(ref(a), ref(x)).numpy(), rtol=rtol, atol=atol)
    np.testing.assert_allclose(DIRICHLET_GRAD(tg.tensor(b), tg.tensor(a), tg.tensor(t)).numpy(),
                               torch._dirichlet_grad(ref(b), ref(a), ref(t)).numpy(), rtol=rtol, atol=atol)


def test_compiled_matches_numpy():
    def fn(a, x, t, b):
        return STANDARD_GAMMA_GRAD(a, x), DIRICHLET_GRAD(b, a, t)

    args = [tg.tensor(v) for v in (ALPHA, GAMMA_X, TOTAL, BETA_X)]
    compiled = tg.compile(fn, fullgraph=True)
    for got, want in zip(compiled(*args), fn(*args)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10)
    assert "tg_dirichlet_grad" in compiled.programs[0].source
