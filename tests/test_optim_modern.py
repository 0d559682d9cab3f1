"""Adafactor and Muon against PyTorch step by step (Muon with PyTorch's Newton-Schulz run in
the parameter's dtype instead of bfloat16, which tracegrad has not; and against PyTorch's own
bfloat16 run within bfloat16's precision), their state and param groups, and their compiled
steps against eager ones (one program, never retraced)."""
import numpy as np
import pytest

import tracegrad as tg

torch = pytest.importorskip("torch")
import torch.optim._muon as torch_muon  # noqa: E402

from compile_oracle import run_both  # noqa: E402
from test_optim import run_both as run_both_libraries  # noqa: E402

ADAFACTOR_CASES = [dict(), dict(lr=0.05, beta2_decay=-0.5, d=1.5), dict(lr=0.01, weight_decay=0.1, eps=(1e-20, 1e-2)),
                   dict(maximize=True)]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kwargs", ADAFACTOR_CASES, ids=str)
def test_adafactor_matches_torch(kwargs, dtype):
    opt, ref, ours, theirs = run_both_libraries(lambda p: tg.optim.Adafactor(p, **kwargs),
                                      lambda p: torch.optim.Adafactor(p, foreach=False, **kwargs),
                                      steps=8, dtype=dtype, skip_first=True)
    for p, q in zip(ours, theirs):
        assert list(opt.state[p]) == list(ref.state[q])
        for k in opt.state[p]:
            np.testing.assert_allclose(opt.state[p][k].numpy(), ref.state[q][k].numpy(), rtol=2e-6, atol=1e-9)


def _exact_newton_schulz(grad, ns_coefficients, ns_steps, eps):
    """PyTorch's iteration, line for line, without its cast to bfloat16."""
    a, b, c = ns_coefficients
    x = grad.clone()
    if grad.size(0) > grad.size(1):
        x = x.T
    x.div_(x.norm().clamp(min=eps))
    for _ in range(ns_steps):
        gram = x @ x.T
        x = torch.addmm(x, torch.addmm(gram, gram, gram, beta=b, alpha=c), x, beta=a)
    return x.T if grad.size(0) > grad.size(1) else x


MUON_CASES = [dict(lr=0.02), dict(lr=0.02, nesterov=False, momentum=0.8, weight_decay=0.0),
              dict(lr=0.01, adjust_lr_fn="match_rms_adamw", ns_steps=3)]


def _muon_params(dtype):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(dtype) for s in [(5, 3), (3, 6)]]
    return [tg.nn.Parameter(tg.tensor(a)) for a in arrays], [torch.nn.Parameter(torch.tensor(a)) for a in arrays]


@pytest.mark.parametrize("kwargs", MUON_CASES, ids=str)
def test_muon_matches_torch(kwargs, monkeypatch):
    for exact, rtol in ((True, 2e-5), (False, 5e-2)):
        if exact:
            monkeypatch.setattr(torch_muon, "_zeropower_via_newtonschulz", _exact_newton_schulz)
        else:
            monkeypatch.undo()
        ours, theirs = _muon_params(np.float32)
        opt, ref = tg.optim.Muon(ours, **kwargs), torch.optim.Muon(theirs, **kwargs)
        rng = np.random.default_rng(1)
        for _ in range(5):
            for p, q in zip(ours, theirs):
                g = rng.standard_normal(tuple(p.shape)).astype(np.float32)
                p.grad, q.grad = tg.tensor(g), torch.tensor(g)
            opt.step()
            ref.step()
        for p, q in zip(ours, theirs):
            np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=rtol, atol=rtol)


def test_muon_refuses_non_matrices_and_bad_options():
    with pytest.raises(ValueError, match="only supports 2D parameters"):
        tg.optim.Muon([tg.nn.Parameter(tg.ones(3))])
    with pytest.raises(ValueError, match="not supported"):
        tg.optim.Muon([tg.nn.Parameter(tg.ones(2, 2))], adjust_lr_fn="other")


@pytest.mark.parametrize("name", ["Adafactor", "Muon"])
def test_param_groups_repr_and_state_dict_match_torch(name):
    ours = getattr(tg.optim, name)([tg.nn.Parameter(tg.ones(2, 3))])
    theirs = getattr(torch.optim, name)([torch.nn.Parameter(torch.ones(2, 3))])
    assert ours.state_dict()["param_groups"] == theirs.state_dict()["param_groups"]
    assert repr(ours) == repr(theirs)


def _training_step(make_optimizer):
    """A ``make`` for compile_oracle.run_both: a layer, the optimizer (its state allocated by
    one eager step), the step function, and the tensors to compare after every call."""
    def make():
        tg.manual_seed(0)
        model = tg.nn.Linear(4, 3, bias=False)
        opt = make_optimizer(model.parameters())
        x = tg.tensor(np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4))

        def step(x):
            opt.zero_grad()
            loss = model(x).square().mean()
            loss.backward()
            opt.step()
            return loss

        step(x)
        return step, lambda k: (x,), list(model.parameters()) + [v for st in opt.state.values() for v in st.values()]
    return make


@pytest.mark.parametrize("make", [lambda p: tg.optim.Adafactor(p, lr=0.05, weight_decay=0.01),
                                  lambda p: tg.optim.Muon(p, lr=0.05)], ids=["Adafactor", "Muon"])
def test_compiled_steps_equal_eager_and_never_retrace(make):
    compiled = run_both(_training_step(make), calls=6, backend="c", fullgraph=True)
    assert len(compiled.programs) == 1
