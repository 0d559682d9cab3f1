"""Products over batches in the C backend (issue 26): a batched left operand times a matrix is
one GEMM over the flattened rows, forward and both gradients; a batch of small products
switches BLAS's thread count once, not around every product. Values equal eager's."""
from __future__ import annotations

import numpy as np
import pytest

import tracegrad as tg

torch = pytest.importorskip("torch")  # (the oracle; the suite runs without it, skipping these)


def _gemm_calls(fn):
    source = fn.programs[0].executable.source
    return [ln.strip() for ln in source.split("\n") if ln.strip().startswith("tg_gemm_")]


def _linear_step(x, w, b):
    y = tg.nn.functional.linear(x, w, b).tanh()
    return tg.autograd.grad(y.square().sum(), [x, w, b])


def _torch_linear_grads(x, w, b):
    x, w, b = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    y = torch.nn.functional.linear(x, w, b).tanh()
    return [t.numpy() for t in torch.autograd.grad(y.square().sum(), [x, w, b])]


@pytest.mark.parametrize("transposed_input", [False, True])
def test_linear_on_a_batch_is_one_gemm_each_way(transposed_input):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 6, 20)).astype(np.float32)
    w, b = rng.standard_normal((16, 20)).astype(np.float32), rng.standard_normal(16).astype(np.float32)
    # transposed: the step reads x through a transposed view of its argument, so that the
    # rows are not one stride apart: one copy, then one product
    arg = np.ascontiguousarray(x.transpose(0, 2, 1)) if transposed_input else x

    def step(x, w, b):
        return _linear_step(x.transpose(1, 2) if transposed_input else x, w, b)

    args = [tg.tensor(arg, requires_grad=True), tg.tensor(w, requires_grad=True),
            tg.tensor(b, requires_grad=True)]
    f = tg.compile(step, backend="c", options={"batch_split": False})
    got = [g.numpy() for g in f(*args)]
    want = _torch_linear_grads(x, w, b)  # (the gradients are of the step's view of x)
    for g, e in zip(got, want):
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-4)
    calls = _gemm_calls(f)
    assert len(calls) == 3, calls  # forward, input gradient, weight gradient
    assert all("b0" not in c for c in calls), calls  # no loop over the batch
    # (M, N, K): forward 24 x 16 x 20 and input gradient 24 x 20 x 16 over the 4 x 6 rows,
    # the weight gradient with K = 24
    assert sorted(c.split(",")[2].strip() for c in calls) == ["16", "20", "24"], calls


def test_weight_broadcast_with_batch_dims_of_one():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 5, 7))
    w = rng.standard_normal((1, 7, 4))

    def fn(a, w):
        return tg.autograd.grad((a @ w).sin().sum(), [a, w])

    ta, tw = tg.tensor(a, requires_grad=True), tg.tensor(w, requires_grad=True)
    got = tg.compile(fn, backend="c")(ta, tw)
    want = fn(ta, tw)  # eager
    assert tuple(got[1].shape) == (1, 7, 4)
    for g, e in zip(got, want):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-10)
    xa, xw = torch.tensor(a, requires_grad=True), torch.tensor(w, requires_grad=True)
    (xa @ xw).sin().sum().backward()
    np.testing.assert_allclose(got[1].numpy(), xw.grad.numpy(), rtol=1e-10)


@pytest.mark.parametrize("openmp", [False, True])
def test_attention_products_switch_blas_threads_once(openmp):
    rng = np.random.default_rng(2)
    q, k, v = (rng.standard_normal((2, 3, 16, 8)).astype(np.float32) for _ in range(3))

    def fn(q, k, v):
        att = (q @ k.transpose(-2, -1)).softmax(-1)
        return tg.autograd.grad((att @ v).square().sum(), [q, k, v])

    args = [tg.tensor(a, requires_grad=True) for a in (q, k, v)]
    f = tg.compile(fn, backend="c", options={"openmp": openmp, "batch_split": False})
    got = f(*args)
    want = fn(*args)
    for g, e in zip(got, want):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-4, atol=1e-5)
    source = f.programs[0].executable.source
    calls = _gemm_calls(f)
    assert calls and all(c.startswith("tg_gemm_float_serial(") for c in calls), calls
    scope = "_all" if openmp and "#pragma omp parallel for" in source else ""
    assert source.count(f"tg_prev = tg_blas_one_thread{scope}();") == len(calls)
