"""tg.distributions.ExponentialFamily against torch's: the class hierarchy, natural parameters
and log normalizers, the generic entropy and the Bregman-divergence KL (values and gradients),
compiled against eager, and kl_divergence's dispatch with its ambiguity warning."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tracegrad as tg  # noqa: E402
from tracegrad.distributions.exp_family import kl_expfamily_expfamily  # noqa: E402

RNG = np.random.default_rng(3)
POS = RNG.uniform(0.5, 2.0, (2, 3))
POS2 = RNG.uniform(0.5, 2.0, (2, 3))
REAL = RNG.standard_normal((2, 3))

# name: (the two distributions of one family from two parameter tensors, their arrays)
FAMILIES = {
    "Normal": (lambda D, a, b: (D.Normal(b - 1, a), D.Normal(a, b)), [POS, POS2]),
    "Exponential": (lambda D, a, b: (D.Exponential(a), D.Exponential(b)), [POS, POS2]),
    "Gamma": (lambda D, a, b: (D.Gamma(a, b), D.Gamma(b, a)), [POS, POS2]),
    "Chi2": (lambda D, a, b: (D.Chi2(a * 3), D.Chi2(b)), [POS, POS2]),
    "Beta": (lambda D, a, b: (D.Beta(a, b), D.Beta(b * 2, a)), [POS, POS2]),
    "Dirichlet": (lambda D, a, b: (D.Dirichlet(a), D.Dirichlet(b)), [POS, POS2]),
    "Poisson": (lambda D, a, b: (D.Poisson(a), D.Poisson(b)), [POS, POS2]),
    "Bernoulli": (lambda D, a, b: (D.Bernoulli(logits=a), D.Bernoulli(probs=b / 2.5)), [REAL, POS2]),
    "ContinuousBernoulli": (lambda D, a, b: (D.ContinuousBernoulli(logits=a), D.ContinuousBernoulli(probs=b / 2.5)),
                            [np.array([[-1.0, 0.0, 0.0005], [-0.0005, 2.0, 0.3]]), POS2]),
}


def _build(lib, name):
    build, params = FAMILIES[name]
    tensors = [lib.tensor(p, requires_grad=True) for p in params]
    return build(lib.distributions, *tensors), tensors


def _close(a, b, what):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-9, atol=1e-12, err_msg=what)


def _grads(lib, out, tensors):
    return lib.autograd.grad(out.sum(), tensors, allow_unused=True, retain_graph=True)


def test_the_class_hierarchy_is_torchs():
    for name in torch.distributions.__all__:
        theirs = getattr(torch.distributions, name)
        if isinstance(theirs, type) and issubclass(theirs, torch.distributions.Distribution) \
                and hasattr(tg.distributions, name):
            ours = getattr(tg.distributions, name)
            assert issubclass(ours, tg.distributions.ExponentialFamily) == \
                issubclass(theirs, torch.distributions.ExponentialFamily), name


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_natural_parameters_log_normalizer_and_generic_entropy_are_torchs(name):
    (p, ours), (tp, theirs) = [_build(lib, name) for lib in (tg, torch)]
    for a, b in zip(p[0]._natural_params, tp[0]._natural_params):
        _close(a, b, "natural parameter")
    _close(p[0]._log_normalizer(*p[0]._natural_params), tp[0]._log_normalizer(*tp[0]._natural_params),
           "log normalizer")
    try:
        want = torch.distributions.ExponentialFamily.entropy(tp[0])
    except NotImplementedError:  # (no mean carrier measure: Beta, Dirichlet, Poisson)
        with pytest.raises(NotImplementedError):
            tg.distributions.ExponentialFamily.entropy(p[0])
        return
    got = tg.distributions.ExponentialFamily.entropy(p[0])
    _close(got, want, "generic entropy")
    _close(got, p[0].entropy(), "generic entropy against the closed form")


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_bregman_kl_and_its_gradient_are_torchs(name):
    from torch.distributions.kl import _kl_expfamily_expfamily

    out = []
    for lib, kl in ((tg, kl_expfamily_expfamily), (torch, _kl_expfamily_expfamily)):
        (p, q), tensors = _build(lib, name)
        value = kl(p, q)
        out.append((value, _grads(lib, value, tensors)))
    _close(out[0][0], out[1][0], "kl")
    # (p's parameters are detached, as PyTorch's: only q's receive a gradient)
    for a, b in zip(out[0][1], out[1][1]):
        assert (a is None) == (b is None)
        if b is not None:
            _close(a, b, "gradient of kl")
    (p, q), _ = _build(tg, name)
    if name not in ("Poisson", "Bernoulli"):  # (those closed forms treat probs 0 or 1 apart)
        np.testing.assert_allclose(out[0][0].detach().numpy(), tg.distributions.kl_divergence(p, q).detach().numpy(),
                                   rtol=1e-7, atol=1e-10)


def test_bregman_kl_refuses_two_families_and_compiles_to_eager():
    D = tg.distributions
    with pytest.raises(NotImplementedError, match="different exponential families"):
        kl_expfamily_expfamily(D.Poisson(tg.tensor(1.0)), D.Exponential(tg.tensor(1.0)))

    def fn(a, b):
        return kl_expfamily_expfamily(D.Gamma(a, b), D.Gamma(b, a)) + D.ExponentialFamily.entropy(D.Normal(a, b))

    a, b = tg.tensor(POS), tg.tensor(POS2)
    np.testing.assert_allclose(tg.compile(fn, fullgraph=True)(a, b).detach().numpy(), fn(a, b).detach().numpy(),
                               rtol=1e-12)
    with tg.no_grad():  # (the gradient is the value: taken under no_grad too)
        np.testing.assert_allclose(D.ExponentialFamily.entropy(D.Gamma(a, b)).numpy(),
                                   D.Gamma(a, b).entropy().numpy(), rtol=1e-10)


def _ambiguous_registry(lib):
    """Two equally specific registrations for (Derived, Derived), made in a fresh registry."""
    D = lib.distributions

    class Base(D.Normal):
        pass

    class Derived(Base):
        pass

    D.register_kl(Base, Derived)(lambda p, q: 1)
    D.register_kl(Derived, Base)(lambda p, q: 2)
    return D, Derived(0.0, 1.0)


def test_kl_divergence_warns_of_an_ambiguous_match_as_torch(monkeypatch):
    import torch.distributions.kl as torch_kl

    import tracegrad.distributions.kl as our_kl

    monkeypatch.setattr(torch_kl, "_KL_REGISTRY", dict(torch_kl._KL_REGISTRY))
    monkeypatch.setattr(torch_kl, "_KL_MEMOIZE", {})
    monkeypatch.setattr(our_kl, "_KL", dict(our_kl._KL))
    monkeypatch.setattr(our_kl, "_KL_MEMO", {})
    results = []
    for lib in (tg, torch):
        D, d = _ambiguous_registry(lib)
        with pytest.warns(RuntimeWarning) as record:
            value = D.kl_divergence(d, d)
        results.append((value, str(record[0].message)))
    assert results[0] == results[1] == (2, "Ambiguous kl_divergence(Derived, Derived). Please register_kl(Derived, Derived)")


def test_no_registered_pair_of_our_families_is_ambiguous():
    from tracegrad.distributions.kl import _dispatch_kl

    types = [t for t in vars(tg.distributions).values() if isinstance(t, type) and
             issubclass(t, tg.distributions.Distribution)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for p in types:
            for q in types:
                _dispatch_kl(p, q)
