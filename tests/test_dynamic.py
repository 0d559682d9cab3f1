"""tg.compile(fn, dynamic=True): one Program for every batch size, guards on the rest; values
and gradients against eager tracegrad and PyTorch, on the interpreter and the C backend."""
from __future__ import annotations

import logging

import numpy as np
import pytest

import tracegrad as tg

torch = pytest.importorskip("torch")

BACKENDS = ["interpreter", "c"]


def _mlp(x, W, b):
    h = (x @ W + b).tanh()
    return (h * h).mean(1), h.sum()


@pytest.mark.parametrize("backend", BACKENDS)
def test_values_and_grads_match_torch_for_several_batch_sizes(backend):
    rng = np.random.default_rng(0)
    Wn, bn = rng.standard_normal((5, 4)), rng.standard_normal(4)
    W, b = tg.tensor(Wn, requires_grad=True), tg.tensor(bn, requires_grad=True)
    f = tg.compile(_mlp, backend=backend, dynamic=True)
    for B in (8, 16, 33, 8, 1):
        xn = rng.standard_normal((B, 5))
        x = tg.tensor(xn, requires_grad=True)
        rows, total = f(x, W, b)
        (rows.sum() * 2 + total).backward()
        xt = torch.tensor(xn, requires_grad=True)
        Wt, bt = torch.tensor(Wn, requires_grad=True), torch.tensor(bn, requires_grad=True)
        h = (xt @ Wt + bt).tanh()
        rt, tt = (h * h).mean(1), h.sum()
        (rt.sum() * 2 + tt).backward()
        assert tuple(rows.shape) == (B,)
        np.testing.assert_allclose(rows.detach().numpy(), rt.detach().numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(total.item(), tt.item(), rtol=1e-10)
        np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(W.grad.numpy(), Wt.grad.numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(b.grad.numpy(), bt.grad.numpy(), rtol=1e-10, atol=1e-12)
        W.grad = b.grad = None
    assert len(f.programs) == 1
    prog = f.programs[0]
    if backend == "c":  # the first size's build, then one build whose batch size is a runtime value
        assert [type(p.executable).__name__ for p in prog.specializations] == \
            ["CExecutable", "DynamicCExecutable"]
    else:  # the interpreter captures each batch size
        assert len(prog.specializations) == 4  # batch 8, 16, 33, 1
    assert any("[B0, 5]" in g for g in prog.guards)


@pytest.mark.parametrize("backend", BACKENDS)
def test_batch_mean_equals_eager(backend):
    """mean over the batch folds 1/B: each batch size must divide by its own B."""
    f = tg.compile(lambda x: (x.mean(0), x.mean()), backend=backend, dynamic=True)
    for B in (2, 7, 3):
        x = tg.randn(B, 3)
        got, ref = f(x), (x.mean(0), x.mean())
        for g, r in zip(got, ref):
            np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=1e-6, atol=1e-7)
    assert len(f.programs) == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_training_step_with_dynamic_batch(backend):
    def make():
        tg.manual_seed(3)
        model = tg.nn.Sequential(tg.nn.Linear(4, 8), tg.nn.Tanh(), tg.nn.Linear(8, 2))
        opt = tg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

        def step(x, y):
            opt.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            return loss

        return model, step

    model_c, step_c = make()
    model_e, step_e = make()
    compiled = tg.compile(step_c, backend=backend, dynamic=True)
    rng = np.random.default_rng(1)
    for B in (8, 16, 33, 8, 16):
        xn, yn = rng.standard_normal((B, 4)), rng.standard_normal((B, 2))
        x, y = tg.tensor(xn, dtype=tg.float32), tg.tensor(yn, dtype=tg.float32)
        lc, le = compiled(x, y), step_e(x, y)
        np.testing.assert_allclose(lc.item(), le.item(), rtol=1e-5)
    for pc, pe in zip(model_c.parameters(), model_e.parameters()):
        np.testing.assert_allclose(pc.detach().numpy(), pe.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert len(compiled.programs) == 1


def test_non_batch_shape_change_retraces(monkeypatch, caplog):
    monkeypatch.setenv("TRACEGRAD_LOG", "guards")
    f = tg.compile(lambda x: x.sum(1), backend="interpreter", dynamic=True)
    with caplog.at_level(logging.INFO, logger="tracegrad"):
        f(tg.ones(4, 3))
        f(tg.ones(9, 3))
        assert len(f.programs) == 1
        out = f(tg.ones(4, 5))  # a non-leading dim changed: a new program
        np.testing.assert_allclose(out.numpy(), np.full(4, 5.0))
        assert len(f.programs) == 2
        f(tg.ones(4, 3, dtype=tg.float64))  # dtype changed
        f(tg.ones(4, 3, 2))  # rank changed
    assert len(f.programs) == 4
    assert "[B, 3]" in caplog.text


def test_static_compile_still_specialises_on_batch():
    f = tg.compile(lambda x: x * 2, backend="interpreter")
    f(tg.ones(2, 3))
    f(tg.ones(4, 3))
    assert len(f.programs) == 2


def test_dynamic_with_module_and_non_tensor_args():
    model = tg.nn.Linear(3, 2)
    cm = tg.compile(model, backend="interpreter", dynamic=True)
    for B in (2, 5):
        x = tg.randn(B, 3)
        np.testing.assert_allclose(cm(x).detach().numpy(), model(x).detach().numpy(), rtol=1e-6)
    assert len(cm.programs) == 1
    g = tg.compile(lambda x, k: x * k, backend="interpreter", dynamic=True)
    g(tg.ones(2), 3)
    g(tg.ones(5), 3)
    assert len(g.programs) == 1
    np.testing.assert_allclose(g(tg.ones(5), 4).numpy(), np.full(5, 4.0))  # Python value guarded
    assert len(g.programs) == 2
