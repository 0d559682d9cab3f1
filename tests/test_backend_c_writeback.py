"""In-place write-back on the C backend: results written back into parameters, optimizer state
and arguments go straight into the user's storage (CExecutable.run_into), and the values are
those of eager mode, the interpreter backend and PyTorch, hazards and aliasing included."""
from __future__ import annotations

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.nn as nn
import tracegrad.nn.functional as F

RTOL, ATOL = 1e-5, 1e-6


def _close(a, b):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=RTOL, atol=ATOL)


def _written_in_place(fn):
    """Output positions the last call of compiled ``fn`` wrote into user storage."""
    exe = fn.programs[-1].executable
    return sorted(pos for pos, _, _ in exe._into[2]) if exe._into else []


# ----------------------------------------------------------------------------- optimizers
def _training(backend, make_opt, steps=4):
    tg.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3))
    opt = make_opt(model.parameters())

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    fn = tg.compile(step, backend=backend, fullgraph=True) if backend else step
    rng = np.random.default_rng(1)
    params = list(model.parameters())
    storage = [p._value for p in params]
    losses, versions = [], []
    for _ in range(steps):  # new batch arrays every step, as in a real loop
        x = tg.tensor(rng.standard_normal((5, 6)).astype(np.float32))
        y = tg.tensor(rng.integers(0, 3, 5))
        losses.append(float(fn(x, y)))
        versions.append([p._version for p in params])
    return fn, params, storage, losses, versions, opt


OPTIMIZERS = {
    "sgd_momentum": (lambda ps: tg.optim.SGD(ps, lr=0.1, momentum=0.9),
                     lambda ps: __import__("torch").optim.SGD(ps, lr=0.1, momentum=0.9)),
    "adam": (lambda ps: tg.optim.Adam(ps, lr=1e-2),
             lambda ps: __import__("torch").optim.Adam(ps, lr=1e-2)),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_optimizer_steps_write_parameters_and_state_in_place(name):
    make = OPTIMIZERS[name][0]
    fn, params, storage, losses, versions, opt = _training("c", make)
    _, eparams, _, elosses, eversions, eopt = _training(None, make)
    _, iparams, _, ilosses, iversions, _ = _training("interpreter", make)
    _close(losses, elosses)
    _close(losses, ilosses)
    for p, e, i in zip(params, eparams, iparams):
        _close(p.detach().numpy(), e.detach().numpy())
        _close(p.detach().numpy(), i.detach().numpy())
    for p, e in zip(params, eparams):  # optimizer state too
        for k, v in opt.state[p].items():
            if isinstance(v, tg.Tensor):
                _close(v.detach().numpy(), eopt.state[e][k].detach().numpy())
    # the parameters kept their arrays, and the compiled step wrote them (and the state) directly
    assert all(p._value is s for p, s in zip(params, storage))
    written = _written_in_place(fn)
    n_state = 2 if name == "adam" else 1
    assert len(written) >= len(params) * (1 + n_state)
    # versions move exactly as with the interpreter backend (which copies)
    assert versions == iversions


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_optimizer_steps_match_pytorch(name):
    torch = pytest.importorskip("torch")
    make, make_torch = OPTIMIZERS[name]
    fn, params, _, losses, _, _ = _training("c", make)
    tg.manual_seed(0)
    ref = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3))  # same init as _training
    tm = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    with torch.no_grad():
        for tp, p in zip(tm.parameters(), ref.parameters()):
            tp.copy_(torch.tensor(p.detach().numpy()))
    topt = make_torch(tm.parameters())
    rng = np.random.default_rng(1)
    for k in range(len(losses)):
        x = torch.tensor(rng.standard_normal((5, 6)).astype(np.float32))
        y = torch.tensor(rng.integers(0, 3, 5))
        topt.zero_grad()
        loss = torch.nn.functional.cross_entropy(tm(x), y)
        loss.backward()
        topt.step()
        np.testing.assert_allclose(losses[k], loss.item(), rtol=1e-4)
    for p, tp in zip(params, tm.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), tp.detach().numpy(), rtol=1e-4, atol=1e-5)


def test_existing_grad_accumulates_in_place():
    w = tg.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), requires_grad=True)
    w.grad = tg.ones(2, 3)
    grad_storage = w.grad._value

    def step(x):
        (w * x).sum().backward()  # accumulates into the existing .grad

    fn = tg.compile(step, backend="c", fullgraph=True)
    x = tg.tensor(np.full((2, 3), 2.0, np.float32))
    fn(x)
    fn(x)
    assert w.grad._value is grad_storage
    _close(w.grad.numpy(), np.full((2, 3), 5.0))
    assert _written_in_place(fn)


# ----------------------------------------------------------------------------- hazards
def _c_interp_eager(make, call):
    """Build fresh state with ``make()`` three times; run ``call`` compiled with C, with the
    interpreter and eagerly; return the three (result, state) pairs and the C function."""
    out = []
    for backend in ("c", "interpreter", None):
        state, f = make()
        fn = tg.compile(f, backend=backend, fullgraph=True) if backend else f
        res = [call(fn, state) for _ in range(2)]
        out.append((res, state, fn))
    return out


def _check_same(runs):
    (rc, sc, _), (ri, si, _), (re_, se, _) = runs
    for a, b, c in zip(rc, ri, re_):
        _close(a, b)
        _close(a, c)
    for a, b, c in zip(sc, si, se):
        _close(a.detach().numpy(), b.detach().numpy())
        _close(a.detach().numpy(), c.detach().numpy())


def _state(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [tg.tensor(rng.standard_normal(s).astype(np.float32)) for s in shapes]


@pytest.mark.parametrize("case", ["sum_after_update", "matmul_reads_own_target", "transposed_read",
                                  "swap"])
def test_parameter_read_after_its_update_is_computed(case):
    """Each program reads the old value of a tensor after the kernel that computes its new
    value (or in a kernel that reads it at another index): the lowering must defer that write."""

    def make():
        w, v = _state((4, 4), (4, 4))

        def f(x):
            old = w.clone()
            if case == "sum_after_update":
                w.mul_(0.5)
                return old * w.sum() + x
            if case == "matmul_reads_own_target":
                w.copy_(x @ w)
                return old + 1
            if case == "transposed_read":
                w.copy_(w.t() * 2 + x)
                return old
            tmp = v.clone()  # swap: each new value is the other's old one
            v.copy_(w)
            w.copy_(tmp)
            return x + 0

        return [w, v], f

    x = tg.tensor(np.arange(16, dtype=np.float32).reshape(4, 4) / 16)
    runs = _c_interp_eager(make, lambda fn, st: fn(x).numpy())
    _check_same(runs)
    fn = runs[0][2]
    exe = fn.programs[-1].executable
    assert exe.inplace and exe.deferred, "the hazard was not detected"
    written = _written_in_place(fn)
    assert written  # still written in place, by the copies at the end


def test_same_index_update_is_not_deferred():
    """``p - lr * g`` read and written at the same index in one loop needs no deferral."""
    w, = _state((3, 5))

    def f(x):
        w.sub_(0.1 * x)
        return w.sum()

    fn = tg.compile(f, backend="c", fullgraph=True)
    x = tg.ones(3, 5)
    before = w.numpy().copy()
    out = fn(x)
    exe = fn.programs[-1].executable
    assert exe.inplace and not exe.deferred
    _close(w.numpy(), before - 0.1)
    _close(out.numpy(), (before - 0.1).sum())


def test_backward_sees_the_value_before_an_in_place_update():
    """A differentiable output whose backward needs a parameter the same program updates."""
    def make():
        w, = _state((3,), seed=2)

        def f(x):
            y = (x * (w * 1)).sum()  # saves w * 1 (the passes make it w itself)
            with tg.no_grad():
                w.mul_(0.5)
            return y

        return [w], f

    grads = []
    # (not the interpreter backend: it saves w's own storage, so its backward refuses to run
    # once the write-back bumped w's version)
    for backend in ("c", None):
        (w,), f = make()
        fn = tg.compile(f, backend=backend, fullgraph=True) if backend else f
        x = tg.tensor(np.array([1.0, 2.0, 3.0], np.float32), requires_grad=True)
        fn(x).backward()
        grads.append((x.grad.numpy(), w.numpy()))
        if backend == "c":
            assert fn.programs[-1].executable.deferred  # the saved copy reads w after its update
    for g, wv in grads[1:]:
        _close(grads[0][0], g)
        _close(grads[0][1], wv)


# ----------------------------------------------------------------------------- aliasing
def test_overlapping_targets_fall_back_to_eager():
    """Two mutated arguments that are views of one storage: the trace cannot express that
    overlap, so the call runs eagerly with a warning (ir/aliasing.py) and equals eager; a
    disjoint call afterwards is compiled and written in place again."""

    def f(a, b):
        a.mul_(2)
        b.copy_(b.flip(0) + 1)

    base = tg.tensor(np.arange(8, dtype=np.float32))
    f(base[0:4], base[2:6])
    want = base.numpy().copy()
    for backend in ("c", "interpreter"):
        fn = tg.compile(f, backend=backend)
        base = tg.tensor(np.arange(8, dtype=np.float32))
        fn(tg.zeros(4), tg.zeros(4))  # compiled for disjoint arguments first
        with pytest.warns(RuntimeWarning, match="share memory"):
            fn(base[0:4], base[2:6])  # overlapping: same shapes, aliasing arrays
        _close(base.numpy(), want)
        if backend == "c":
            fn(tg.zeros(4), tg.zeros(4))  # disjoint again: the compiled program, in place
            assert fn.programs[0].calls == 2 and _written_in_place_by(fn.programs[0])
        with pytest.raises(tg.compiler.CompileError, match="share memory"):
            tg.compile(f, backend=backend, fullgraph=True)(base[0:4], base[2:6])


def _written_in_place_by(prog):
    exe = prog.executable
    return sorted(pos for pos, _, _ in exe._into[2]) if exe._into else []


def test_target_that_another_input_views_falls_back():
    """An argument that views a parameter the program writes back into: that call runs
    eagerly (with a warning), as the trace cannot see the overlap; copies still compile."""

    def make():
        w, = _state((3, 4), seed=3)

        def f(x):
            w.copy_(x.t() * 2)  # w is not read: its target pairs with no input

        return [w], f

    out = []
    for backend in ("c", "interpreter", None):
        (w,), f = make()
        fn = tg.compile(f, backend=backend) if backend else f
        fn(tg.ones(4, 3))
        fn(w.t().contiguous())  # a copy: no aliasing
        if backend == "c":
            assert _written_in_place(fn)
            exe = fn.programs[-1].executable
            assert [k for _, k in exe.inplace] == [-1]
        before = w.numpy().copy()
        if backend:
            with pytest.warns(RuntimeWarning, match="argument x and w share memory"):
                fn(w.view(4, 3))  # a contiguous view of w itself: reads what it overwrites
        else:
            fn(w.view(4, 3))
        out.append((w.numpy().copy(), before.reshape(4, 3).T))
    for w_now, before in out:
        _close(w_now, before * 2)


def test_same_tensor_passed_twice_falls_back():
    def f(a, b):
        a.add_(1)
        b.mul_(3)

    results = []
    for backend in ("c", "interpreter"):
        fn = tg.compile(f, backend=backend, fullgraph=True)
        fn(tg.zeros(3, 3), tg.zeros(3, 3))
        t = tg.ones(3, 3)
        fn(t, t)
        results.append(t.numpy().copy())
        if backend == "c":
            assert _written_in_place(fn) == []
    _close(results[0], results[1])


def test_non_contiguous_target_is_copied_into():
    def f(a):
        a.mul_(2)

    fn = tg.compile(f, backend="c", fullgraph=True)
    base = tg.tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
    view = base.t()  # non-contiguous: written back by a copy
    fn(view)
    _close(base.numpy(), np.arange(12, dtype=np.float32).reshape(3, 4) * 2)
    assert _written_in_place(fn) == []
    a = tg.ones(4, 3)
    fn(a)
    _close(a.numpy(), np.full((4, 3), 2.0))
    assert _written_in_place(fn)


def test_direct_call_of_the_executable_never_writes_its_inputs():
    w, = _state((2, 3))

    def f(x):
        w.add_(x)

    fn = tg.compile(f, backend="c", fullgraph=True)
    fn(tg.ones(2, 3))
    exe = fn.programs[-1].executable
    arrays = [w._value.copy(), np.ones((2, 3), np.float32)]
    keep = [a.copy() for a in arrays]
    exe([a for a in arrays] if len(exe.graph.inputs) == 2 else arrays[:len(exe.graph.inputs)])
    for a, b in zip(arrays, keep):
        np.testing.assert_array_equal(a, b)


# ----------------------------------------------------------------------------- the fast path
def test_generated_guard_check_agrees_with_mismatch():
    """fastpath.compile_check says yes exactly when Program.mismatch finds no reason."""
    tg.manual_seed(0)
    model = nn.Linear(3, 2)
    opt = tg.optim.SGD(model.parameters(), lr=0.1)

    def step(x, k):
        opt.zero_grad()
        model(x * k).sum().backward()
        opt.step()

    fn = tg.compile(step, backend="c")
    x = tg.ones(4, 3)
    fn(x, 2.0)
    fn(x, 2.0)
    prog = fn.programs[0]
    flat = [x, 2.0]
    assert prog._fast_check(flat, True) and prog.mismatch(flat, True) is None
    variants = [([x, 3.0], True), ([x, 2], True), ([tg.ones(5, 3), 2.0], True),
                ([tg.ones(4, 3, dtype=tg.float64), 2.0], True),
                ([tg.ones(4, 3).requires_grad_(), 2.0], True), (flat, False), ([x], True)]
    for args, enabled in variants:
        assert not prog._fast_check(args, enabled)
        assert prog.mismatch(args, enabled) is not None
    opt.param_groups[0]["weight_decay"] = 0.2  # a Python value the program baked in
    assert not prog._fast_check(flat, True) and "weight_decay" in prog.mismatch(flat, True)
    opt.param_groups[0]["weight_decay"] = 0
    opt.param_groups[0]["lr"] = 0.2  # a program input, not a guard
    assert prog._fast_check(flat, True) and prog.mismatch(flat, True) is None
    opt.param_groups[0]["lr"] = 0.1

    def agree():
        return bool(prog._fast_check(flat, True)) == (prog.mismatch(flat, True) is None)

    model.eval()  # whatever the program's guards say about these, both say the same
    assert agree()
    model.train()
    model.weight.grad = tg.zeros(2, 3)  # .grad presence
    assert agree()
    model.weight.grad = None
    assert agree() and prog._fast_check(flat, True)
