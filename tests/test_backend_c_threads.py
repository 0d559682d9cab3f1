"""Compiled functions called from several Python threads at once (an inference server): the
native code runs without the GIL, so each executable lets one call in at a time; every call
must get its own inputs' results."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import tracegrad as tg


def _results(f, x):
    return [o.detach().numpy().copy() for o in f(*x)]


def _hammer(f, inputs, calls=150, threads=4):
    """Call ``f`` from ``threads`` threads at once, each on its own inputs; every result of
    every call must equal that input's result computed alone."""
    want = [_results(f, x) for x in inputs]
    wrong = []

    def worker(k):
        for _ in range(calls):
            got = _results(f, inputs[k % len(inputs)])
            if not all(np.allclose(g, w, rtol=1e-6, atol=1e-6) for g, w in zip(got, want[k % len(inputs)])):
                wrong.append(k)

    ts = [threading.Thread(target=worker, args=(k,)) for k in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not wrong, f"{len(wrong)} calls got another thread's results"


@pytest.mark.parametrize("options", [{}, {"batch_split": True}])
def test_concurrent_calls_get_their_own_results(options):
    tg.manual_seed(0)
    w = tg.randn(128, 64, requires_grad=True)

    def f(x):
        y = (x @ w).tanh()
        return y.detach().sum(dim=1), tg.autograd.grad(y.sum(), [w])[0]

    cf = tg.compile(f, options=options)
    _hammer(cf, [(tg.randn(32, 128),) for _ in range(4)])
    assert "tg_half" in cf.programs[0].executable.source or not options


def test_concurrent_calls_at_different_batch_sizes_with_dynamic():
    """One runtime-batch build, whose workspace and output shapes follow each call's batch."""
    tg.manual_seed(0)
    w = tg.randn(16, 8)
    cf = tg.compile(lambda x: ((x @ w).relu() * 2.0,), dynamic=True)
    inputs = [(tg.randn(b, 16),) for b in (3, 5, 8, 13)]
    for x in inputs:
        cf(*x)
    _hammer(cf, inputs)
    assert len(cf.programs) <= 2


def test_concurrent_forward_and_backward_programs():
    """Outputs that require grad: each thread's backward runs on its own call's saved values."""
    tg.manual_seed(0)
    w = tg.randn(64, 32, requires_grad=True)
    cf = tg.compile(lambda x: (x @ w).tanh().sum(dim=1))

    def f(x):
        out = cf(x)
        return out.detach(), tg.autograd.grad(out.sum(), [w])[0]

    _hammer(f, [(tg.randn(16, 64),) for _ in range(4)], calls=100)
    assert len(cf.programs) == 1 and cf.programs[0].backward_executable is not None


@pytest.mark.parametrize("dynamic", [False, True])
def test_a_call_into_a_busy_executable_runs_on_a_twin(dynamic):
    """While one thread's call runs (its lock held), another thread's call runs at once on a
    twin with its own workspace and buffers, kept for later; results and in-place updates as
    alone."""
    tg.manual_seed(0)
    w = tg.randn(8, 4, requires_grad=True)
    opt = tg.optim.SGD([w], lr=0.1)

    def step(x):
        opt.zero_grad()
        loss = (x @ w).tanh().square().sum()
        loss.backward()
        opt.step()
        return loss

    cf = tg.compile(step, dynamic=dynamic)
    cf(tg.randn(6, 8))
    if dynamic:
        cf(tg.randn(5, 8))  # (the second batch size brings the runtime-batch build)
        assert getattr(cf.programs[-1], "runtime_batch", False)
    x = tg.randn(7, 8) if dynamic else tg.randn(6, 8)
    exe = cf.programs[-1].executable
    w_before = w.detach().numpy().copy()
    ref = tg.tensor(w_before, requires_grad=True)
    want = (x @ ref).tanh().square().sum()
    want.backward()
    busy = threading.Event()
    release = threading.Event()

    def hold():
        with exe._lock:
            busy.set()
            release.wait(30)

    t = threading.Thread(target=hold)
    t.start()
    busy.wait(30)
    try:
        got = cf(x)
    finally:
        release.set()
        t.join()
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-6)
    np.testing.assert_allclose(w.detach().numpy(), w_before - 0.1 * ref.grad.numpy(), rtol=1e-6, atol=1e-7)
    assert len(exe._twins) == 1
