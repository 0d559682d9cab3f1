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


def _attention_grads(lib, q, k, v, scale):
    att = (q @ k.transpose(-2, -1)) * scale
    out = att.softmax(-1) @ v
    return lib.autograd.grad(out.square().sum(), [q, k, v])


def _torch_attention_grads(q, k, v, scale):
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    return [g.numpy() for g in _attention_grads(torch, tq, tk, tv, scale)]


# (batch, heads, T, head dim, dtype): T not a multiple of anything, one batch item, float64;
# each batch's products add up to BLAS_SERIAL_WORK or more (the batched call's threshold)
BATCHED_SHAPES = [(3, 4, 67, 40, np.float32), (1, 8, 61, 72, np.float32), (2, 4, 67, 64, np.float64)]


@pytest.mark.parametrize("shape", BATCHED_SHAPES, ids=lambda s: "x".join(map(str, s[:4])) + f"-{s[4].__name__}")
@pytest.mark.parametrize("blas", [True, False])
def test_attention_batches_are_one_batched_call(shape, blas):
    b, h, t, d, dtype = shape
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((b, h, t, d)).astype(dtype) for _ in range(3))
    scale = 1.0 / d ** 0.5

    def fn(q, k, v):
        return _attention_grads(tg, q, k, v, scale)

    args = [tg.tensor(a, requires_grad=True) for a in (q, k, v)]
    f = tg.compile(fn, backend="c", options={"openmp": False, "batch_split": False, "blas": blas})
    got = [g.numpy() for g in f(*args)]
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)
    for g, e in zip(got, fn(*args)):  # eager
        np.testing.assert_allclose(g, e.numpy(), **tol)
    for g, e in zip(got, _torch_attention_grads(q, k, v, scale)):
        np.testing.assert_allclose(g, e, **tol)
    calls = _gemm_calls(f)
    ct = "float" if dtype == np.float32 else "double"
    # the forward's two products and the backward's four, each one call over the b * h items
    # (identical ones written once: backends/c/shared.py)
    assert len(calls) >= 3 and all(c.startswith(f"tg_gemm_{ct}_batch(2, ") for c in calls), calls


def test_batched_call_reads_heads_of_a_projection_in_place():
    """q, k, v as the heads of one (B, T, 3C) projection (the transformer's views: batch
    strides T*3C and C/H, not one stride over the items), and a transposed k read as is."""
    rng = np.random.default_rng(4)
    bsz, t, c, nh = 3, 67, 192, 4
    x = rng.standard_normal((bsz, t, 3 * c)).astype(np.float32)

    def fn(x):
        q, k, v = (z.reshape(bsz, t, nh, c // nh).transpose(1, 2) for z in x.split(c, dim=2))
        out = (q @ k.transpose(-2, -1)).softmax(-1) @ v
        return tg.autograd.grad(out.square().sum(), [x])[0]

    arg = tg.tensor(x, requires_grad=True)
    f = tg.compile(fn, backend="c", options={"openmp": False, "batch_split": False})
    got = f(arg).numpy()
    np.testing.assert_allclose(got, fn(arg).numpy(), rtol=1e-4, atol=1e-4)
    tx = torch.tensor(x, requires_grad=True)
    q, k, v = (z.reshape(bsz, t, nh, c // nh).transpose(1, 2) for z in tx.split(c, dim=2))
    ((q @ k.transpose(-2, -1)).softmax(-1) @ v).square().sum().backward()
    np.testing.assert_allclose(got, tx.grad.numpy(), rtol=1e-4, atol=1e-4)
    calls = _gemm_calls(f)
    assert calls and all(c.startswith("tg_gemm_float_batch(2, ") for c in calls), calls
    # q and k read in place from the projection: item strides T*3C and C/H, rows 3C apart
    # (views.View.reshape keeps split-then-view a view)
    assert f"[] = {{{t * 3 * c}, {c // nh}}}" in f.programs[0].executable.source


def test_batched_call_with_a_runtime_batch_size():
    rng = np.random.default_rng(5)
    w = tg.tensor(rng.standard_normal((4, 40, 67)).astype(np.float32), requires_grad=True)

    def fn(x, w):
        return tg.autograd.grad((x @ w).tanh().sum(), [x, w])

    f = tg.compile(fn, backend="c", dynamic=True, options={"openmp": False, "batch_split": False})
    for b in (3, 5, 2):
        x = tg.tensor(rng.standard_normal((b, 4, 67, 40)).astype(np.float32), requires_grad=True)
        for g, e in zip(f(x, w), fn(x, w)):
            np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-4, atol=1e-4)
    assert any("tg_gemm_float_batch(" in p.executable.source for p in f.programs)


def test_split_halves_keep_one_blas_thread_per_product():
    """A batch-split program's halves run on two threads at once, so batch_split.lower_split
    lowers them with ``one_blas_thread``: their batched products stay loops of one-thread calls
    (no batched call sharing items over BLAS's threads)."""
    rng = np.random.default_rng(6)
    x = tg.tensor(rng.standard_normal((64, 8, 16, 24)).astype(np.float32))
    w = tg.tensor(rng.standard_normal((8, 24, 24)).astype(np.float32), requires_grad=True)

    def fn(x, w):
        return tg.autograd.grad((x @ w).tanh().square().sum(), [w])[0]

    sources = []
    for one_thread in (False, True):
        f = tg.compile(fn, backend="c", options={"openmp": False, "batch_split": False,
                                                 "one_blas_thread": one_thread})
        np.testing.assert_allclose(f(x, w).numpy(), fn(x, w).numpy(), rtol=1e-4, atol=1e-3)
        sources.append(f.programs[0].executable.source.split("/* ---- end of runtime")[-1])
    assert "tg_gemm_float_batch(" in sources[0] and "tg_gemm_float_serial(" not in sources[0]
    assert "tg_gemm_float_serial(" in sources[1] and "tg_gemm_float_batch(" not in sources[1]


@pytest.mark.parametrize("name", ["gpt", "lenet5"])
def test_benchmark_steps_match_the_interpreter(name):
    """benchmarks/workloads.py's GPT-style step (here T = 67 and 16 heads' items: attention's
    products as batched calls) and LeNet-5's, compiled, against the interpreter over 3 steps."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import workloads

    sizes = {"vocab": 96, "block_size": 67, "batch": 4} if name == "gpt" else {}
    results = {}
    for backend in ("interpreter", "c"):
        step, args = workloads.WORKLOADS[name](backend, **sizes)
        losses = [step(*args).item() for _ in range(3)]
        results[backend] = losses, [p.detach().numpy().copy() for p in step.params], step
    np.testing.assert_allclose(results["c"][0], results["interpreter"][0], rtol=1e-4)
    # (Adam's first steps move a parameter whose gradient is rounding noise, attention's key
    # bias, by +-lr either way: parameters agree to a few lr)
    for got, want in zip(results["c"][1], results["interpreter"][1]):
        np.testing.assert_allclose(got, want, atol=1e-2 if name == "gpt" else 1e-4, rtol=1e-4)
    source = results["c"][2].programs[0].executable.source
    if name == "gpt":
        assert "tg_gemm_float_batch(" in source


@pytest.mark.parametrize("a_shape, b_shape", [((6, 5, 1, 300), (5, 300, 900)),  # rows of 1, B broadcast
                                              ((6, 5, 70, 0), (1, 5, 0, 900)),  # K = 0: zeros
                                              ((3, 1, 67, 45), (4, 45, 181))])  # A broadcast over heads
def test_batched_call_edge_shapes(a_shape, b_shape):
    rng = np.random.default_rng(7)
    a = rng.standard_normal(a_shape).astype(np.float32)
    b = rng.standard_normal(b_shape).astype(np.float32)

    def fn(a, b):
        return (a @ b) * 2.0

    f = tg.compile(fn, backend="c", options={"openmp": False, "batch_split": False})
    got = f(tg.tensor(a), tg.tensor(b)).numpy()
    np.testing.assert_allclose(got, (torch.tensor(a) @ torch.tensor(b)).numpy() * 2.0, rtol=1e-4, atol=1e-4)
    if 0 not in a_shape:
        assert "tg_gemm_float_batch(" in f.programs[0].executable.source
