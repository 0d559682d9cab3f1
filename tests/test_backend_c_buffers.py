"""Output buffers of the C backend are reused across calls only while nothing outside the
executable refers to them (CExecutable._fresh_outputs), and tracegrad's own OpenBLAS is the
one generated code calls, its kernels chosen for this CPU (toolchain.blas)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import tracegrad as tg

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _f():
    return tg.compile(lambda x: ((x * 2).exp(), x.sum() + 1), backend="c", fullgraph=True)


def _addr(t):
    return t.numpy().__array_interface__["data"][0]


def test_a_released_result_buffer_is_reused():
    f = _f()
    x = tg.arange(6.0).reshape(2, 3)
    a, _ = f(x)
    first = _addr(a)
    del a
    b, _ = f(x)
    assert _addr(b) == first  # nothing held it: the same buffer, written again
    np.testing.assert_allclose(b.numpy(), np.exp(np.arange(6.0).reshape(2, 3) * 2), rtol=1e-6)


@pytest.mark.parametrize("hold", ["tensor", "array", "view", "memoryview", "grad"])
def test_a_held_result_is_never_overwritten(hold):
    f = _f()
    x = tg.arange(6.0).reshape(2, 3)
    a, s = f(x)
    expect = a.numpy().copy()
    # (called at once, before the del below: the lambdas never outlive a)
    keep = {"tensor": lambda: a, "array": lambda: a.numpy(), "view": lambda: a.numpy()[1:],  # noqa: F821
            "memoryview": lambda: memoryview(a.numpy()), "grad": lambda: a}[hold]()  # noqa: F821
    if hold == "grad":
        p = tg.zeros(2, 3, requires_grad=True)
        p.grad = a
        keep = p
    del a
    del s  # released: its buffer may be reused; a's may not
    for k in range(3):
        a2, _ = f(x + k + 1)
        assert not np.shares_memory(a2.numpy(), np.asarray(keep.grad if hold == "grad" else keep))
    held = {"tensor": lambda: keep.numpy(), "array": lambda: keep, "view": lambda: keep,
            "memoryview": lambda: np.asarray(keep), "grad": lambda: keep.grad.numpy()}[hold]()
    np.testing.assert_array_equal(held, expect[1:] if hold == "view" else expect)


def test_training_step_grads_kept_across_steps_stay_intact():
    """zero_grad() drops the .grad tensors: their buffers come back, unless the user kept them."""
    tg.manual_seed(0)
    model = tg.nn.Linear(4, 3)
    opt = tg.optim.SGD(model.parameters(), lr=0.1)

    @tg.compile
    def step(x):
        opt.zero_grad()
        loss = model(x).square().sum()
        loss.backward()
        opt.step()
        return loss

    x = tg.ones(5, 4)
    step(x)
    kept = model.weight.grad
    snapshot = kept.numpy().copy()
    for _ in range(3):
        step(x)
        assert model.weight.grad is not kept
        assert not np.shares_memory(model.weight.grad.numpy(), kept.numpy())
    np.testing.assert_array_equal(kept.numpy(), snapshot)


_BLAS_SCRIPT = r"""
import json, os
from tracegrad.compiler.backends.c.toolchain import blas
b = blas()
print(json.dumps({"description": b and b.description, "env": os.environ.get("OPENBLAS_CORETYPE")}))
"""


def _blas_in_subprocess(**env):
    full = dict(os.environ, **env)
    r = subprocess.run([sys.executable, "-c", _BLAS_SCRIPT], env=full, capture_output=True,
                       text=True, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_own_openblas_ignores_numpys_coretype_and_takes_tracegrads():
    pytest.importorskip("scipy_openblas32")
    chosen = _blas_in_subprocess(OPENBLAS_CORETYPE="Prescott", TRACEGRAD_OPENBLAS_CORETYPE="Haswell")
    assert chosen["description"].startswith("libscipy_openblas.")
    assert "(Haswell kernels)" in chosen["description"]
    assert chosen["env"] == "Prescott"  # the process's own setting is restored
    detected = _blas_in_subprocess(OPENBLAS_CORETYPE="Prescott")
    assert "(Prescott kernels)" not in detected["description"]


@pytest.mark.parametrize("shape", [(32, 64, 128), (300, 400, 200)])  # one BLAS thread / all
def test_matmul_through_blas_single_and_multi_threaded(shape):
    m, k, n = shape
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((n, k)).astype(np.float32)
    f = tg.compile(lambda a, b: (a @ b.t(), (a.t() @ a)), backend="c", fullgraph=True)
    for _ in range(2):  # the second call runs with the thread count the first restored
        y, g = f(tg.tensor(a), tg.tensor(b))
        np.testing.assert_allclose(y.numpy(), a @ b.T, rtol=1e-4, atol=1e-3)
        np.testing.assert_allclose(g.numpy(), a.T @ a, rtol=1e-4, atol=1e-3)
    assert f.programs[0].executable.blas is not None


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m, n, k, pad", [(32, 128, 64, 0), (16, 16, 3, 5), (15, 40, 8, 0), (40, 10, 8, 2)])
def test_small_products_with_a_transposed_weight(m, n, k, pad, dtype):
    """x @ W.T in a small product: with OpenBLAS, W is transposed by omatcopy first where M and
    N are 16 or more (runtime.h.j2: TG_GEMM), also from a wider matrix (row stride > K)."""
    rng = np.random.default_rng(m + n + k)
    x = rng.standard_normal((m, k)).astype(dtype)
    w_wide = rng.standard_normal((n, k + pad)).astype(dtype)
    f = tg.compile(lambda x, w: x @ w[:, :k].T, backend="c", fullgraph=True)
    for _ in range(2):
        np.testing.assert_allclose(f(tg.tensor(x), tg.tensor(w_wide)).numpy(), x @ w_wide[:, :k].T,
                                   rtol=1e-5, atol=1e-5)
    ct = "float" if dtype == np.float32 else "double"
    assert f"tg_gemm_{ct}({m}, {n}, {k}," in f.programs[0].source  # the product goes to TG_GEMM


def test_compiled_backward_results_are_not_copied_and_never_overwritten_while_held():
    """A compiled backward's gradients come from its own reused buffers, uncopied: a gradient
    still held is never written by the next backward."""
    w = tg.tensor(np.arange(12, dtype=np.float32).reshape(3, 4) / 10, requires_grad=True)
    f = tg.compile(lambda x: (x @ w).tanh().sum(), backend="c")
    held = []
    for k in range(3):
        x = tg.tensor(np.full((2, 3), k + 1, np.float32), requires_grad=True)
        gx, gw = tg.autograd.grad(f(x), [x, w])
        held.append((gx, gx.numpy().copy(), gw, gw.numpy().copy()))
    for gx, gx0, gw, gw0 in held:
        np.testing.assert_array_equal(gx.numpy(), gx0)
        np.testing.assert_array_equal(gw.numpy(), gw0)
    assert not np.array_equal(held[0][1], held[2][1])
