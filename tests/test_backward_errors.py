"""An error that belongs to backward surfaces at eager's moment: a compiled forward whose
backward cannot be built (a derivative PyTorch does not define, a custom Function whose backward
raises) succeeds, and ``.backward()`` raises eager's exception with eager's message, only when
that gradient is needed. A backward traced inside the compiled function raises at the call, as
eager raises it at that line, and writes nothing."""
from __future__ import annotations

import numpy as np
import pytest

import tracegrad as tg

BACKENDS = ("interpreter", "c")
MESSAGE = "the derivative for 'igamma: input' is not implemented."


def _inputs():
    a = tg.tensor([1.5, 2.0, 3.0], requires_grad=True)
    x = tg.tensor([0.5, 1.0, 4.0], requires_grad=True)
    return a, x


def _gammainc(a, x):
    return (tg.special.gammainc(a, x) * x).sum()


def _error(fn):
    try:
        fn()
    except (NotImplementedError, RuntimeError) as e:
        return type(e), str(e)
    return None


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("backend", BACKENDS)
def test_missing_derivative_raises_at_backward(backend, dynamic):
    a, x = _inputs()
    want = _error(lambda: _gammainc(a, x).backward())
    assert want == (NotImplementedError, MESSAGE)
    f = tg.compile(_gammainc, backend=backend, dynamic=dynamic)
    a, x = _inputs()
    y = f(a, x)  # the forward succeeds, as eager's does
    np.testing.assert_allclose(y.item(), _gammainc(a, x).item(), rtol=1e-5)
    assert y.requires_grad
    assert _error(y.backward) == want
    assert a.grad is None and x.grad is None


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_gradient_nobody_needs_raises_nothing(backend):
    """Only x's gradient asked for (autograd.grad), or ``a`` not requiring grad: no error, and
    the gradient is eager's."""
    f = tg.compile(_gammainc, backend=backend)
    a, x = _inputs()
    want, = tg.autograd.grad(_gammainc(a, x), [x])
    got, = tg.autograd.grad(f(a, x), [x])
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5)
    a = a.detach()
    f(a, x).backward()
    np.testing.assert_allclose(x.grad.numpy(), want.numpy(), rtol=1e-5)


class _NoBackward(tg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        raise RuntimeError("_NoBackward has no backward")


@pytest.mark.parametrize("backend", BACKENDS)
def test_custom_function_backward_error_waits_for_backward(backend):
    def fn(x):
        return _NoBackward.apply(x).sum()

    x = tg.ones(3, requires_grad=True)
    want = _error(lambda: fn(x).backward())
    assert want == (RuntimeError, "_NoBackward has no backward")
    y = tg.compile(fn, backend=backend)(x)
    assert y.item() == 6.0
    assert _error(y.backward) == want


@pytest.mark.parametrize("backend", BACKENDS)
def test_backward_inside_the_step_raises_at_the_call_and_writes_nothing(backend):
    w = tg.tensor([1.5, 2.0], requires_grad=True)
    opt = tg.optim.SGD([w], lr=0.1)

    def step(x):
        loss = tg.special.gammainc(w, x).sum()
        loss.backward()
        opt.step()
        return loss

    assert _error(lambda: step(tg.ones(2))) == (NotImplementedError, MESSAGE)
    before = w.detach().numpy().copy()
    f = tg.compile(step, backend=backend)
    for _ in range(2):
        assert _error(lambda: f(tg.ones(2))) == (NotImplementedError, MESSAGE)
        np.testing.assert_array_equal(w.detach().numpy(), before)
        assert w.grad is None


def test_split_export_refuses_a_backward_that_cannot_be_built():
    a, x = _inputs()
    with pytest.raises(tg.compiler.CompileError, match="igamma: input"):
        tg.export(_gammainc, a, x, name="gammainc_step", split=True)
