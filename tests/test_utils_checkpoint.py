"""tg.utils.checkpoint: gradients equal an uncheckpointed run and PyTorch's checkpoint; the
intermediate values are not kept; random draws are replayed; the reentrant form refuses
autograd.grad as PyTorch's does; compiled, it equals eager without a graph break."""
import gc
import weakref

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.utils.checkpoint import CheckpointError, checkpoint, checkpoint_sequential

from compile_oracle import run_both

rng = np.random.default_rng(0)
X = rng.standard_normal((4, 5)).astype(np.float32)


def _model():
    tg.manual_seed(0)
    return tg.nn.Sequential(tg.nn.Linear(5, 8), tg.nn.Tanh(), tg.nn.Dropout(0.3), tg.nn.Linear(8, 8),
                            tg.nn.GELU(), tg.nn.Linear(8, 2))


def _grads(model, use, reentrant, seed=1):
    model.zero_grad()
    x = tg.tensor(X, requires_grad=True)
    tg.manual_seed(seed)
    out = checkpoint(model, x, use_reentrant=reentrant) if use else model(x)
    out.square().sum().backward()
    return [p.grad.numpy().copy() for p in model.parameters()] + [x.grad.numpy().copy()]


@pytest.mark.parametrize("reentrant", [False, True])
def test_gradients_equal_an_uncheckpointed_run_with_dropout_replayed(reentrant):
    model = _model()
    for got, want in zip(_grads(model, True, reentrant), _grads(model, False, reentrant)):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_gradients_equal_pytorchs_checkpoint():
    torch = pytest.importorskip("torch")
    import torch.utils.checkpoint as tcp

    tg_model = tg.nn.Sequential(tg.nn.Linear(5, 8), tg.nn.Tanh(), tg.nn.Linear(8, 3))
    t_model = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    t_model.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in tg_model.state_dict().items()})
    for reentrant in (False, True):
        tg_model.zero_grad()
        t_model.zero_grad()
        a, b = tg.tensor(X, requires_grad=True), torch.tensor(X, requires_grad=True)
        checkpoint(tg_model, a, use_reentrant=reentrant).sum().backward()
        tcp.checkpoint(t_model, b, use_reentrant=reentrant).sum().backward()
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-5, atol=1e-6)
        for p, q in zip(tg_model.parameters(), t_model.parameters()):
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_intermediate_values_are_not_kept():
    kept = []

    def body(x, w):
        h = (x @ w).tanh()  # tanh saves its output: kept alive by the graph unless checkpointed
        kept.append(weakref.ref(h))
        return (h * h).sum()

    w = tg.randn(5, 5, requires_grad=True)
    plain = body(tg.tensor(X), w)
    gc.collect()
    assert kept[-1]() is not None
    ckpt = checkpoint(body, tg.tensor(X), w, use_reentrant=False)
    gc.collect()
    assert kept[-1]() is None
    ckpt.backward()
    g = w.grad.numpy().copy()
    w.grad = None
    plain.backward()
    np.testing.assert_allclose(g, w.grad.numpy(), rtol=1e-6)


def test_non_reentrant_works_with_autograd_grad_and_keywords():
    w = tg.randn(5, requires_grad=True)
    f = lambda x, scale=1.0: ((x * w).sin() * scale).sum()
    (g,) = tg.autograd.grad(checkpoint(f, tg.tensor(X), scale=3.0, use_reentrant=False), w)
    (want,) = tg.autograd.grad(f(tg.tensor(X), scale=3.0), w)
    np.testing.assert_allclose(g.numpy(), want.numpy(), rtol=1e-6)


def test_reentrant_refuses_autograd_grad_and_backward_inputs_as_pytorch():
    x = tg.tensor(X, requires_grad=True)
    out = checkpoint(lambda v: v.exp().sum(), x, use_reentrant=True)
    with pytest.raises(RuntimeError, match="incompatible with .grad"):
        tg.autograd.grad(out, x)
    out = checkpoint(lambda v: v.exp().sum(), x, use_reentrant=True)
    with pytest.raises(RuntimeError, match="incompatible with .grad"):
        out.backward(inputs=[x])
    with pytest.raises(ValueError, match="Unexpected keyword arguments"):
        checkpoint(lambda v, k: v, x, k=1, use_reentrant=True)
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed explicitly"):
        checkpoint(lambda v: v * 2, x)


def test_a_function_that_saves_differently_when_rerun_is_named():
    calls = []

    def moody(x):
        calls.append(1)
        return (x.exp() if len(calls) == 1 else x.sum(0).exp()).sum()

    out = checkpoint(moody, tg.tensor(X, requires_grad=True), use_reentrant=False)
    with pytest.raises(CheckpointError, match="differ from the original forward"):
        out.backward()


def test_checkpoint_sequential_equals_the_plain_sequential():
    model = tg.nn.Sequential(*[tg.nn.Linear(5, 5) if i % 2 == 0 else tg.nn.ReLU() for i in range(8)])
    x = tg.tensor(X, requires_grad=True)
    checkpoint_sequential(model, 3, x, use_reentrant=False).sum().backward()
    got = [p.grad.numpy().copy() for p in model.parameters()] + [x.grad.numpy().copy()]
    model.zero_grad()
    x.grad = None
    model(x).sum().backward()
    for g, p in zip(got, list(model.parameters()) + [x]):
        np.testing.assert_allclose(g, p.grad.numpy(), rtol=1e-6)


@pytest.mark.parametrize("reentrant", [False, True])
def test_compiled_training_step_with_checkpoint_equals_eager(reentrant):
    def make():
        tg.manual_seed(0)
        model = tg.nn.Sequential(tg.nn.Linear(5, 8), tg.nn.Tanh(), tg.nn.Linear(8, 2))
        opt = tg.optim.SGD(model.parameters(), lr=0.1)

        def step(x):
            opt.zero_grad()
            loss = checkpoint(model, x, use_reentrant=reentrant).square().mean()
            loss.backward()
            opt.step()
            return loss

        return step, lambda k: (tg.tensor(X * (k + 1), requires_grad=True),), list(model.parameters())

    run_both(make, calls=3, backend="c", fullgraph=True)
