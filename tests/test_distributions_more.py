"""GeneralizedPareto, Wishart and LKJCholesky against torch.distributions: log_prob, entropy,
moments, cdf/icdf with their gradients, shapes, argument checks; sample statistics, and
rsample compiled against eager under one seed."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tracegrad as tg  # noqa: E402

RNG = np.random.default_rng(11)


def _close(a, b, what, rtol=1e-9):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=rtol, atol=1e-12, err_msg=what)


def _compare(build, params, methods, grad_rtol=1e-8):
    """Each of ``methods(d, lib)`` (name: value) of ``build(lib, *tensors)`` in both
    libraries, and the gradients of each in the parameters."""
    out = []
    for lib in (tg, torch):
        tensors = [lib.tensor(p, requires_grad=True) for p in params]
        d = build(lib, *tensors)
        values = methods(d, lib)
        grads = {k: lib.autograd.grad(v.nan_to_num().sum(), tensors, allow_unused=True, retain_graph=True)
                 for k, v in values.items() if v.requires_grad}
        out.append((d, values, grads))
    (ours, ov, og), (theirs, tv, tgr) = out
    assert (tuple(ours.batch_shape), tuple(ours.event_shape)) == (tuple(theirs.batch_shape), tuple(theirs.event_shape))
    for k in tv:
        _close(ov[k], tv[k], k)
    assert og.keys() == tgr.keys()
    for k in tgr:
        for a, b in zip(og[k], tgr[k]):
            assert (a is None) == (b is None), k
            if b is not None:
                _close(a, b, f"gradient of {k}", grad_rtol)
    return ours


def _assert_compiled_draws_match_eager(sample, arg):
    """``sample(arg)`` twice eagerly and twice compiled, each pair from seed 3: the same two
    values (warnings of the graph break silenced), and the two draws differ."""
    results = []
    for run in (sample, tg.compile(sample)):
        tg.manual_seed(3)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            results.append([float(run(arg)) for _ in range(2)])
    assert results[0] == pytest.approx(results[1], rel=1e-9) and results[0][0] != results[0][1]


# ------------------------------------------------------------------ GeneralizedPareto
GP_LOC = RNG.standard_normal((2, 4))
GP_SCALE = RNG.uniform(0.5, 2.0, (2, 4))
GP_CONC = np.array([[0.3, -0.4, 0.0, 1.2], [-1.0, 0.7, -0.2, 0.45]])  # (0: the exponential; -1: the uniform)


def _gp_methods(d, lib):
    value = d.loc + lib.tensor(np.abs(RNG.standard_normal((3, 2, 4))) * 0.3)
    return {"log_prob": d.log_prob(value), "cdf": d.cdf(value), "log_cdf": d.log_cdf(value),
            "log_survival_function": d.log_survival_function(value), "entropy": d.entropy(),
            "icdf": d.icdf(lib.tensor(RNG.uniform(0.05, 0.95, (2, 4)))), "mean": d.mean, "variance": d.variance,
            "mode": d.mode, "stddev": d.stddev}


def test_generalized_pareto_matches_torch():
    torch_dtype = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)  # (PyTorch's isclose against tensor(0.0) needs it in float64)
    try:
        state = RNG.bit_generator.state  # (the same random values in both libraries)
        _compare(lambda lib, *t: lib.distributions.GeneralizedPareto(*t), [GP_LOC, GP_SCALE, GP_CONC],
                 _with_state(_gp_methods, state))
        d = tg.distributions.GeneralizedPareto(tg.tensor(GP_LOC), tg.tensor(GP_SCALE), tg.tensor(GP_CONC))
        theirs = torch.distributions.GeneralizedPareto(*(torch.tensor(a) for a in (GP_LOC, GP_SCALE, GP_CONC)))
        _close(d.support.upper_bound, theirs.support.upper_bound, "support")
        assert tuple(d.sample((5,)).shape) == (5, 2, 4) and tuple(d.expand((3, 2, 4)).sample().shape) == (3, 2, 4)
        with pytest.raises(ValueError, match="scale .* to satisfy the constraint GreaterThan"):
            tg.distributions.GeneralizedPareto(0.0, -1.0, 0.1)
        with pytest.raises(ValueError, match="to be within the support"):
            tg.distributions.GeneralizedPareto(tg.tensor(0.0), tg.tensor(1.0), tg.tensor(-0.5)).log_prob(tg.tensor(3.0))
    finally:
        torch.set_default_dtype(torch_dtype)


def _with_state(methods, state):
    """``methods`` drawing its random values from ``RNG`` restored to ``state`` each call."""
    def run(d, lib):
        RNG.bit_generator.state = state
        return methods(d, lib)

    return run


def test_generalized_pareto_samples_and_compiles():
    D = tg.distributions
    for conc in (-0.3, 0.0, 0.2):
        d = D.GeneralizedPareto(tg.tensor(1.0, dtype=tg.float64), tg.tensor(2.0, dtype=tg.float64),
                                tg.tensor(conc, dtype=tg.float64))
        draws = d.sample((40000,)).numpy()
        np.testing.assert_allclose(draws.mean(), float(d.mean), rtol=0.03)
        np.testing.assert_allclose(draws.var(), float(d.variance), rtol=0.08)
        assert draws.min() >= 1.0
    scale = tg.tensor([0.5, 2.0], requires_grad=True)

    def objective(scale):
        return D.GeneralizedPareto(0.0, scale, tg.tensor([0.1, -0.2])).rsample((3,)).sum()

    results = []
    for run in (objective, tg.compile(objective, fullgraph=True)):
        tg.manual_seed(4)
        results.append([float(run(scale)) for _ in range(2)])
    assert results[0] == pytest.approx(results[1], rel=1e-6) and results[0][0] != results[0][1]
    assert tg.autograd.grad(objective(scale), [scale])[0].shape == (2,)


# ------------------------------------------------------------------ Wishart
_A = RNG.standard_normal((2, 3, 3))
COV = _A @ np.swapaxes(_A, -1, -2) + np.eye(3)
_B = RNG.standard_normal((2, 3, 3))
VALUE = _B @ np.swapaxes(_B, -1, -2) + np.eye(3)


def _wishart_methods(d, lib):
    D = lib.distributions
    methods = {"log_prob": d.log_prob(lib.tensor(VALUE)), "entropy": d.entropy(), "mean": d.mean,
               "variance": d.variance, "mode": d.mode, "generic entropy": D.ExponentialFamily.entropy(d),
               "covariance_matrix": d.covariance_matrix, "precision_matrix": d.precision_matrix,
               "scale_tril": d.scale_tril}
    if not d.batch_shape:  # (PyTorch's Bregman KL adds up a batched df's terms: unbatched only)
        methods["kl"] = D.kl_divergence(d, D.Wishart(lib.tensor(5.0, dtype=lib.float64), covariance_matrix=lib.tensor(VALUE[0])))
        methods["kl reversed"] = D.kl_divergence(D.Wishart(lib.tensor(5.0, dtype=lib.float64), covariance_matrix=lib.tensor(VALUE[0])), d)
    return methods


@pytest.mark.parametrize("kind", ["covariance_matrix", "precision_matrix", "scale_tril", "unbatched"])
def test_wishart_matches_torch(kind):
    def build(lib, df, cov):
        if kind == "unbatched":
            return lib.distributions.Wishart(df[1], covariance_matrix=cov[0])
        matrix = lib.linalg.cholesky(cov) if kind == "scale_tril" else cov
        return lib.distributions.Wishart(df, **{kind: matrix})

    _compare(build, [np.array([3.5, 5.0]), COV], _wishart_methods)


def test_wishart_batched_kl_is_the_kl_of_each_member():
    D, TD = tg.distributions, torch.distributions
    ours = D.kl_divergence(D.Wishart(tg.tensor([3.5, 5.0]), tg.tensor(COV)), D.Wishart(tg.tensor([4.0, 6.0]), tg.tensor(VALUE)))
    theirs = [TD.kl_divergence(TD.Wishart(torch.tensor(df), torch.tensor(COV[i])),
                                  TD.Wishart(torch.tensor(df2), torch.tensor(VALUE[i]))).item()
              for i, (df, df2) in enumerate([(3.5, 4.0), (5.0, 6.0)])]
    np.testing.assert_allclose(ours.detach().numpy(), theirs, rtol=1e-9)


def test_wishart_checks_its_arguments_as_torch():
    D = tg.distributions
    with pytest.raises(AssertionError, match="Exactly one of covariance_matrix"):
        D.Wishart(tg.tensor(3.0))
    with pytest.raises(ValueError, match="scale_tril must be at least two-dimensional"):
        D.Wishart(tg.tensor(3.0), scale_tril=tg.ones(2))
    with pytest.raises(ValueError, match=r"expected to be greater than ndim - 1 = 2"):
        D.Wishart(tg.tensor(1.5), covariance_matrix=tg.eye(3))
    with pytest.raises(ValueError, match="covariance_matrix .* to satisfy the constraint PositiveDefinite"):
        D.Wishart(tg.tensor(3.0), covariance_matrix=-tg.eye(2))
    with pytest.warns(UserWarning, match="Low df values detected"):
        D.Wishart(tg.tensor(2.5), covariance_matrix=tg.eye(3))
    with pytest.raises(ValueError, match="to be within the support"):
        D.Wishart(tg.tensor(3.0), covariance_matrix=tg.eye(2)).log_prob(-tg.eye(2))


def test_wishart_samples_have_its_moments_and_gradients():
    cov = tg.tensor([[2.0, 0.5], [0.5, 1.0]], dtype=tg.float64)
    df = tg.tensor([3.0, 6.0], dtype=tg.float64, requires_grad=True)
    d = tg.distributions.Wishart(df, covariance_matrix=cov)
    tg.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (no singular samples here)
        draws = d.rsample((20000,))
    assert tuple(draws.shape) == (20000, 2, 2, 2)
    np.testing.assert_allclose(draws.detach().numpy().mean(0), d.mean.detach().numpy(), rtol=0.03)
    np.testing.assert_allclose(draws.detach().numpy().var(0), d.variance.detach().numpy(), rtol=0.08)
    # d E[sum X] / d df = sum(cov) per draw (implicit gradients of the chi2 diagonal)
    np.testing.assert_allclose(tg.autograd.grad(draws.sum(), [df])[0].numpy(), 20000 * 4.0, rtol=0.03)
    e = d.expand((4, 2))
    assert tuple(e.batch_shape) == (4, 2) and tuple(e.sample((3,)).shape) == (3, 4, 2, 2, 2)
    _close(e.log_prob(draws[0].detach()), d.log_prob(draws[0].detach()).expand(4, 2), "expanded log_prob")

    def sample(df):
        return tg.distributions.Wishart(df, covariance_matrix=cov).rsample((3,)).sum()

    _assert_compiled_draws_match_eager(sample, df)  # (the chi2 draws break the graph, as gamma's)


# ------------------------------------------------------------------ LKJCholesky
def test_lkj_cholesky_log_prob_matches_torch():
    values = torch.distributions.LKJCholesky(4, torch.tensor(1.5, dtype=torch.float64)).sample((3, 2)).numpy()

    def build(lib, conc):
        return lib.distributions.LKJCholesky(4, conc)

    for conc in (np.array([0.5, 2.0]), np.array(1.0)):
        d = _compare(build, [conc], lambda d, lib: {"log_prob": d.log_prob(lib.tensor(values))})
        assert tuple(d.expand((3,) + tuple(d.batch_shape)).batch_shape) == (3,) + tuple(d.batch_shape)
    D = tg.distributions
    with pytest.raises(ValueError, match="Expected dim to be an integer greater than or equal to 2. Found dim=1."):
        D.LKJCholesky(1, 1.0)
    for lib in (tg, torch):  # (the inner Beta's Dirichlet checks first, in both)
        with pytest.raises(ValueError, match=r"concentration \(Tensor of shape \(3, 2\)\) of distribution Dirichlet"):
            lib.distributions.LKJCholesky(3, -1.0)
    with pytest.raises(ValueError, match="to be within the support"):
        D.LKJCholesky(2, 1.0).log_prob(tg.tensor([[1.0, 0.0], [0.5, 0.5]]))
    assert repr(D.LKJCholesky(2).support) == repr(torch.distributions.LKJCholesky(2).support)


def test_lkj_cholesky_samples_are_correlation_factors_with_the_onion_methods_marginals():
    conc = tg.tensor([0.5, 1.0, 3.0], dtype=tg.float64)
    d = tg.distributions.LKJCholesky(4, conc)
    tg.manual_seed(2)
    L = d.sample((20000,))
    assert tuple(L.shape) == (20000, 3, 4, 4) and not L.requires_grad
    assert bool(tg.distributions.constraints.corr_cholesky.check(L).all())
    corr = (L @ L.transpose(-1, -2)).numpy()
    # the first correlation (r + 1) / 2 ~ Beta(a, a), a = eta - 1 + dim / 2: variance 1 / (2a + 1)
    # (PyTorch's sampler, followed here, spreads the later rows' correlations wider)
    a = conc.numpy() - 1 + 4 / 2
    np.testing.assert_allclose(corr[..., 1, 0].var(0), 1 / (2 * a + 1), rtol=0.05)
    np.testing.assert_allclose(corr.mean(0), np.broadcast_to(np.eye(4), (3, 4, 4)), atol=0.02)
    theirs = torch.distributions.LKJCholesky(4, torch.tensor(conc.numpy())).sample((20000,))
    theirs = (theirs @ theirs.transpose(-1, -2)).numpy()
    np.testing.assert_allclose(corr.var(0), theirs.var(0), atol=0.02)

    def sample(conc):
        return tg.distributions.LKJCholesky(3, conc).sample((2,)).sum()

    _assert_compiled_draws_match_eager(sample, conc)  # (the Beta draws break the graph)
