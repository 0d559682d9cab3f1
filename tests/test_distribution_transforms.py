"""tg.distributions.transforms, biject_to / transform_to and TransformedDistribution against
PyTorch's: forward and inverse values, log_abs_det_jacobian and their gradients, domains,
codomains, shapes, signs, caching and equality."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tracegrad as tg  # noqa: E402

RNG = np.random.default_rng(11)
X = RNG.standard_normal((2, 3))
SQUARE = RNG.standard_normal((2, 3, 3))

# name: (build(transforms module, lib), input array)
TRANSFORMS = {
    "Exp": (lambda T, lib: T.ExpTransform(), X),
    "Power": (lambda T, lib: T.PowerTransform(lib.tensor([0.5, 2.0, -1.5])), np.abs(X) + 0.1),
    "Sigmoid": (lambda T, lib: T.SigmoidTransform(), X),
    "Softplus": (lambda T, lib: T.SoftplusTransform(), X),
    "Tanh": (lambda T, lib: T.TanhTransform(), X),
    "Abs": (lambda T, lib: T.AbsTransform(), X),
    "Affine": (lambda T, lib: T.AffineTransform(lib.tensor([1.0, -2.0, 0.5]), lib.tensor([2.0, -0.5, 3.0])), X),
    "Affine-number": (lambda T, lib: T.AffineTransform(1.0, -3.0), X),
    "Affine-event": (lambda T, lib: T.AffineTransform(0.5, lib.tensor([1.0, 2.0, -3.0]), event_dim=1), X),
    "Softmax": (lambda T, lib: T.SoftmaxTransform(), X),
    "StickBreaking": (lambda T, lib: T.StickBreakingTransform(), X),
    "LowerCholesky": (lambda T, lib: T.LowerCholeskyTransform(), SQUARE),
    "PositiveDefinite": (lambda T, lib: T.PositiveDefiniteTransform(), SQUARE),
    "CorrCholesky": (lambda T, lib: T.CorrCholeskyTransform(), X),
    "Compose": (lambda T, lib: T.ComposeTransform([T.AffineTransform(0.5, 2.0), T.ExpTransform(),
                                                   T.AffineTransform(-1.0, 3.0)]), X),
    "Compose-vector": (lambda T, lib: T.ComposeTransform([T.ExpTransform(), T.StickBreakingTransform()]), X),
    "Independent": (lambda T, lib: T.IndependentTransform(T.SigmoidTransform(), 1), X),
    "Reshape": (lambda T, lib: T.ReshapeTransform((3,), (3, 1)), X),
    "Cat": (lambda T, lib: T.CatTransform([T.ExpTransform(), T.SigmoidTransform()], dim=1, lengths=[2, 1]), X),
    "Stack": (lambda T, lib: T.StackTransform([T.ExpTransform(), T.TanhTransform(), T.SigmoidTransform()], dim=1), X),
    "Inverse": (lambda T, lib: T.SigmoidTransform().inv, RNG.uniform(0.1, 0.9, (2, 3))),
    "CumulativeDistribution": (lambda T, lib: T.CumulativeDistributionTransform(
        lib.distributions.Normal(lib.tensor(0.5), lib.tensor(2.0))), X),
}
NOT_INVERTIBLE = {"Abs", "Softmax", "LowerCholesky", "PositiveDefinite"}  # (inv is a right inverse only)
NO_JACOBIAN = {"Abs", "Softmax", "LowerCholesky", "PositiveDefinite"}  # (none in torch either)


def _close(a, b, what, rtol=1e-10):
    np.testing.assert_allclose(np.asarray(a.detach().numpy()), np.asarray(b.detach().numpy()),
                               rtol=rtol, atol=1e-12, err_msg=what)


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_transform_matches_torch(name):
    build, x = TRANSFORMS[name]
    runs = []
    for lib, T in ((tg, tg.distributions.transforms), (torch, torch.distributions.transforms)):
        t = build(T, lib)
        xt = lib.tensor(x, requires_grad=True)
        y = t(xt)
        out = {"y": y, "x_back": t.inv(y)}
        if name not in NO_JACOBIAN:
            out["ladj"] = t.log_abs_det_jacobian(xt, y)
        outputs = [v for v in out.values()]
        cot = [lib.tensor(np.random.default_rng(2).standard_normal(tuple(v.shape))) for v in outputs]
        loss = sum((v * c).sum() for v, c in zip(outputs, cot))
        out["grad"] = lib.autograd.grad(loss, xt)[0]
        shapes = (tuple(t.forward_shape(tuple(x.shape))), tuple(t.inverse_shape(tuple(y.shape))))
        runs.append((t, out, shapes))
    (ours, got, got_shapes), (theirs, want, want_shapes) = runs
    for key in want:
        # (gradients through x ** e ** (1 / e) round differently in the two libraries, ~1e-8)
        _close(got[key], want[key], f"{name} {key}", rtol=1e-7 if key == "grad" else 1e-10)
    if name not in NOT_INVERTIBLE:
        _close(got["x_back"], tg.tensor(x), f"{name} inverse", rtol=1e-7)  # (Power: a float32 exponent)
    assert got_shapes == want_shapes
    assert repr(ours.domain) == repr(theirs.domain) and repr(ours.codomain) == repr(theirs.codomain)
    assert ours.bijective == theirs.bijective
    assert (ours.domain.event_dim, ours.codomain.event_dim) == (theirs.domain.event_dim, theirs.codomain.event_dim)


def test_sign_equality_cache_and_repr_are_torchs():
    T, TT = tg.distributions.transforms, torch.distributions.transforms
    assert T.ExpTransform() == T.ExpTransform() and T.ExpTransform() != T.SigmoidTransform()
    assert T.AffineTransform(1.0, 2.0) == T.AffineTransform(1.0, 2.0) != T.AffineTransform(1.0, 3.0)
    assert T.AffineTransform(0.0, -2.0).sign == -1 and T.ExpTransform().inv.sign == 1
    assert T.ComposeTransform([T.ExpTransform(), T.AffineTransform(0.0, -1.0)]).sign == -1
    assert repr(T.ExpTransform().inv) == repr(TT.ExpTransform().inv)
    assert repr(T.ComposeTransform([T.ExpTransform(), T.TanhTransform()])) == \
        repr(TT.ComposeTransform([TT.ExpTransform(), TT.TanhTransform()]))
    t = T.TanhTransform(cache_size=1)
    x = tg.tensor([30.0])  # (tanh rounds to 1: only the cache gives x back)
    assert t.inv(t(x)) is x
    assert T.identity_transform(x) is x
    with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
        T.ExpTransform(cache_size=2)
    with pytest.raises(ValueError, match="different numbers of elements"):
        T.ReshapeTransform((2,), (3,))


CONSTRAINTS = {
    "real": lambda C: C.real, "positive": lambda C: C.positive, "nonnegative": lambda C: C.nonnegative,
    "greater_than": lambda C: C.greater_than(1.5), "less_than": lambda C: C.less_than(-1.0),
    "interval": lambda C: C.interval(-2.0, 3.0), "unit_interval": lambda C: C.unit_interval,
    "half_open_interval": lambda C: C.half_open_interval(0.0, 2.0), "simplex": lambda C: C.simplex,
    "real_vector": lambda C: C.real_vector, "independent": lambda C: C.independent(C.positive, 1),
    "lower_cholesky": lambda C: C.lower_cholesky, "positive_definite": lambda C: C.positive_definite,
    "corr_cholesky": lambda C: C.corr_cholesky,
    "cat": lambda C: C.cat([C.positive, C.real], 1, [2, 1]),
}


@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
@pytest.mark.parametrize("name", sorted(CONSTRAINTS))
def test_biject_to_and_transform_to_match_torch(registry, name):
    x = SQUARE if name in ("lower_cholesky", "positive_definite") else X
    results = []
    for lib in (tg, torch):
        constraint = CONSTRAINTS[name](lib.distributions.constraints)
        try:
            t = getattr(lib.distributions, registry)(constraint)
        except NotImplementedError:
            results.append(None)
            continue
        y = t(lib.tensor(x))
        assert bool(constraint.check(y).all()), f"{registry}({name}) leaves the constraint"
        results.append((y, t.inv(y), repr(t)))
    if results[1] is None:
        assert results[0] is None, f"torch has no {registry}({name}); neither should we"
        return
    (y, back, text), (want_y, want_back, want_text) = results
    _close(y, want_y, name)
    _close(back, want_back, name, rtol=1e-8)
    assert text.replace("tracegrad", "torch") == want_text


TRANSFORMED = {
    "affine-tanh": (lambda D, T, lib: D.TransformedDistribution(
        D.Normal(lib.tensor(X), lib.tensor(np.abs(X) + 0.5)), [T.AffineTransform(0.5, 2.0), T.TanhTransform()]),
        np.tanh(RNG.standard_normal((4, 2, 3)))),
    "stick-breaking": (lambda D, T, lib: D.TransformedDistribution(
        D.Normal(lib.tensor(X), lib.tensor(np.abs(X) + 0.5)), T.StickBreakingTransform()),
        RNG.dirichlet(np.ones(4), (2,))),
    "broadcast-base": (lambda D, T, lib: D.TransformedDistribution(
        D.Normal(lib.tensor(0.0), lib.tensor(1.0)), T.AffineTransform(lib.tensor(X), 2.0)),
        RNG.standard_normal((2, 3))),
    "decreasing": (lambda D, T, lib: D.TransformedDistribution(
        D.Exponential(lib.tensor(np.abs(X) + 0.5)), [T.AffineTransform(1.0, -2.0)]), -np.abs(X)),
}


@pytest.mark.parametrize("name", sorted(TRANSFORMED))
def test_transformed_distribution_matches_torch(name):
    build, value = TRANSFORMED[name]
    out = []
    for lib in (tg, torch):
        d = build(lib.distributions, lib.distributions.transforms, lib)
        v = lib.tensor(value)
        lp = d.log_prob(v)
        row = [tuple(d.batch_shape), tuple(d.event_shape), tuple(d.sample((5,)).shape), lp]
        if not d.event_shape:
            row += [d.cdf(v), d.icdf(lib.tensor(np.full(tuple(d.batch_shape), 0.3)))]
        out.append(row)
    assert out[0][:3] == out[1][:3]
    for a, b in zip(out[0][3:], out[1][3:]):
        _close(a, b, name)
