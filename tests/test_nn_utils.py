"""tg.nn.utils against torch.nn.utils: gradient norms and clipping, parametrizations."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tracegrad as tg  # noqa: E402

RNG = np.random.default_rng(5)
GRADS = [RNG.standard_normal((3, 4)), RNG.standard_normal(5), RNG.standard_normal(())]


def _params(lib):
    params = [lib.nn.Parameter(lib.tensor(np.ones_like(g))) for g in GRADS]
    for p, g in zip(params, GRADS):
        p.grad = lib.tensor(g)
    return params


@pytest.mark.parametrize("norm_type", [2.0, 1, 3.5, float("inf")])
def test_total_norm_and_clipping_match_torch(norm_type):
    out = {}
    for lib in (tg, torch):
        params = _params(lib)
        total = lib.nn.utils.get_total_norm([p.grad for p in params], norm_type)
        lib.nn.utils.clip_grads_with_norm_(params[:2], 1.5, total)  # (the norm of all, two clipped)
        out[lib] = [float(total)] + [p.grad.numpy().copy() for p in params]
    np.testing.assert_allclose(out[tg][0], out[torch][0], rtol=1e-12)
    for a, b in zip(out[tg][1:], out[torch][1:]):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_clip_grad_norm_variants_and_errors():
    params = _params(tg)
    with pytest.warns(FutureWarning, match="clip_grad_norm_"):
        total = tg.nn.utils.clip_grad_norm(params, 0.1)
    assert float(tg.nn.utils.get_total_norm([p.grad for p in params])) == pytest.approx(0.1, rel=1e-5)
    assert float(total) > 0.1
    with pytest.warns(UserWarning, match="empty generator"):
        tg.nn.utils.clip_grad_norm_((p for p in []), 1.0)
    params[0].grad[0, 0] = float("nan")
    with pytest.raises(RuntimeError, match="non-finite"):
        tg.nn.utils.clip_grad_norm_(params, 1.0, error_if_nonfinite=True)
    assert float(tg.nn.utils.get_total_norm([])) == 0.0
