"""dynamic=True on the C backend: one generated function whose batch size is a runtime value
(backends/c/symbolic.py), checked against eager tracegrad at many batch sizes."""
from __future__ import annotations

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.nn.functional as F
from tracegrad.compiler.backends.c import symbolic


def _builds(compiled):
    (prog,) = compiled.programs
    return [type(p.executable).__name__ for p in prog.specializations]


def _classifier_step():
    tg.manual_seed(0)
    model = tg.nn.Sequential(tg.nn.Linear(8, 16), tg.nn.Tanh(), tg.nn.Linear(16, 3))
    opt = tg.optim.Adam(model.parameters(), lr=0.01)

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return model, step


def test_training_step_runs_every_batch_size_from_one_build():
    model_c, step_c = _classifier_step()
    model_e, step_e = _classifier_step()
    compiled = tg.compile(step_c, dynamic=True)
    rng = np.random.default_rng(0)
    for B in (32, 48, 17, 5, 200, 64, 1, 32):
        x = tg.tensor(rng.standard_normal((B, 8)).astype(np.float32))
        y = tg.tensor(rng.integers(0, 3, B))
        np.testing.assert_allclose(compiled(x, y).item(), step_e(x, y).item(), rtol=1e-5)
        for pc, pe in zip(model_c.parameters(), model_e.parameters()):
            np.testing.assert_allclose(pc.detach().numpy(), pe.detach().numpy(), rtol=1e-5, atol=1e-6)
    builds = _builds(compiled)
    # the first size's own build and one symbolic build; batch 1 traces differently (expand of
    # one element becomes a reshape) and may get a build of its own
    assert builds[:2] == ["CExecutable", "DynamicCExecutable"] and len(builds) <= 3
    sym = compiled.programs[0].specializations[1]
    assert "int tg_run_dyn(void **args, char *ws, int64_t tg_B)" in sym.source
    assert "tg_B" in sym.source.split("tg_run_dyn")[1]


def test_symbolic_build_writes_parameters_in_place_and_never_overwrites_held_results():
    """The runtime-batch build writes parameters and Adam's state straight into their storage
    and reuses its result buffers as the static build does, per batch size: results held by the
    caller (losses, .grad tensors) keep their values whatever batch size runs next."""
    model_c, step_c = _classifier_step()
    model_e, step_e = _classifier_step()
    compiled = tg.compile(step_c, dynamic=True)
    params = list(model_c.parameters())
    rng = np.random.default_rng(1)
    held = []
    for B in (32, 48, 17, 48, 48, 5, 17):
        x = tg.tensor(rng.standard_normal((B, 8)).astype(np.float32))
        y = tg.tensor(rng.integers(0, 3, B))
        if B == 48:  # from the symbolic build on, parameters keep their storage (exe._into below
            # shows the results are written into it, not copied)
            storage = [p._value for p in params]
        loss = compiled(x, y)
        want = step_e(x, y)
        held.append((loss, loss.item(), [(p.grad, p.grad.numpy().copy()) for p in params]))
        np.testing.assert_allclose(loss.item(), want.item(), rtol=1e-5)
        for pc, pe in zip(params, model_e.parameters()):
            np.testing.assert_allclose(pc.detach().numpy(), pe.detach().numpy(), rtol=1e-5, atol=1e-6)
        if B != 32:
            assert all(p._value is s for p, s in zip(params, storage))
    exe = compiled.programs[0].specializations[1].executable
    assert type(exe).__name__ == "DynamicCExecutable" and exe.inplace and exe._into[2]
    for loss, value, grads in held:
        assert loss.item() == value
        for g, copy in grads:
            np.testing.assert_array_equal(g.numpy(), copy)
    del held, loss
    pools = []
    for _ in range(3):  # nothing held any more: the same buffers serve every call
        compiled(x, y)
        pools.append([id(a) for a in exe._pool if a is not None])
    assert pools[1] == pools[2] and pools[1]


def test_backward_after_the_call_runs_at_the_forward_batch_size():
    W = tg.randn(5, 4, dtype=tg.float64, requires_grad=True)
    f = tg.compile(lambda x: (x @ W).tanh().mean(), dynamic=True)
    for B in (8, 16, 0, 3, 40):
        x = tg.randn(B, 5, dtype=tg.float64, requires_grad=True)
        out = f(x)
        out.backward()
        x2 = x.detach().requires_grad_()
        W2 = W.detach().requires_grad_()
        ref = (x2 @ W2).tanh().mean()
        ref.backward()
        np.testing.assert_allclose(out.item(), ref.item(), rtol=1e-12, equal_nan=True)
        np.testing.assert_allclose(x.grad.numpy(), x2.grad.numpy(), rtol=1e-12)
        np.testing.assert_allclose(W.grad.numpy(), W2.grad.numpy(), rtol=1e-12, equal_nan=True)
        W.grad = None
    assert "DynamicCExecutable" in _builds(f)


def test_python_branching_on_the_batch_size_is_caught():
    """The symbolic build comes from traces at large sample sizes; a size whose trace differs
    (here: Python picks another branch) gets a build of its own instead of the wrong code."""
    f = tg.compile(lambda x: x * 2 if x.shape[0] < 100 else x * 3, dynamic=True)
    for B, k in ((8, 2), (16, 2), (500, 3), (9, 2), (300, 3)):
        np.testing.assert_allclose(f(tg.ones(B, 2)).numpy(), np.full((B, 2), float(k)))


def test_a_program_that_is_not_linear_in_the_batch_size_warns_and_stays_correct():
    f = tg.compile(lambda x: (x @ x.T).reshape(-1) + 1, dynamic=True)  # B*B elements
    f(tg.ones(3, 2))
    with pytest.warns(RuntimeWarning, match="built once per batch size.*not linear"):
        out = f(tg.ones(4, 2))
    np.testing.assert_allclose(out.numpy(), np.full(16, 3.0))
    np.testing.assert_allclose(f(tg.ones(5, 2)).numpy(), np.full(25, 3.0))
    assert "DynamicCExecutable" not in _builds(f)


def test_fits():
    assert symbolic.fit_int([3 * b - 7 for b in symbolic.SAMPLE_BATCHES]) == (3, -7)
    assert symbolic.fit_int([b * b for b in symbolic.SAMPLE_BATCHES]) is None
    vals = [float(np.float32(1 / (10 * b))) for b in symbolic.SAMPLE_BATCHES]
    expr = symbolic._fit_float(vals, symbolic.SAMPLE_BATCHES, single=True)
    assert np.float32(symbolic._eval_float(expr, 7)) == np.float32(1 / 70)
    assert symbolic._fit_float([1.0, 5.0, 2.0], symbolic.SAMPLE_BATCHES, single=False) is None


class _Buf:
    def __init__(self, name, nbytes, first, last, offset):
        self.name, self.kind, self.nbytes, self.first, self.last, self.offset = \
            name, "work", nbytes, first, last, offset


class _Plan:
    def __init__(self, buffers, workspace):
        self.buffers, self.workspace = buffers, workspace


def test_layout_check_rejects_reuse_that_only_large_batches_make_safe():
    def plans(overlap_safe):
        out = []
        for b in symbolic.SAMPLE_BATCHES:
            # a: 4B bytes, live 0..2; c: 64 bytes after a's 4B, live 1..2 (together with a).
            # unsafe variant: c sits at 2B, inside a for every B >= 32... and at every sample
            c_off = 4 * b if overlap_safe else 4 * b - 2 * b
            out.append(_Plan([_Buf("a", 4 * b, 0, 2, 0), _Buf("c", 64, 1, 2, c_off)], 4 * b + 64))
        return out

    assert symbolic.check_layout(plans(True)) == (4, 64)
    with pytest.raises(symbolic.NotSymbolic):
        symbolic.check_layout(plans(False))


def test_generated_relaxed_guard_check_agrees_with_the_guards():
    """fastpath.compile_check(relaxed=True) passes exactly when DynamicProgram.mismatch's
    guards (leading sizes free) pass."""
    _, step = _classifier_step()
    f = tg.compile(step, dynamic=True)
    rng = np.random.default_rng(0)

    def batch(b, feats=8, dtype=np.float32, grad=False):
        x = tg.tensor(rng.standard_normal((b, feats)).astype(dtype), requires_grad=grad)
        return [x, tg.tensor(rng.integers(0, 3, b))]

    f(*batch(32))
    f(*batch(48))
    dp = f.programs[0]
    fast = dp._fast_check

    def guards_pass(args, enabled):
        dp._fast_check = lambda *a: False  # the guard loops, then the build's own say
        try:
            return dp.mismatch(args, enabled) is None
        finally:
            dp._fast_check = fast

    variants = [(batch(17), True), (batch(48), True), (batch(0), True), (batch(32, feats=9), True),
                (batch(32, dtype=np.float64), True), (batch(32, grad=True), True), (batch(32), False),
                (batch(32)[:1], True), ([batch(32)[0], 3], True)]
    for args, enabled in variants:
        assert bool(fast(args, enabled)) == guards_pass(args, enabled), (args, enabled)
    assert fast(batch(17), True) and not fast(batch(32, feats=9), True)
