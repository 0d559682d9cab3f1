"""Compiled functions called from several Python threads at once (an inference server): the
native code runs without the GIL, so each executable lets one call in at a time; every call
must get its own inputs' results."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import tracegrad as tg


def _hammer(f, inputs, calls=150, threads=4):
    want = [f(*x)[0].detach().numpy().copy() for x in inputs]
    wrong = []

    def worker(k):
        for _ in range(calls):
            got = f(*inputs[k % len(inputs)])[0].detach().numpy()
            if not np.allclose(got, want[k % len(inputs)], rtol=1e-6, atol=1e-6):
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
