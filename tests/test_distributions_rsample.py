"""rsample of the gamma family (Gamma, Chi2, Beta, Dirichlet, StudentT) against PyTorch's,
given the same draws: both libraries' random sources are replaced by the same arrays, so the
samples and their implicit reparametrization gradients must agree. Also Gamma.cdf and
Chi2.cdf, and sampling inside a compiled function."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")
import torch.distributions.gamma
import torch.distributions.studentT

import tracegrad as tg
from tracegrad.distributions import gamma_family, gamma_sampling

RNG = np.random.default_rng(4)
CONC = np.array([[0.05, 0.7, 2.5], [9.0, 30.0, 1.2]])
RATE = np.array([[1.0, 2.0, 0.3], [0.5, 1.5, 4.0]])
SAMPLE_SHAPE = (50,)

CASES = {
    "Gamma": (lambda D, c, r: D.Gamma(c, r), [CONC, RATE]),
    "Chi2": (lambda D, c, r: D.Chi2(c * 2), [CONC, RATE]),
    "Beta": (lambda D, c, r: D.Beta(c, r + 0.2), [CONC, RATE]),
    "Dirichlet": (lambda D, c, r: D.Dirichlet(c), [CONC, RATE]),
    "StudentT": (lambda D, c, r: D.StudentT(c + 0.5, r - 1, r), [CONC, RATE]),
    "FisherSnedecor": (lambda D, c, r: D.FisherSnedecor(c + 0.5, r * 3), [CONC, RATE]),
    "InverseGamma": (lambda D, c, r: D.InverseGamma(c + 0.5, r), [CONC, RATE]),
}


class _FixedGamma(torch.autograd.Function):
    """torch's _standard_gamma with given draws: the same derivative (derivatives.yaml:
    grad * _standard_gamma_grad(self, result))."""

    draws = None

    @staticmethod
    def forward(ctx, alpha):
        x = torch.tensor(_FixedGamma.draws(tuple(alpha.shape)), dtype=alpha.dtype)
        ctx.save_for_backward(alpha, x)
        return x

    @staticmethod
    def backward(ctx, grad):
        alpha, x = ctx.saved_tensors
        return grad * torch._standard_gamma_grad(alpha, x)


def _same_draws(monkeypatch):
    """Both libraries draw standard gammas and normals from fixed arrays (one per shape)."""
    cache = {}

    def fixed(kind, shape):
        key = (kind, shape)
        if key not in cache:
            cache[key] = RNG.gamma(1.5, size=shape) + 1e-3 if kind == "gamma" else RNG.standard_normal(shape)
        return cache[key]

    _FixedGamma.draws = lambda shape: fixed("gamma", shape)
    monkeypatch.setattr(gamma_sampling, "_gamma_draws",
                        lambda alpha: tg.tensor(fixed("gamma", tuple(alpha.shape)), dtype=alpha.dtype))
    monkeypatch.setattr(gamma_family, "noise",
                        lambda kind, shape, like: tg.tensor(fixed(kind, tuple(shape)), dtype=like.dtype))
    monkeypatch.setattr(torch.distributions.gamma, "_standard_gamma", _FixedGamma.apply)
    monkeypatch.setattr(torch.distributions.studentT, "_standard_normal",
                        lambda shape, dtype, device: torch.tensor(fixed("normal", tuple(shape)), dtype=dtype))

    def dirichlet(alpha):  # (PyTorch's _Dirichlet normalises the draws itself)
        g = torch.tensor(fixed("gamma", tuple(alpha.shape)), dtype=alpha.dtype)
        return g / g.sum(-1, keepdim=True)

    monkeypatch.setattr(torch, "_sample_dirichlet", dirichlet)


@pytest.mark.parametrize("name", sorted(CASES))
def test_rsample_and_its_gradients_match_torch_given_the_same_draws(name, monkeypatch):
    _same_draws(monkeypatch)
    build, params = CASES[name]
    results = []
    for lib in (tg, torch):
        tensors = [lib.tensor(p, requires_grad=True) for p in params]
        d = build(lib.distributions, *tensors)
        assert d.has_rsample
        x = d.rsample(SAMPLE_SHAPE)
        cot = lib.tensor(np.random.default_rng(1).standard_normal(tuple(x.shape)))
        grads = lib.autograd.grad((x * cot).sum(), tensors, allow_unused=True)
        results.append((x, grads))
    (x, grads), (want_x, want_grads) = results
    np.testing.assert_allclose(x.detach().numpy(), want_x.detach().numpy(), rtol=1e-12)
    for g, w in zip(grads, want_grads):
        if w is None:
            assert g is None or not g.numpy().any()
        else:
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-9, err_msg=name)


def test_gamma_samples_that_underflow_are_clamped_with_their_gradient_kept():
    tg.manual_seed(0)
    alpha = tg.tensor([0.01] * 200, requires_grad=True)
    x = tg.distributions.Gamma(alpha, 1.0).rsample()
    assert float(x.min()) == np.finfo(np.float32).tiny
    (g,) = tg.autograd.grad(x.sum(), alpha)
    assert np.isfinite(g.numpy()).all()


@pytest.mark.parametrize("lib_name", ["Gamma", "Chi2"])
def test_cdf_matches_torch_with_the_gradient_in_value_and_rate(lib_name):
    value = RNG.uniform(0.01, 8, (4, 2, 3))
    out = []
    for lib in (tg, torch):
        conc, rate, v = (lib.tensor(a, requires_grad=True) for a in (CONC, RATE, value))
        d = lib.distributions.Gamma(conc, rate) if lib_name == "Gamma" else lib.distributions.Chi2(conc)
        cdf = d.cdf(v)
        wrt = [v, rate] if lib_name == "Gamma" else [v]
        out.append((cdf, lib.autograd.grad(cdf.sum(), wrt, retain_graph=True)))
        with pytest.raises(NotImplementedError, match="the derivative for 'igamma: input'"):
            cdf.sum().backward()  # (none in the concentration, in either library)
    (cdf, grads), (want, want_grads) = out
    np.testing.assert_allclose(cdf.detach().numpy(), want.detach().numpy(), rtol=1e-9)
    for g, w in zip(grads, want_grads):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-9)


def test_gamma_sampling_in_a_compiled_function_breaks_the_graph_and_equals_eager():
    def fn(conc):
        return tg.distributions.Beta(conc, conc + 1).rsample((3,)).sum() + tg.distributions.Gamma(conc, 2.0).rsample().sum()

    conc = tg.tensor([0.5, 4.0], requires_grad=True)
    values = []
    for run in (fn, tg.compile(fn)):
        tg.manual_seed(3)
        with pytest.warns(RuntimeWarning, match="sampling a distribution") if run is not fn else _nothing():
            out = run(conc)
        values.append((float(out), tg.autograd.grad(out, conc)[0].numpy()))
    assert values[0][0] == pytest.approx(values[1][0], rel=1e-12)
    np.testing.assert_allclose(values[0][1], values[1][1], rtol=1e-12)


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_wishart_rsample_and_its_gradients_match_torch_given_the_same_draws(monkeypatch):
    """Bartlett's construction in both, from the same chi2 (gamma) draws and the same normals
    below the diagonal (PyTorch draws them in tril_indices order, we a full matrix). PyTorch's
    own eager rsample cannot differentiate (its singular-sample correction, taken on every call,
    modifies an index it saved): its construction, _bartlett_sampling, is the reference."""
    import torch.distributions.wishart

    from tracegrad.distributions import wishart

    _same_draws(monkeypatch)
    p, shape = 3, SAMPLE_SHAPE + (2,)
    normals = RNG.standard_normal(shape + (p * (p - 1) // 2,))
    rows, cols = np.tril_indices(p, -1)
    full = np.zeros(shape + (p, p))
    full[..., rows, cols] = normals
    monkeypatch.setattr(wishart, "noise", lambda kind, s, like: tg.tensor(full, dtype=like.dtype))
    real_randn = torch.randn
    monkeypatch.setattr(torch, "randn", lambda *s, **kw: real_randn(*s, **kw) * 0 + torch.tensor(normals))
    a = RNG.standard_normal((2, p, p))
    results = []
    for lib in (tg, torch):
        df = lib.tensor([3.5, 6.0], requires_grad=True)
        cov = lib.tensor(a @ np.swapaxes(a, -1, -2) + np.eye(p), requires_grad=True)
        d = lib.distributions.Wishart(df, covariance_matrix=cov)
        x = d.rsample(SAMPLE_SHAPE) if lib is tg else d._bartlett_sampling(SAMPLE_SHAPE)
        cot = lib.tensor(np.random.default_rng(1).standard_normal(tuple(x.shape)))
        results.append((x, lib.autograd.grad((x * cot).sum(), [df, cov])))
    (x, grads), (want_x, want_grads) = results
    np.testing.assert_allclose(x.detach().numpy(), want_x.detach().numpy(), rtol=1e-10)
    for g, w in zip(grads, want_grads):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-8)
