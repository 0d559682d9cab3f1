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


# ----------------------------------------------------------------------------- parametrizations
X = RNG.standard_normal((5, 4))


def _pair(make):
    """The same parametrized module in both libraries, ours loaded from torch's state dict."""
    theirs = make(torch)
    ours = make(tg)
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    return ours, theirs


def _compare_steps(ours, theirs, steps=3, rtol=1e-10):
    for _ in range(steps):
        outs = []
        for lib, m in ((tg, ours), (torch, theirs)):
            x = lib.tensor(X, requires_grad=True)
            y = m(x)
            y.square().sum().backward()
            outs.append([y.detach().numpy(), x.grad.numpy()] + [p.grad.numpy() for p in m.parameters()])
            m.zero_grad()
        for a, b in zip(*outs):
            np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-12)


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_parametrization_matches_torch(dim):
    ours, theirs = _pair(lambda lib: lib.nn.utils.parametrizations.weight_norm(
        lib.nn.Linear(4, 3).double(), dim=dim))
    assert type(ours).__name__ == type(theirs).__name__ == "ParametrizedLinear"
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
    assert repr(ours) == repr(theirs)
    _compare_steps(ours, theirs)


@pytest.mark.parametrize("training", [True, False])
def test_spectral_norm_matches_torch(training):
    ours, theirs = _pair(lambda lib: lib.nn.utils.parametrizations.spectral_norm(
        lib.nn.Linear(4, 6).double(), n_power_iterations=2))
    ours.train(training), theirs.train(training)
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
    _compare_steps(ours, theirs)
    np.testing.assert_allclose(ours.parametrizations.weight[0]._u.numpy(),
                               theirs.parametrizations.weight[0]._u.numpy(), rtol=1e-10)


def test_legacy_weight_norm_matches_torch_and_its_state_loads_into_the_new_one():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        ours, theirs = _pair(lambda lib: lib.nn.utils.weight_norm(lib.nn.Linear(4, 3).double()))
    assert sorted(ours.state_dict()) == ["bias", "weight_g", "weight_v"]
    _compare_steps(ours, theirs)
    newer = tg.nn.utils.parametrizations.weight_norm(tg.nn.Linear(4, 3).double())
    newer.load_state_dict(ours.state_dict())  # (weight_g/weight_v renamed by a load pre-hook)
    np.testing.assert_allclose(newer.weight.detach().numpy(), ours.weight.detach().numpy(), rtol=1e-12)
    tg.nn.utils.remove_weight_norm(ours)
    assert sorted(ours.state_dict()) == ["bias", "weight"] and isinstance(ours.weight, tg.nn.Parameter)


class _Symmetric:
    def __init__(self, lib):
        class Symmetric(lib.nn.Module):
            def forward(self, x):
                return x.triu() + x.triu(1).mT

            def right_inverse(self, a):
                return a.triu()
        self.module = Symmetric()


def test_custom_parametrization_assignment_caching_and_removal():
    P = tg.nn.utils.parametrize
    layer = tg.nn.Linear(3, 3).double()
    weight = layer.weight
    P.register_parametrization(layer, "weight", _Symmetric(tg).module)
    assert layer.parametrizations.weight.original is weight  # (an optimizer holding it still works)
    assert P.is_parametrized(layer) and P.is_parametrized(layer, "weight") and not P.is_parametrized(layer, "bias")
    target = tg.tensor(np.arange(9.0).reshape(3, 3))
    layer.weight = target  # (through right_inverse: the upper triangle is stored)
    np.testing.assert_array_equal(layer.weight.detach().numpy(), [[0, 1, 2], [1, 4, 5], [2, 5, 8]])
    with P.cached():
        assert layer.weight is layer.weight
    assert layer.weight is not layer.weight
    theirs = torch.nn.Linear(3, 3).double()
    torch.nn.utils.parametrize.register_parametrization(theirs, "weight", _Symmetric(torch).module)
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in layer.state_dict().items()})
    np.testing.assert_array_equal(theirs.weight.detach().numpy(), layer.weight.detach().numpy())
    P.remove_parametrizations(layer, "weight")
    assert type(layer) is tg.nn.Linear and sorted(layer.state_dict()) == ["bias", "weight"]
    np.testing.assert_array_equal(layer.weight.detach().numpy(), theirs.weight.detach().numpy())
    with pytest.raises(ValueError, match="may not change the shape"):
        P.register_parametrization(layer, "weight", tg.nn.Flatten(0))
    with pytest.raises(ValueError, match="does not have a parametrization"):
        P.remove_parametrizations(layer, "bias")


def test_parametrized_training_step_compiles_to_eager_values():
    results = []
    for compiled in (False, True):
        tg.manual_seed(0)
        model = tg.nn.Sequential(tg.nn.utils.parametrizations.weight_norm(tg.nn.Linear(4, 8)), tg.nn.Tanh(),
                                 tg.nn.utils.parametrizations.spectral_norm(tg.nn.Linear(8, 2)))
        opt = tg.optim.SGD(model.parameters(), lr=0.1)
        x = tg.tensor(X.astype(np.float32))

        def step(x):
            opt.zero_grad()
            loss = model(x).square().mean()
            loss.backward()
            opt.step()
            return loss

        run = tg.compile(step, backend="c", fullgraph=True) if compiled else step
        results.append([run(x).item() for _ in range(4)] + model[2].parametrizations.weight[0]._u.tolist())
    np.testing.assert_allclose(results[1], results[0], rtol=1e-5)
