"""tg.func against torch.func: the transforms' values, their compositions (grad of grad,
vmap of grad: per-sample gradients), functional_call and model ensembling, vmap's randomness
modes, errors, and a compiled vmap-of-grad against eager."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tracegrad as tg  # noqa: E402

RNG = np.random.default_rng(3)
X = RNG.standard_normal((4, 3))
W = RNG.standard_normal((3, 2))


def close(ours, theirs, rtol=1e-10):
    if isinstance(theirs, (tuple, list)):
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            close(a, b, rtol)
    elif isinstance(theirs, dict):
        assert sorted(ours) == sorted(theirs)
        for k in theirs:
            close(ours[k], theirs[k], rtol)
    else:
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=rtol, atol=1e-12)


def both(fn):
    """fn(lib, func-module, tensor-maker) for tracegrad and torch."""
    return (fn(tg, tg.func, lambda a: tg.tensor(a)), fn(torch, torch.func, lambda a: torch.tensor(a)))


def f(L, x, w):
    return (L.tanh(x @ w) ** 2).sum()


CASES = {
    "grad": lambda L, fn, t: fn.grad(lambda x, w: f(L, x, w))(t(X), t(W)),
    "grad-argnums": lambda L, fn, t: fn.grad(lambda x, w: f(L, x, w), argnums=(0, 1))(t(X), t(W)),
    "grad-dict": lambda L, fn, t: fn.grad(lambda p: f(L, p["x"], p["w"][0]))({"x": t(X), "w": (t(W),)}),
    "grad-aux": lambda L, fn, t: fn.grad(lambda x: (f(L, x, t(W)), x.sum()), has_aux=True)(t(X)),
    "grad_and_value": lambda L, fn, t: fn.grad_and_value(lambda w: f(L, t(X), w))(t(W)),
    "grad-of-grad": lambda L, fn, t: fn.grad(lambda x: fn.grad(lambda y: (y.sin() * y).sum())(x).sum())(t(X)),
    "vjp": lambda L, fn, t: (lambda r: (r[0], r[1](t(X @ W)[:, :1] * 0 + t(X[:, :2]))))(
        fn.vjp(lambda x, w: L.tanh(x @ w), t(X), t(W))),
    "jvp": lambda L, fn, t: fn.jvp(lambda x: L.sin(x) * x, (t(X),), (t(X * 0.5),)),
    "jacrev": lambda L, fn, t: fn.jacrev(lambda x, w: L.tanh(x @ w), argnums=(0, 1))(t(X[:2]), t(W)),
    "jacfwd": lambda L, fn, t: fn.jacfwd(lambda x, w: L.tanh(x @ w), argnums=1)(t(X[:2]), t(W)),
    "hessian": lambda L, fn, t: fn.hessian(lambda x: f(L, x, t(W)))(t(X[:2])),
    "vmap": lambda L, fn, t: fn.vmap(lambda x, w: x @ w, in_dims=(0, None))(t(X), t(W)),
    "vmap-dims": lambda L, fn, t: fn.vmap(lambda x, y: (x * y, x.sum()), in_dims=(1, 0), out_dims=(1, 0))(
        t(X), t(X[0])),
    "vmap-nested": lambda L, fn, t: fn.vmap(fn.vmap(lambda a, b: a * b, in_dims=(0, None)))(t(X), t(X)),
    "vmap-grad": lambda L, fn, t: fn.vmap(fn.grad(lambda x, w: f(L, x, w)), in_dims=(0, None))(t(X), t(W)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_transform_matches_torch(name):
    ours, theirs = both(CASES[name])
    close(ours, theirs)


def _model(lib):
    lib.manual_seed(0)
    model = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Tanh(), lib.nn.Linear(4, 2)).double()
    with lib.no_grad():
        for k, p in enumerate(model.parameters()):
            p.copy_(lib.tensor(np.linspace(-1, 1, p.numel()).reshape(tuple(p.shape)) * (k + 1)))
    return model


def test_per_sample_gradients_match_torch():
    y = RNG.integers(0, 2, 4)
    grads = []
    for lib, fn in ((tg, tg.func), (torch, torch.func)):
        model = _model(lib)
        params = {k: v.detach() for k, v in model.named_parameters()}

        def loss(p, x, target):
            out = fn.functional_call(model, p, (x.unsqueeze(0),))
            return lib.nn.functional.cross_entropy(out, target.unsqueeze(0))

        grads.append(fn.vmap(fn.grad(loss), in_dims=(None, 0, 0))(params, lib.tensor(X), lib.tensor(y)))
        assert all(p.grad is None for p in model.parameters())
    close(grads[0], grads[1])


def test_functional_call_restores_the_module_and_ties_weights():
    model = _model(tg)
    before = {k: v.detach().clone() for k, v in model.state_dict().items()}
    zeros = {k: tg.zeros_like(v) for k, v in model.named_parameters()}
    out = tg.func.functional_call(model, zeros, tg.tensor(X))
    assert float(out.abs().sum()) == 0.0
    for k, v in model.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), before[k].numpy())
    assert isinstance(model[0].weight, tg.nn.Parameter)
    with pytest.raises(RuntimeError, match="missing keys"):
        tg.func.functional_call(model, {"0.weight": zeros["0.weight"]}, tg.tensor(X), strict=True)
    with pytest.raises(ValueError, match="multiple dictionaries"):
        tg.func.functional_call(model, ({"0.bias": zeros["0.bias"]}, {"0.bias": zeros["0.bias"]}), tg.tensor(X))
    tied = tg.nn.Sequential(tg.nn.Linear(2, 2, bias=False), tg.nn.Linear(2, 2, bias=False))
    tied[1].weight = tied[0].weight
    out = tg.func.functional_call(tied, {"0.weight": tg.eye(2) * 2}, tg.ones(1, 2))
    np.testing.assert_array_equal(out.numpy(), [[4.0, 4.0]])  # both layers took the replacement


def test_ensemble_with_stacked_states_matches_torch():
    outs = []
    for lib, fn in ((tg, tg.func), (torch, torch.func)):
        models = [_model(lib) for _ in range(3)]
        with lib.no_grad():
            for k, m in enumerate(models):
                m[0].bias.add_(k)
        params, buffers = fn.stack_module_state(models)
        base = models[0]
        outs.append(fn.vmap(lambda p, b, x: fn.functional_call(base, (p, b), (x,)), in_dims=(0, 0, None))(
            params, buffers, lib.tensor(X)))
    close(outs[0], outs[1])


def test_vmap_randomness_modes():
    drop = tg.nn.Dropout(0.5)
    x = tg.ones(4, 50)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        tg.func.vmap(drop)(x)
    same = tg.func.vmap(drop, randomness="same")(x).numpy()
    assert all((row == same[0]).all() for row in same)
    different = tg.func.vmap(drop, randomness="different")(x).numpy()
    assert not all((row == different[0]).all() for row in different)


def test_bad_arguments_are_named():
    with pytest.raises(RuntimeError, match="Expected f\\(\\*args\\) to return a scalar"):
        tg.func.grad(lambda x: x * 2)(tg.ones(3))
    with pytest.raises(ValueError, match="same size in the mapped dimension"):
        tg.func.vmap(lambda a, b: a + b)(tg.ones(2, 3), tg.ones(3, 3))
    with pytest.raises(ValueError, match="at least one input must be"):
        tg.func.vmap(lambda a: a, in_dims=None)(tg.ones(2))
    with pytest.raises(RuntimeError, match="argnums"):
        tg.func.grad(lambda x: x.sum(), argnums=2)(tg.ones(2))


def test_compiled_per_sample_gradients_equal_eager():
    model = _model(tg)
    params = {k: v.detach() for k, v in model.named_parameters()}

    def per_sample(p, x):
        def loss(q, xi):
            return tg.func.functional_call(model, q, (xi,)).square().sum()
        return tg.func.vmap(tg.func.grad(loss), in_dims=(None, 0))(p, x)

    eager = per_sample(params, tg.tensor(X))
    compiled = tg.compile(per_sample, backend="c", fullgraph=True)(params, tg.tensor(X))
    for k in eager:
        np.testing.assert_allclose(compiled[k].numpy(), eager[k].numpy(), rtol=1e-10)


def test_linearize_functionalize_and_batch_norm_replacement_like_torch():
    x = np.array([0.3, -1.2, 2.0])
    out, jvp_fn = tg.func.linearize(lambda v: (v.sin() * v).sum(), tg.tensor(x))
    t_out, t_jvp = torch.func.linearize(lambda v: (v.sin() * v).sum(), torch.tensor(x))
    np.testing.assert_allclose(out.item(), t_out.item(), rtol=1e-12)
    np.testing.assert_allclose(jvp_fn(tg.ones(3, dtype=tg.float64)).item(), t_jvp(torch.ones(3, dtype=torch.float64)).item(),
                               rtol=1e-12)

    def mutating(a):
        a.add_(1)
        return a * 2

    a, b = tg.tensor(x), torch.tensor(x)
    np.testing.assert_allclose(tg.func.functionalize(mutating)(a).numpy(), torch.func.functionalize(mutating)(b).numpy())
    np.testing.assert_allclose(a.numpy(), b.numpy())
    ours = tg.func.replace_all_batch_norm_modules_(tg.nn.Sequential(tg.nn.Linear(2, 2), tg.nn.BatchNorm1d(2)))
    theirs = torch.func.replace_all_batch_norm_modules_(torch.nn.Sequential(torch.nn.Linear(2, 2),
                                                                            torch.nn.BatchNorm1d(2)))
    assert list(ours.state_dict()) == list(theirs.state_dict()) and not ours[1].track_running_stats
    per_sample = tg.func.vmap(ours, in_dims=0)(tg.randn(3, 4, 2))
    assert per_sample.shape == (3, 4, 2)


def test_grad_of_a_value_independent_of_the_input_is_zero_like_torch():
    for f in (lambda x: tg.tensor(1.0), lambda x: (x * 0).sum(), lambda x: tg.special.bessel_j0(x).sum()):
        np.testing.assert_array_equal(tg.func.grad(f)(tg.ones(2)).numpy(), [0.0, 0.0])
