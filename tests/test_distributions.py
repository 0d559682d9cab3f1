"""tg.distributions against torch.distributions: shapes, log_prob, entropy, moments and cdf
with their gradients, KL divergences, sampling shapes and statistics, argument checks, and
log_prob / kl compiled against eager."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tracegrad as tg  # noqa: E402

RNG = np.random.default_rng(8)
LOC = RNG.standard_normal((2, 3))
SCALE = RNG.uniform(0.5, 2.0, (2, 3))
PROBS = RNG.uniform(0.05, 0.95, (2, 3))
LOGITS = RNG.standard_normal((2, 4))
A = RNG.standard_normal((2, 3, 3))
COV = A @ np.swapaxes(A, -1, -2) + np.eye(3)

# name: (constructor of the library's distribution from its tensors, parameter arrays, values)
CASES = {
    "Normal": (lambda D, l, s: D.Normal(l, s), [LOC, SCALE], RNG.standard_normal((4, 2, 3))),
    "Normal-broadcast": (lambda D, l, s: D.Normal(l[0], s[:, :1]), [LOC, SCALE], RNG.standard_normal((2, 3))),
    "Uniform": (lambda D, l, s: D.Uniform(l, l + s), [LOC, SCALE], LOC + SCALE * 0.3),
    "Laplace": (lambda D, l, s: D.Laplace(l, s), [LOC, SCALE], RNG.standard_normal((2, 3))),
    "Exponential": (lambda D, s: D.Exponential(s), [SCALE], RNG.uniform(0, 3, (5, 2, 3))),
    "Bernoulli-probs": (lambda D, p: D.Bernoulli(probs=p), [PROBS], (RNG.random((2, 3)) > 0.5) * 1.0),
    "Bernoulli-logits": (lambda D, l: D.Bernoulli(logits=l), [LOC], (RNG.random((3, 2, 3)) > 0.5) * 1.0),
    "Categorical-probs": (lambda D, p: D.Categorical(probs=p), [PROBS], RNG.integers(0, 3, (5, 2))),
    "Categorical-logits": (lambda D, l: D.Categorical(logits=l), [LOGITS], RNG.integers(0, 4, (2,))),
    "OneHotCategorical": (lambda D, l: D.OneHotCategorical(logits=l), [LOGITS], np.eye(4)[[1, 3]]),
    "MultivariateNormal-cov": (lambda D, l, c: D.MultivariateNormal(l, covariance_matrix=c), [LOC, COV],
                               RNG.standard_normal((4, 2, 3))),
    "MultivariateNormal-tril": (lambda D, l, c: D.MultivariateNormal(l[0], scale_tril=c.tril()),
                                [LOC, A + 3 * np.eye(3)], RNG.standard_normal((2, 3))),
    "MultivariateNormal-precision": (lambda D, l, c: D.MultivariateNormal(l, precision_matrix=c), [LOC, COV],
                                     RNG.standard_normal((2, 3))),
    "Independent": (lambda D, l, s: D.Independent(D.Normal(l, s), 1), [LOC, SCALE], RNG.standard_normal((2, 3))),
    "Gamma": (lambda D, a, b: D.Gamma(a, b), [SCALE, PROBS + 0.5], RNG.uniform(0.1, 3, (4, 2, 3))),
    "Chi2": (lambda D, a: D.Chi2(a * 3), [SCALE], RNG.uniform(0.1, 3, (2, 3))),
    "Beta": (lambda D, a, b: D.Beta(a, b), [SCALE, PROBS + 0.5], RNG.uniform(0.05, 0.95, (2, 3))),
    "Dirichlet": (lambda D, a: D.Dirichlet(a), [SCALE], np.array([[0.2, 0.5, 0.3], [0.6, 0.1, 0.3]])),
    "Poisson": (lambda D, r: D.Poisson(r), [SCALE], RNG.integers(0, 5, (3, 2, 3)) * 1.0),
    "StudentT": (lambda D, df, l, s: D.StudentT(df * 3, l, s), [SCALE, LOC, PROBS], RNG.standard_normal((2, 3))),
    "Cauchy": (lambda D, l, s: D.Cauchy(l, s), [LOC, SCALE], RNG.standard_normal((4, 2, 3)) * 3),
    "LogNormal": (lambda D, l, s: D.LogNormal(l, s), [LOC, SCALE], RNG.uniform(0.1, 4, (4, 2, 3))),
    "HalfNormal": (lambda D, s: D.HalfNormal(s), [SCALE], RNG.uniform(0.0, 3, (4, 2, 3))),
    "HalfCauchy": (lambda D, s: D.HalfCauchy(s), [SCALE], RNG.uniform(0.0, 3, (2, 3))),
    "Gumbel": (lambda D, l, s: D.Gumbel(l, s), [LOC, SCALE], RNG.standard_normal((4, 2, 3)) * 2),
    "Weibull": (lambda D, s, c: D.Weibull(s, c + 0.5), [SCALE, PROBS], RNG.uniform(0.1, 3, (2, 3))),
    "Pareto": (lambda D, s, a: D.Pareto(s, a * 3), [SCALE, PROBS], 2 + RNG.uniform(0.0, 3, (2, 3))),
    "Binomial-probs": (lambda D, p: D.Binomial(5, probs=p), [PROBS], RNG.integers(0, 6, (3, 2, 3)) * 1.0),
    "Binomial-logits": (lambda D, l, s: D.Binomial(s.detach().round() + 2, logits=l), [LOC, SCALE],
                        RNG.integers(0, 3, (2, 3)) * 1.0),
    "Geometric-probs": (lambda D, p: D.Geometric(probs=p), [PROBS], RNG.integers(0, 6, (3, 2, 3)) * 1.0),
    "Geometric-logits": (lambda D, l: D.Geometric(logits=l), [LOC], RNG.integers(0, 6, (2, 3)) * 1.0),
    "NegativeBinomial-probs": (lambda D, n, p: D.NegativeBinomial(n * 3, probs=p), [SCALE, PROBS],
                               RNG.integers(0, 6, (3, 2, 3)) * 1.0),
    "NegativeBinomial-logits": (lambda D, n, l: D.NegativeBinomial(n, logits=l), [SCALE, LOC],
                                RNG.integers(0, 6, (2, 3)) * 1.0),
    "Multinomial-probs": (lambda D, p: D.Multinomial(4, probs=p), [PROBS], np.array([[1.0, 2.0, 1.0], [0.0, 4.0, 0.0]])),
    "LowRankMultivariateNormal": (lambda D, l, w, d: D.LowRankMultivariateNormal(l, w, d), [LOC, A[..., :2], SCALE],
                                  RNG.standard_normal((4, 2, 3))),
    "LowRankMultivariateNormal-broadcast": (lambda D, l, w, d: D.LowRankMultivariateNormal(l[0], w, d[0]),
                                            [LOC, A[..., :1], SCALE], RNG.standard_normal((2, 3))),
    "MixtureSameFamily": (lambda D, lg, l, s: D.MixtureSameFamily(D.Categorical(logits=lg[:, :3]), D.Normal(l, s)),
                          [LOGITS, LOC, SCALE], RNG.standard_normal((4, 2))),
    "MixtureSameFamily-mvn": (lambda D, lg, l, c: D.MixtureSameFamily(
        D.Categorical(logits=lg[:, :2]), D.MultivariateNormal(l[:, None].expand(2, 2, 3), c)),
        [LOGITS, LOC, COV], RNG.standard_normal((4, 2, 3))),
    "RelaxedBernoulli": (lambda D, t, p: D.RelaxedBernoulli(t, probs=p), [SCALE, PROBS],
                         RNG.uniform(0.05, 0.95, (4, 2, 3))),
    "RelaxedBernoulli-logits": (lambda D, t, l: D.RelaxedBernoulli(t[0, 0], logits=l), [SCALE, LOC],
                                RNG.uniform(0.05, 0.95, (2, 3))),
    "RelaxedOneHotCategorical": (lambda D, t, l: D.RelaxedOneHotCategorical(t[0, 0], logits=l), [SCALE, LOGITS],
                                 RNG.dirichlet(np.ones(4), (3, 2))),
    "ContinuousBernoulli": (lambda D, p: D.ContinuousBernoulli(probs=p), [np.array([[0.1, 0.4995, 0.5], [0.7, 0.99, 0.3]])],
                            RNG.uniform(0.0, 1.0, (4, 2, 3))),
    "ContinuousBernoulli-logits": (lambda D, l: D.ContinuousBernoulli(logits=l), [LOC], RNG.uniform(0.0, 1.0, (2, 3))),
    "VonMises": (lambda D, l, k: D.VonMises(l, k * 3), [LOC, SCALE], RNG.uniform(-np.pi, np.pi, (4, 2, 3))),
    "OneHotCategoricalStraightThrough": (lambda D, l: D.OneHotCategoricalStraightThrough(logits=l), [LOGITS],
                                         np.eye(4)[[2, 0]]),
    "FisherSnedecor": (lambda D, a, b: D.FisherSnedecor(a * 5, b * 6), [SCALE, SCALE[::-1].copy()],
                       RNG.uniform(0.1, 3, (4, 2, 3))),
    "InverseGamma": (lambda D, a, b: D.InverseGamma(a * 3, b), [SCALE, PROBS], RNG.uniform(0.1, 3, (2, 3))),
    "Kumaraswamy": (lambda D, a, b: D.Kumaraswamy(a, b * 2), [SCALE, PROBS], RNG.uniform(0.05, 0.95, (4, 2, 3))),
    "LogisticNormal": (lambda D, l, s: D.LogisticNormal(l, s), [LOC, SCALE], RNG.dirichlet(np.ones(4), (2,))),
    "Multinomial-logits": (lambda D, l: D.Multinomial(3, logits=l), [LOGITS],
                           np.array([[[1.0, 2.0, 0.0, 0.0], [0.0, 1.0, 1.0, 1.0]]] * 2)),
}
ATTRIBUTES = ["mean", "variance", "stddev", "mode"]


def _make(lib, name):
    build, params, value = CASES[name]
    tensors = [lib.tensor(p, requires_grad=True) for p in params]
    D = lib.distributions
    return build(D, *tensors), tensors, lib.tensor(value)


def _close(a, b, what, rtol=None):
    # (gradients through digamma meet PyTorch's trigamma, good to ~1e-9 relative)
    rtol = rtol or (1e-7 if what.startswith("gradient") else 1e-9)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=rtol, atol=1e-12, err_msg=what)


@pytest.mark.parametrize("name", sorted(CASES))
def test_distribution_matches_torch(name):
    (ours, ours_p, ours_v), (theirs, theirs_p, theirs_v) = _make(tg, name), _make(torch, name)
    assert tuple(ours.batch_shape) == tuple(theirs.batch_shape)
    assert tuple(ours.event_shape) == tuple(theirs.event_shape)
    for attr in ATTRIBUTES:
        try:
            want = getattr(theirs, attr)
        except NotImplementedError:
            continue
        _close(getattr(ours, attr), want, attr)
    results = [(ours.log_prob(ours_v), theirs.log_prob(theirs_v), "log_prob")]
    probs = RNG.uniform(0.05, 0.95, tuple(theirs.batch_shape))
    for what, a, b in (("entropy", (), ()), ("cdf", (ours_v,), (theirs_v,)),
                       ("icdf", (tg.tensor(probs),), (torch.tensor(probs),))):
        try:
            want = getattr(theirs, what)(*b)
        except NotImplementedError:
            continue
        results.append((getattr(ours, what)(*a), want, what))
    for a, b, what in results:
        # (PyTorch's Multinomial entropy takes lgamma(n + 1) of an integer tensor: in float32)
        _close(a, b, what, rtol=1e-7 if (name.startswith("Multinomial") and what == "entropy") else None)
        cot = RNG.standard_normal(tuple(b.shape))
        # (retain_graph: log_prob and entropy share the cached parametrisation's graph)
        try:
            gb = torch.autograd.grad(b, theirs_p, torch.tensor(cot), allow_unused=True, retain_graph=True)
        except NotImplementedError:  # (igamma's gradient in a: tests/test_distributions_rsample.py)
            with pytest.raises(NotImplementedError):
                tg.autograd.grad(a, ours_p, tg.tensor(cot), allow_unused=True, retain_graph=True)
            continue
        ga = tg.autograd.grad(a, ours_p, tg.tensor(cot), allow_unused=True, retain_graph=True)
        for x, y in zip(ga, gb):
            if y is not None:
                _close(x, y, f"gradient of {what}")
    sample = ours.sample((5,))
    assert tuple(sample.shape) == tuple(theirs.sample((5,)).shape)
    assert not sample.requires_grad


KL_PAIRS = {
    "Normal": (lambda D, a, b: (D.Normal(a, b), D.Normal(a * 0.5, b + 1)), [LOC, SCALE]),
    "Laplace": (lambda D, a, b: (D.Laplace(a, b), D.Laplace(-a, b * 2)), [LOC, SCALE]),
    "Exponential": (lambda D, a, b: (D.Exponential(b), D.Exponential(b + a.abs())), [LOC, SCALE]),
    "Uniform": (lambda D, a, b: (D.Uniform(a, a + b), D.Uniform(a - 1, a + b * 2)), [LOC, SCALE]),
    "Uniform-outside": (lambda D, a, b: (D.Uniform(a, a + b), D.Uniform(a + 0.1, a + b * 2)), [LOC, SCALE]),
    "Bernoulli": (lambda D, a, b: (D.Bernoulli(logits=a), D.Bernoulli(probs=b / 2.5)), [LOC, SCALE]),
    "Categorical": (lambda D, a, b: (D.Categorical(logits=a), D.Categorical(probs=b)),
                    [LOGITS, np.abs(LOGITS) + 0.1]),
    "OneHotCategorical": (lambda D, a, b: (D.OneHotCategorical(logits=a), D.OneHotCategorical(logits=b)),
                          [LOGITS, LOGITS[::-1].copy()]),
    "MultivariateNormal": (lambda D, a, c: (D.MultivariateNormal(a, c), D.MultivariateNormal(a * 2, c * 1.5)),
                           [LOC, COV]),
    "Independent": (lambda D, a, b: (D.Independent(D.Normal(a, b), 1), D.Independent(D.Normal(a + 1, b), 1)), [LOC, SCALE]),
    "Gamma": (lambda D, a, b: (D.Gamma(b, b + 1), D.Gamma(b * 2, a.abs() + 0.5)), [LOC, SCALE]),
    "Beta": (lambda D, a, b: (D.Beta(b, a.abs() + 0.5), D.Beta(b * 2, b + 1)), [LOC, SCALE]),
    "Dirichlet": (lambda D, a, b: (D.Dirichlet(b), D.Dirichlet(a.abs() + 0.5)), [LOC, SCALE]),
    "Poisson": (lambda D, a, b: (D.Poisson(b), D.Poisson(a.abs() + 0.1)), [LOC, SCALE]),
    "Binomial": (lambda D, a, b: (D.Binomial(5, logits=a), D.Binomial(5, probs=b / 2.5)), [LOC, SCALE]),
    "Binomial-inf": (lambda D, a, b: (D.Binomial(b.detach().round() + 3, logits=a), D.Binomial(3, logits=-a)),
                     [LOC, SCALE]),
    "Cauchy": (lambda D, a, b: (D.Cauchy(a, b), D.Cauchy(a * 2, b + 1)), [LOC, SCALE]),
    "Geometric": (lambda D, a, b: (D.Geometric(logits=a), D.Geometric(probs=b / 2.5)), [LOC, SCALE]),
    "Gumbel": (lambda D, a, b: (D.Gumbel(a, b), D.Gumbel(-a, b * 2)), [LOC, SCALE]),
    "HalfNormal": (lambda D, a, b: (D.HalfNormal(b), D.HalfNormal(a.abs() + 0.2)), [LOC, SCALE]),
    "Pareto": (lambda D, a, b: (D.Pareto(b, a.abs() + 0.5), D.Pareto(b * 0.5 + 0.25 * a.abs(), b)), [LOC, SCALE]),
    "LogNormal": (lambda D, a, b: (D.LogNormal(a, b), D.LogNormal(a + 1, b * 2)), [LOC, SCALE]),
    "LowRank": (lambda D, a, w: (D.LowRankMultivariateNormal(a, w[..., :2], a.abs() + 0.5),
                                 D.LowRankMultivariateNormal(a * 2, w[..., 1:], a.abs() + 1)), [LOC, A]),
    "MVN-LowRank": (lambda D, a, w: (D.MultivariateNormal(a, scale_tril=_tril(w)),
                                     D.LowRankMultivariateNormal(a * 2, w[..., 1:], a.abs() + 1)), [LOC, A]),
    "LowRank-MVN": (lambda D, a, w: (D.LowRankMultivariateNormal(a * 2, w[..., 1:], a.abs() + 1),
                                     D.MultivariateNormal(a, scale_tril=_tril(w))), [LOC, A]),
    # different families (PyTorch's closed forms, or inf)
    "Bernoulli-Poisson": (lambda D, a, b: (D.Bernoulli(logits=a), D.Poisson(b)), [LOC, SCALE]),
    "Beta-Exponential": (lambda D, a, b: (D.Beta(b, a.abs() + 0.5), D.Exponential(b)), [LOC, SCALE]),
    "Beta-Gamma": (lambda D, a, b: (D.Beta(b, a.abs() + 0.5), D.Gamma(b + 1, a.abs() + 0.2)), [LOC, SCALE]),
    "Beta-Normal": (lambda D, a, b: (D.Beta(b, a.abs() + 0.5), D.Normal(a, b)), [LOC, SCALE]),
    "Beta-Uniform": (lambda D, a, b: (D.Beta(b, a.abs() + 0.5), D.Uniform(a * 0 - 0.5, b + 1)), [LOC, SCALE]),
    "Beta-Pareto": (lambda D, a, b: (D.Beta(b, a.abs() + 0.5), D.Pareto(b, b)), [LOC, SCALE]),
    "Exponential-Gamma": (lambda D, a, b: (D.Exponential(b), D.Gamma(a.abs() + 0.5, b + 1)), [LOC, SCALE]),
    "Exponential-Gumbel": (lambda D, a, b: (D.Exponential(b), D.Gumbel(a, b + 1)), [LOC, SCALE]),
    "Exponential-Normal": (lambda D, a, b: (D.Exponential(b), D.Normal(a, b + 1)), [LOC, SCALE]),
    "Exponential-Uniform": (lambda D, a, b: (D.Exponential(b), D.Uniform(a, a + b)), [LOC, SCALE]),
    "Gamma-Exponential": (lambda D, a, b: (D.Gamma(b, a.abs() + 0.5), D.Exponential(b)), [LOC, SCALE]),
    "Gamma-Gumbel": (lambda D, a, b: (D.Gamma(b, a.abs() + 0.5), D.Gumbel(a, b + 1)), [LOC, SCALE]),
    "Gamma-Normal": (lambda D, a, b: (D.Gamma(b, a.abs() + 0.5), D.Normal(a, b + 1)), [LOC, SCALE]),
    "Gumbel-Normal": (lambda D, a, b: (D.Gumbel(a, b), D.Normal(-a, b + 1)), [LOC, SCALE]),
    "Gumbel-Gamma": (lambda D, a, b: (D.Gumbel(a, b), D.Gamma(b, b)), [LOC, SCALE]),
    "Laplace-Normal": (lambda D, a, b: (D.Laplace(a, b), D.Normal(-a, b + 1)), [LOC, SCALE]),
    "Laplace-Uniform": (lambda D, a, b: (D.Laplace(a, b), D.Uniform(a, a + b)), [LOC, SCALE]),
    "Normal-Gumbel": (lambda D, a, b: (D.Normal(a, b), D.Gumbel(-a, b + 1)), [LOC, SCALE]),
    "Normal-Laplace": (lambda D, a, b: (D.Normal(a, b), D.Laplace(-a, b + 1)), [LOC, SCALE]),
    "Normal-Gamma": (lambda D, a, b: (D.Normal(a, b), D.Gamma(b, b)), [LOC, SCALE]),
    "Pareto-Exponential": (lambda D, a, b: (D.Pareto(b, a.abs() + 0.5), D.Exponential(b)), [LOC, SCALE]),
    "Pareto-Gamma": (lambda D, a, b: (D.Pareto(b, a.abs() + 0.5), D.Gamma(b, b + 1)), [LOC, SCALE]),
    "Pareto-Normal": (lambda D, a, b: (D.Pareto(b, a.abs() * 3 + 0.5), D.Normal(a, b)), [LOC, SCALE]),
    "Pareto-Uniform": (lambda D, a, b: (D.Pareto(b, b), D.Uniform(a, a + b)), [LOC, SCALE]),
    "Poisson-Bernoulli": (lambda D, a, b: (D.Poisson(b), D.Bernoulli(logits=a)), [LOC, SCALE]),
    "Poisson-Binomial": (lambda D, a, b: (D.Poisson(b), D.Binomial(4, logits=a)), [LOC, SCALE]),
    "Uniform-Beta": (lambda D, a, b: (D.Uniform(b * 0.1, b * 0.1 + 0.3), D.Beta(b, a.abs() + 0.5)), [LOC, SCALE]),
    "Uniform-Beta-outside": (lambda D, a, b: (D.Uniform(a, a + b), D.Beta(b, b)), [LOC, SCALE]),
    "Uniform-Exponential": (lambda D, a, b: (D.Uniform(a, a + b), D.Exponential(b)), [LOC, SCALE]),
    "Uniform-Gamma": (lambda D, a, b: (D.Uniform(a.abs(), a.abs() + b), D.Gamma(b, b + 1)), [LOC, SCALE]),
    "Uniform-Gumbel": (lambda D, a, b: (D.Uniform(a, a + b), D.Gumbel(-a, b + 1)), [LOC, SCALE]),
    "Uniform-Normal": (lambda D, a, b: (D.Uniform(a, a + b), D.Normal(-a, b + 1)), [LOC, SCALE]),
    "ContinuousBernoulli": (lambda D, a, b: (D.ContinuousBernoulli(logits=a), D.ContinuousBernoulli(probs=b / 2.5)),
                            [LOC, SCALE]),
    "Beta-ContinuousBernoulli": (lambda D, a, b: (D.Beta(b, b + 1), D.ContinuousBernoulli(logits=a)), [LOC, SCALE]),
    "ContinuousBernoulli-Exponential": (lambda D, a, b: (D.ContinuousBernoulli(logits=a), D.Exponential(b)),
                                        [LOC, SCALE]),
    "ContinuousBernoulli-Normal": (lambda D, a, b: (D.ContinuousBernoulli(logits=a), D.Normal(a, b)), [LOC, SCALE]),
    "ContinuousBernoulli-Uniform": (lambda D, a, b: (D.ContinuousBernoulli(logits=a), D.Uniform(a * 0 - 0.5, b + 1)),
                                    [LOC, SCALE]),
    "Uniform-ContinuousBernoulli": (lambda D, a, b: (D.Uniform(b * 0.1, b * 0.1 + 0.3), D.ContinuousBernoulli(logits=a)),
                                    [LOC, SCALE]),
    "Uniform-Pareto": (lambda D, a, b: (D.Uniform(a.abs() + 0.5, a.abs() + b + 0.5), D.Pareto(b * 0.3, b)), [LOC, SCALE]),
}


def _tril(w):
    """A Cholesky factor made of ``w`` (either library's tensor)."""
    return w.tril(-1) + (w.diagonal(0, -2, -1).abs() + 1).diag_embed()


@pytest.mark.parametrize("name", sorted(KL_PAIRS))
def test_kl_divergence_matches_torch(name):
    out = []
    for lib in (tg, torch):
        build, params = KL_PAIRS[name]
        tensors = [lib.tensor(p, requires_grad=True) for p in params]
        p, q = build(lib.distributions, *tensors)
        kl = lib.distributions.kl_divergence(p, q)
        cot = np.ones(tuple(kl.shape))
        finite = np.isfinite(kl.detach().numpy()).all()
        grads = lib.autograd.grad(kl, tensors, lib.tensor(cot), allow_unused=True) if finite else ()
        out.append((kl, grads))
    _close(out[0][0], out[1][0], "kl")
    for a, b in zip(out[0][1], out[1][1]):
        if b is not None:
            _close(a, b, "gradient of kl")


def test_rsample_carries_gradients_and_samples_have_the_right_statistics():
    tg.manual_seed(0)
    loc = tg.tensor([1.0, -2.0], requires_grad=True)
    scale = tg.tensor([0.5, 2.0], requires_grad=True)
    x = tg.distributions.Normal(loc, scale).rsample((20000,))
    x.sum().backward()
    np.testing.assert_allclose(loc.grad.numpy(), [20000, 20000])
    np.testing.assert_allclose(x.detach().numpy().mean(0), [1.0, -2.0], atol=0.05)
    np.testing.assert_allclose(x.detach().numpy().std(0), [0.5, 2.0], rtol=0.03)
    counts = np.bincount(tg.distributions.Categorical(probs=tg.tensor([0.2, 0.5, 0.3])).sample((20000,)).numpy(),
                         minlength=3) / 20000
    np.testing.assert_allclose(counts, [0.2, 0.5, 0.3], atol=0.02)
    mvn = tg.distributions.MultivariateNormal(tg.zeros(2, dtype=tg.float64),
                                              tg.tensor([[2.0, 0.6], [0.6, 1.0]], dtype=tg.float64))
    draws = mvn.sample((40000,)).numpy()
    np.testing.assert_allclose(np.cov(draws.T), [[2.0, 0.6], [0.6, 1.0]], atol=0.06)
    D = tg.distributions
    for d in (D.Uniform(-1.0, 3.0), D.Laplace(0.5, 1.5), D.Exponential(2.0), D.Bernoulli(0.3), D.Gamma(2.0, 3.0),
              D.Beta(2.0, 5.0), D.Poisson(3.5), D.StudentT(5.0, 1.0, 2.0), D.Chi2(3.0), D.LogNormal(0.2, 0.5),
              D.HalfNormal(2.0), D.Gumbel(1.0, 2.0), D.Weibull(2.0, 1.5), D.Pareto(1.0, 4.0),
              D.Binomial(7, probs=tg.tensor(0.3)), D.Geometric(tg.tensor(0.25)),
              D.NegativeBinomial(3.0, probs=tg.tensor(0.4)), D.ContinuousBernoulli(tg.tensor(0.8)),
              D.VonMises(tg.tensor(0.5), tg.tensor(4.0)), D.FisherSnedecor(4.0, 9.0), D.InverseGamma(4.0, 2.0),
              D.Kumaraswamy(2.0, 3.0)):
        draws = d.sample((20000,)).numpy()
        np.testing.assert_allclose(draws.mean(), float(d.mean), atol=0.05 * max(1.0, float(d.stddev)))
    mix = D.MixtureSameFamily(D.Categorical(tg.tensor([0.3, 0.7])), D.Normal(tg.tensor([-2.0, 1.0]), tg.tensor([0.5, 1.0])))
    np.testing.assert_allclose(mix.sample((20000,)).numpy().mean(), float(mix.mean), atol=0.05)
    low_rank = D.LowRankMultivariateNormal(tg.zeros(2, dtype=tg.float64), tg.tensor([[1.0], [0.5]], dtype=tg.float64),
                                           tg.tensor([0.5, 1.0], dtype=tg.float64))
    np.testing.assert_allclose(np.cov(low_rank.sample((40000,)).numpy().T), low_rank.covariance_matrix.numpy(), atol=0.06)
    counts = D.Multinomial(10, probs=tg.tensor([0.2, 0.3, 0.5])).sample((20000,)).numpy()
    assert (counts.sum(-1) == 10).all()
    np.testing.assert_allclose(counts.mean(0), [2.0, 3.0, 5.0], atol=0.05)
    draws = D.Dirichlet(tg.tensor([1.0, 2.0, 5.0])).sample((20000,)).numpy()
    np.testing.assert_allclose(draws.mean(0), [0.125, 0.25, 0.625], atol=0.01)
    np.testing.assert_allclose(draws.sum(1), 1.0, rtol=1e-6)


def test_arguments_are_checked_as_torchs():
    with pytest.raises(ValueError, match="scale .* to satisfy the constraint GreaterThan"):
        tg.distributions.Normal(0.0, tg.tensor([1.0, -1.0]))
    with pytest.raises(ValueError, match="Either `probs` or `logits`"):
        tg.distributions.Bernoulli(probs=0.5, logits=0.0)
    with pytest.raises(ValueError, match="Exactly one of covariance_matrix"):
        tg.distributions.MultivariateNormal(tg.zeros(2))
    with pytest.raises(NotImplementedError, match="No KL"):
        tg.distributions.kl_divergence(tg.distributions.Cauchy(0.0, 1.0), tg.distributions.Poisson(1.0))
    # (two exponential families meet the Bregman-divergence KL, which refuses them, as PyTorch's)
    with pytest.raises(NotImplementedError, match="different exponential families"):
        tg.distributions.kl_divergence(tg.distributions.Normal(0.0, 1.0), tg.distributions.Poisson(1.0))
    tg.distributions.Normal(0.0, -1.0, validate_args=False)  # (checks can be turned off)


def test_log_prob_and_kl_compile_to_eager_values():
    def loss(loc, logits, x, a):
        D = tg.distributions
        normal = D.Normal(loc, loc.abs() + 0.5)
        cat = D.Categorical(logits=logits)
        return (normal.log_prob(x).sum() + cat.log_prob(a).sum() + cat.entropy().sum()
                + D.kl_divergence(normal, D.Normal(0.0, 1.0)).sum())

    args = (tg.tensor(LOC), tg.tensor(LOGITS), tg.tensor(LOC * 2), tg.tensor([1, 3]))
    eager = loss(*args)
    compiled = tg.compile(loss, fullgraph=True)(*args)
    np.testing.assert_allclose(compiled.numpy(), eager.numpy(), rtol=1e-10)


def test_reparametrized_sampling_compiles_to_eager_values():
    """rsample draws from the seeded noise op: a compiled function samples without a graph
    break, and under the same seed gives eager's samples (fresh ones on every call)."""
    D = tg.distributions
    loc, scale = tg.tensor([1.0, -2.0], requires_grad=True), tg.tensor([0.5, 2.0], requires_grad=True)
    tril = tg.tensor([[1.0, 0.0], [0.5, 2.0]])

    def objective(loc, scale):
        x = D.Normal(loc, scale).rsample((3,)) + D.Laplace(loc, scale).rsample((3,))
        y = D.Uniform(loc, loc + scale).rsample((3,)) + D.Exponential(scale).rsample((3,))
        z = D.MultivariateNormal(loc, scale_tril=tril).rsample((3,)) + \
            D.LowRankMultivariateNormal(loc, tril, scale).rsample((3,))
        w = (D.Cauchy(loc, scale).rsample((3,)) + D.LogNormal(loc, scale).rsample((3,))
             + D.Gumbel(loc, scale).rsample((3,)) * D.HalfNormal(scale).rsample((3,)))
        v = (D.RelaxedBernoulli(scale, logits=loc).rsample((3,)) + D.ContinuousBernoulli(logits=loc).rsample((3,))
             + D.RelaxedOneHotCategorical(scale[0], logits=loc).rsample((3,)) + D.Kumaraswamy(scale, scale).rsample())
        return (x * y + z + w.tanh() + v).sum()

    results = []
    for run in (objective, tg.compile(objective, fullgraph=True)):
        tg.manual_seed(5)
        results.append([float(run(loc, scale)) for _ in range(2)])
    assert results[0] == pytest.approx(results[1], rel=1e-6)
    assert results[0][0] != results[0][1]  # (fresh noise on every call)
    assert all(g is not None for g in tg.autograd.grad(objective(loc, scale), [loc, scale]))


def test_constraints_and_supports_are_torchs():
    C, TC = tg.distributions.constraints, torch.distributions.constraints
    for name in TC.__all__:
        assert hasattr(C, name), name
    values = np.array([[-1.0, 0.0, 0.5], [1.0, 2.0, np.nan]])
    for name in ["real", "positive", "nonnegative", "unit_interval", "boolean", "nonnegative_integer",
                 "positive_integer", "simplex", "real_vector", "one_hot"]:
        ours, theirs = getattr(C, name), getattr(TC, name)
        assert repr(ours) == repr(theirs)
        assert (ours.is_discrete, ours.event_dim) == (theirs.is_discrete, theirs.event_dim), name
        np.testing.assert_array_equal(ours.check(tg.tensor(values)).numpy(),
                                      theirs.check(torch.tensor(values)).numpy(), err_msg=name)
    for build in (lambda c: c.interval(-1.0, 1.0), lambda c: c.half_open_interval(0.0, 1.0),
                  lambda c: c.greater_than(0.5), lambda c: c.less_than(1.0), lambda c: c.integer_interval(0, 2),
                  lambda c: c.independent(c.positive, 1), lambda c: c.greater_than_eq(0.0)):
        ours, theirs = build(C), build(TC)
        assert repr(ours) == repr(theirs)
        np.testing.assert_array_equal(ours.check(tg.tensor(values)).numpy(), theirs.check(torch.tensor(values)).numpy())
    mats = np.stack([COV[0], np.tril(A[0]) + 3 * np.eye(3), A[1]])
    for name in ["lower_triangular", "lower_cholesky", "positive_definite", "positive_semidefinite", "symmetric",
                 "square"]:
        np.testing.assert_array_equal(getattr(C, name).check(tg.tensor(mats)).numpy(),
                                      getattr(TC, name).check(torch.tensor(mats)).numpy(), err_msg=name)
    def kind(c):  # (the repr up to the first tensor bound: tensors print differently)
        return repr(c).split("=tensor")[0]

    for name in CASES:
        ours, theirs = _make(tg, name)[0], _make(torch, name)[0]
        assert {k: kind(v) for k, v in ours.arg_constraints.items()} == \
            {k: kind(v) for k, v in theirs.arg_constraints.items()}, name
        assert kind(ours.support) == kind(theirs.support), name


@pytest.mark.parametrize("build,value", [
    (lambda lib: lib.distributions.Exponential(lib.tensor(1.0)), -1.0),
    (lambda lib: lib.distributions.Bernoulli(lib.tensor(0.3)), 0.5),
    (lambda lib: lib.distributions.Categorical(lib.tensor([0.5, 0.5])), 2.0),
    (lambda lib: lib.distributions.Beta(lib.tensor(2.0), lib.tensor(2.0)), 1.5),
    (lambda lib: lib.distributions.Dirichlet(lib.tensor([1.0, 2.0])), [0.5, 0.6]),
])
def test_log_prob_checks_its_value_against_the_support_as_torch(build, value):
    for lib in (tg, torch):
        with pytest.raises(ValueError, match="Expected value argument .* to be within the support"):
            build(lib).log_prob(lib.tensor(value))
    with pytest.raises(ValueError, match="The right-most size of value must match event_shape"):
        tg.distributions.Dirichlet(tg.tensor([1.0, 2.0])).log_prob(tg.tensor([0.5, 0.3, 0.2]))


EXPANDED = ["Normal", "Uniform", "Bernoulli-logits", "Categorical-probs", "MultivariateNormal-tril", "Independent",
            "Beta", "Dirichlet", "StudentT", "LogNormal", "Gumbel", "Weibull", "Binomial-probs", "Multinomial-probs",
            "LowRankMultivariateNormal-broadcast", "MixtureSameFamily", "HalfNormal"]


@pytest.mark.parametrize("name", EXPANDED)
def test_expand_matches_torch(name):
    out = []
    for lib in (tg, torch):
        d, _, value = _make(lib, name)
        while value.ndim > len(d.batch_shape) + len(d.event_shape):  # (one value per batch entry)
            value = value[0]
        batch = (4,) + tuple(d.batch_shape)
        e = d.expand(batch)
        out.append((tuple(e.batch_shape), tuple(e.event_shape), e.log_prob(value), tuple(e.sample((2,)).shape)))
    assert out[0][0] == out[1][0] and out[0][1] == out[1][1] and out[0][3] == out[1][3]
    _close(out[0][2], out[1][2], "log_prob")


def test_every_kl_pair_torch_registers_between_our_families_is_registered():
    from torch.distributions.kl import _KL_REGISTRY

    from tracegrad.distributions.kl import _KL

    ours = {(p.__name__, q.__name__) for p, q in _KL}
    D = tg.distributions
    missing = sorted((p.__name__, q.__name__) for p, q in _KL_REGISTRY
                     if hasattr(D, p.__name__) and hasattr(D, q.__name__) and (p.__name__, q.__name__) not in ours)
    assert not missing, f"KL pairs PyTorch registers and we do not: {missing}"


def test_bernoulli_gradient_at_even_odds_is_torchs():
    """At logits exactly 0 (probs 1/2, e.g. a zero-initialised layer) the gradient of the
    log-likelihood is y - 1/2, as PyTorch's (binary_cross_entropy_with_logits' kink)."""
    grads = []
    for lib in (tg, torch):
        logits = lib.tensor([0.0, 0.0, 1.5], requires_grad=True)
        lp = lib.distributions.Bernoulli(logits=logits).log_prob(lib.tensor([1.0, 0.0, 1.0])).sum()
        grads.append(lib.autograd.grad(lp, logits)[0].numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-6)
