"""tg.compile on the interpreter backend against eager tracegrad: every op of the registry
(values and gradients, backward after the call and inside the function), training steps
written by hand (SGD, Adam) and with tg.optim, double backward, in-place updates, lifted
globals/closures/parameters/optimizer state, custom Functions, guards and aliasing.
The verifier runs after every pass (TRACEGRAD_VERIFY=1)."""
from __future__ import annotations

import logging
import warnings

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.nn.functional  # (registers the nn primitives)
from compile_oracle import assert_tree_close, run_both, to_np
from tracegrad.ops import index as _index  # noqa: F401  (registers the index primitives)
from tracegrad.ops import samples
from tracegrad.ops.registry import REGISTRY, dispatch

DATA_DEPENDENT = {"nonzero"}  # output shape depends on values: a graph break (test_graph_breaks)
CASES = [(name, k) for name in sorted(REGISTRY) for k in range(len(samples.cases(REGISTRY[name])))
         if name not in DATA_DEPENDENT]


@pytest.fixture(autouse=True)
def _verify(monkeypatch):
    monkeypatch.setenv("TRACEGRAD_VERIFY", "1")


def _tensors(op, arrays):
    diff = set(samples.differentiable_positions(op, arrays)) if op.differentiable else set()
    return [tg.tensor(np.array(a, copy=True)).requires_grad_(i in diff) for i, a in enumerate(arrays)]


# ----------------------------------------------------------------------------- every op
@pytest.mark.parametrize("name,k", CASES, ids=[f"{n}-{k}" for n, k in CASES])
def test_op_compiled_equals_eager(name, k):
    """Forward value, then the compiled backward (cf(x).backward()) against eager."""
    op = REGISTRY[name]
    arrays, attrs = samples.cases(op, np.float64)[k]
    te, tc = _tensors(op, arrays), _tensors(op, arrays)
    cf = tg.compile(lambda *ts: dispatch(op, *ts, **attrs), backend="interpreter", fullgraph=True)
    want, got = dispatch(op, *te, **attrs), cf(*tc)
    assert_tree_close(to_np(got), to_np(want), f"{name} value", tol=1e-10)
    if not want.requires_grad:
        return
    assert got.requires_grad and got.grad_fn.name() == "CompiledFunctionBackward"
    cot = np.random.default_rng(k).standard_normal(tuple(want.shape))
    want.backward(tg.tensor(cot))
    got.backward(tg.tensor(cot))
    for i, (a, b) in enumerate(zip(te, tc)):
        assert (a.grad is None) == (b.grad is None), f"{name}: grad of input {i}"
        if a.grad is not None:
            assert_tree_close(to_np(b.grad), to_np(a.grad), f"{name} grad {i}", tol=1e-10)


@pytest.mark.parametrize("name,k", [c for c in CASES if REGISTRY[c[0]].differentiable],
                         ids=[f"{n}-{k}" for n, k in CASES if REGISTRY[n].differentiable])
def test_op_backward_inside_compiled_function(name, k):
    """backward() traced into the program: .grad of the inputs is written back."""
    op = REGISTRY[name]
    arrays, attrs = samples.cases(op, np.float64)[k]
    if not samples.differentiable_positions(op, arrays):
        pytest.skip("no differentiable input")

    def make():
        ts = _tensors(op, arrays)
        shape = dispatch(op, *[t.detach() for t in ts], **attrs).shape
        cot = tg.tensor(np.random.default_rng(k).standard_normal(tuple(shape)))

        def f(*xs):
            out = dispatch(op, *xs, **attrs)
            (out * cot).sum().backward()
            return out.detach()

        return f, lambda _: ts, ts

    run_both(make, calls=2, tol=1e-10, fullgraph=True)


# ----------------------------------------------------------------------------- training steps
def _linear_state(seed):
    tg.manual_seed(seed)
    return tg.randn(3, 2, requires_grad=True), tg.zeros(2, requires_grad=True), tg.randn(5, 3), tg.randn(5, 2)


def test_hand_written_sgd_step_matches_eager_and_does_not_retrace():
    def make():
        W, b, x, y = _linear_state(0)

        def step(x, y):
            loss = ((x @ W + b - y) ** 2).mean()
            loss.backward()
            with tg.no_grad():
                W.sub_(0.1 * W.grad)
                b.sub_(0.1 * b.grad)
            W.grad = None  # set to None ...
            b.grad.zero_()  # ... or zeroed in place: both as eager leaves them
            return loss

        return step, lambda k: (x, y), [W, b]

    cf = run_both(make, calls=5)
    assert len(cf.programs) == 2  # the first call creates b.grad, later calls zero it


def test_sgd_with_isub_on_globals():
    g = {}

    def make():
        W, b, x, y = _linear_state(1)
        g.update(W=W, b=b)

        def step(x, y):
            loss = ((x @ W + b - y) ** 2).sum()
            loss.backward()
            with tg.no_grad():
                for p in (W, b):
                    p -= 0.05 * p.grad
                    p.grad = None
            return loss

        return step, lambda k: (x, y), [W, b]

    cf = run_both(make, calls=4)
    assert len(cf.programs) == 1


def test_hand_written_adam_step():
    def make():
        tg.manual_seed(2)
        W = tg.randn(3, 2, requires_grad=True)
        m, v, t = tg.zeros(3, 2), tg.zeros(3, 2), tg.zeros(())
        x, y = tg.randn(5, 3), tg.randn(5, 2)

        def step(x, y):
            loss = ((x @ W - y) ** 2).mean()
            loss.backward()
            with tg.no_grad():
                t.add_(1)
                g = W.grad
                m.mul_(0.9).add_(g * 0.1)  # optimizer-style chained in-place updates
                v.mul_(0.999).add_(g * g * 0.001)
                mhat = m / (1 - 0.9 ** t)
                vhat = v / (1 - 0.999 ** t)
                W.sub_(0.01 * mhat / (vhat.sqrt() + 1e-8))
            W.grad.zero_() if W.grad is not None else None
            return loss

        return step, lambda k: (x, y), [W, m, v, t]

    cf = run_both(make, calls=5)
    assert len(cf.programs) == 2  # W.grad is None at the first call, zeroed afterwards


def test_hand_written_adam_matches_torch():
    torch = pytest.importorskip("torch")
    tg.manual_seed(3)
    w0, x, y = tg.randn(4, 2), tg.randn(6, 4), tg.randn(6, 2)
    W = w0.clone().requires_grad_()
    m, v, t = tg.zeros(4, 2), tg.zeros(4, 2), tg.zeros(())

    @tg.compile(backend="interpreter", fullgraph=True)
    def step(x, y):
        loss = ((x @ W - y) ** 2).mean()
        loss.backward()
        with tg.no_grad():
            t.add_(1)
            m.mul_(0.9).add_(W.grad * 0.1)
            v.mul_(0.999).add_(W.grad * W.grad * 0.001)
            W.sub_(0.01 * (m / (1 - 0.9 ** t)) / ((v / (1 - 0.999 ** t)).sqrt() + 1e-8))
        W.grad = None
        return loss

    Wt = torch.tensor(w0.numpy().copy(), requires_grad=True)
    opt = torch.optim.Adam([Wt], lr=0.01)
    xt, yt = torch.tensor(x.numpy()), torch.tensor(y.numpy())
    for _ in range(4):
        loss = step(x, y)
        opt.zero_grad()
        lt = ((xt @ Wt - yt) ** 2).mean()
        lt.backward()
        opt.step()
        np.testing.assert_allclose(loss.item(), lt.item(), rtol=1e-5)
    np.testing.assert_allclose(W.detach().numpy(), Wt.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert len(step.programs) == 1


@pytest.mark.parametrize("kind", ["sgd_momentum", "adam"])
def test_tg_optim_training_step(kind):
    def make():
        tg.manual_seed(4)
        model = tg.nn.Sequential(tg.nn.Linear(4, 8), tg.nn.Tanh(), tg.nn.Linear(8, 2))
        opt = (tg.optim.Adam(model.parameters(), lr=0.01) if kind == "adam"
               else tg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
        x, y = tg.randn(6, 4), tg.randn(6, 2)

        def step(x, y):
            opt.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            return loss

        watch = list(model.parameters()) + [t for st in opt.state.values() for t in st.values()]
        return step, lambda k: (x, y), watch

    cf = run_both(make, calls=4)
    assert len(cf.programs) == 1


def test_zero_grad_set_to_none_false_keeps_grad_tensor():
    def make():
        W, b, x, y = _linear_state(5)
        opt = tg.optim.SGD([W, b], lr=0.1)

        def step(x, y):
            opt.zero_grad(set_to_none=False)
            loss = ((x @ W + b - y) ** 2).sum()
            loss.backward()
            opt.step()
            return loss

        return step, lambda k: (x, y), [W, b]

    run_both(make, calls=4)


# ----------------------------------------------------------------------------- autograd inside
def test_double_backward_inside_compiled_function():
    def make():
        tg.manual_seed(6)
        x = tg.randn(4, requires_grad=True)

        def f(x):
            (g,) = tg.autograd.grad((x ** 3).sin().sum(), x, create_graph=True)
            z = (g * g).sum()
            z.backward()
            return z, g.detach()

        return f, lambda k: (x,), [x]

    cf = run_both(make, calls=3)
    assert len(cf.programs) == 2  # x.grad is None at the first call only


def test_grad_of_grad_returned_and_differentiated_after_the_call():
    x = tg.randn(3, requires_grad=True)
    cf = tg.compile(lambda x: tg.autograd.grad((x ** 3).sum(), x, create_graph=True)[0].sum(),
                    backend="interpreter")
    cf(x).backward()
    want = 6 * x.detach().numpy()
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-5)


def test_backward_after_the_call_through_module_parameters():
    tg.manual_seed(7)
    model = tg.nn.Sequential(tg.nn.Linear(3, 5), tg.nn.ReLU(), tg.nn.Linear(5, 1))
    twin = tg.nn.Sequential(tg.nn.Linear(3, 5), tg.nn.ReLU(), tg.nn.Linear(5, 1))
    twin.load_state_dict(model.state_dict())
    cm = tg.compile(model, backend="interpreter")
    x = tg.randn(4, 3)
    for _ in range(2):
        cm(x).sum().backward()
        twin(x).sum().backward()
    for p, q in zip(model.parameters(), twin.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-6)
    assert len(cm.programs) == 1


def test_compiled_backward_frees_its_saved_values():
    x = tg.randn(3, requires_grad=True)
    out = tg.compile(lambda x: x.exp().sum(), backend="interpreter")(x)
    out.backward(retain_graph=True)
    out.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp(x.detach().numpy()), rtol=1e-6)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        out.backward()


def test_saved_input_modified_in_place_before_backward_raises_like_eager():
    w = tg.randn(3, requires_grad=True)
    x = tg.randn(3)
    out = tg.compile(lambda x: (x * w).sum(), backend="interpreter")(x)
    with tg.no_grad():
        x.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()


# ----------------------------------------------------------------------------- in-place updates
def _normal(shape, seed):
    """The same fresh argument for the eager and the compiled twin."""
    return tg.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


def test_in_place_updates_of_arguments_views_and_buffers():
    def make():
        tg.manual_seed(8)
        running = tg.zeros(4)
        table = tg.zeros(3, 4)

        def f(x, i):
            x.add_(1.0)  # an argument
            with tg.no_grad():
                running.mul_(0.9).add_(x.mean(0) * 0.1)  # a buffer
                table[i] += x[0]  # a view of a lifted tensor
            return x * 2

        return f, lambda k: (_normal((2, 4), k), k % 3), [running, table]

    cf = run_both(make, calls=4)
    assert len(cf.programs) == 3  # i is a Python int: specialised per value


def test_in_place_argument_is_returned_as_the_same_object():
    x = tg.ones(3)
    cf = tg.compile(lambda x: x.mul_(3), backend="interpreter")
    assert cf(x) is x
    np.testing.assert_array_equal(x.numpy(), [3, 3, 3])


def test_grad_assignment_and_accumulation_into_existing_grad():
    def make():
        tg.manual_seed(9)
        w = tg.randn(3, requires_grad=True)
        w.grad = tg.ones(3)

        def f(x):
            (w * x).sum().backward()  # accumulates into the existing .grad
            g = w.grad.clone()
            w.grad = g * 0.5  # a new .grad tensor
            return g

        return f, lambda k: (_normal((3,), k),), [w]

    run_both(make, calls=3)


def test_outputs_never_alias_inputs_or_each_other():
    x = tg.ones(3)
    a, b, c = tg.compile(lambda x: (x, x * 1, x + 0), backend="interpreter")(x)
    assert a is x
    b.add_(1)
    c.mul_(5)
    np.testing.assert_array_equal(x.numpy(), [1, 1, 1])
    np.testing.assert_array_equal(b.numpy(), [2, 2, 2])
    y, z = tg.compile(lambda x: (x.exp(),) * 2, backend="interpreter")(x)
    assert y is z  # the same tensor returned twice stays one object, as in eager


def test_write_backs_that_read_each_others_storage():
    def make():
        a, b = tg.tensor([1.0, 2.0, 3.0, 4.0]), tg.tensor([5.0, 6.0, 7.0, 8.0])

        def swap():  # after the passes: a <- b's input, b <- a's input
            with tg.no_grad():
                tmp = a.clone()
                a.copy_(b.reshape(2, 2).reshape(4))
                b.copy_(tmp)
            return a * 1

        return swap, lambda k: (), [a, b]

    run_both(make, calls=3)


def test_outputs_that_are_views_of_inputs_are_views():
    """As eager, ``x.reshape`` returns a view of ``x``: writes through it reach ``x``
    (tests/test_aliasing.py has more)."""
    x = tg.ones(4)
    r = tg.compile(lambda x: x.reshape(2, 2), backend="interpreter")(x)
    r.add_(1)
    np.testing.assert_array_equal(x.numpy(), [2, 2, 2, 2])


def test_constant_outputs_are_fresh_each_call():
    cf = tg.compile(lambda x: (x.sum(), tg.zeros(3)), backend="interpreter")
    _, z = cf(tg.ones(2))
    z.add_(1)
    _, z2 = cf(tg.ones(2))
    np.testing.assert_array_equal(z2.numpy(), [0, 0, 0])


# ----------------------------------------------------------------------------- lifting and guards
SCALE = tg.tensor([1.0, 2.0, 3.0])


def test_lifted_global_is_read_by_reference():
    cf = tg.compile(lambda x: x * SCALE, backend="interpreter")
    np.testing.assert_array_equal(cf(tg.ones(3)).numpy(), [1, 2, 3])
    with tg.no_grad():
        SCALE.mul_(2)
    try:
        np.testing.assert_array_equal(cf(tg.ones(3)).numpy(), [2, 4, 6])
        assert len(cf.programs) == 1
    finally:
        with tg.no_grad():
            SCALE.div_(2)


def test_closure_tensor_and_listing_names():
    bias = tg.tensor([0.5, 0.5])

    def f(x):
        return x + bias

    cf = tg.compile(f, backend="interpreter")
    np.testing.assert_array_equal(cf(tg.zeros(2)).numpy(), [0.5, 0.5])
    assert "lifted bias" in str(cf.inspect(tg.zeros(2)).graph)


def test_python_scalars_are_specialised_and_guarded(monkeypatch, caplog):
    monkeypatch.setenv("TRACEGRAD_LOG", "guards")
    cf = tg.compile(lambda x, s, mode: x * s if mode == "mul" else x + s, backend="interpreter")
    x = tg.ones(2)
    with caplog.at_level(logging.INFO, logger="tracegrad"):
        assert cf(x, 2.0, "mul").tolist() == [2, 2]
        assert cf(x, 2.0, "mul").tolist() == [2, 2]
        assert cf(x, 3.0, "mul").tolist() == [3, 3]
        assert cf(x, 3.0, "add").tolist() == [4, 4]
    assert len(cf.programs) == 3
    text = caplog.text
    assert "retracing <lambda>" in text and "argument s: expected 2.0, got 3.0" in text
    assert "argument mode: expected 'mul', got 'add'" in text


def test_shape_dtype_requires_grad_and_grad_mode_guards():
    cf = tg.compile(lambda x: x * 2, backend="interpreter")
    cf(tg.ones(2))
    cf(tg.ones(2))
    cf(tg.ones(3))
    cf(tg.ones(3, dtype=tg.float64))
    cf(tg.ones(3, requires_grad=True))
    with tg.no_grad():
        cf(tg.ones(3, requires_grad=True))
    assert len(cf.programs) == 5


def test_item_of_a_lifted_tensor_is_guarded_by_value():
    scale = tg.tensor(2.0)
    cf = tg.compile(lambda x: x * scale.item(), backend="interpreter")
    assert cf(tg.ones(2)).tolist() == [2, 2]
    scale.fill_(3.0)
    assert cf(tg.ones(2)).tolist() == [3, 3]
    assert len(cf.programs) == 2
    assert "scale.item() == 2.0" in cf.programs[0].guards


def test_module_training_flag_is_guarded():
    tg.manual_seed(10)
    model = tg.nn.Sequential(tg.nn.Linear(4, 4), tg.nn.Dropout(0.5))
    cm = tg.compile(model, backend="interpreter")
    x = tg.randn(3, 4)
    cm(x)
    model.eval()
    np.testing.assert_allclose(cm(x).detach().numpy(), model(x).detach().numpy(), rtol=1e-6)
    assert len(cm.programs) == 2


def test_cache_size_limit_warns_and_runs_eagerly():
    from tracegrad.compiler import api as compiler

    cf = tg.compile(lambda x, n: x * n, backend="interpreter")
    x = tg.ones(2)
    for n in range(compiler.CACHE_SIZE_LIMIT):
        cf(x, n)
    with pytest.warns(RuntimeWarning, match=r"recompiled 8 times \(limit 8\).*argument n"):
        assert cf(x, 100).tolist() == [100, 100]
    assert len(cf.programs) == compiler.CACHE_SIZE_LIMIT
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the warning is given once
        assert cf(x, 101).tolist() == [101, 101]


# ----------------------------------------------------------------------------- custom Functions
class _Exp(tg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y


class _Dirty(tg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.mul_(2)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g * 2


class _NonDiff(tg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.mark_non_differentiable(b := x > 0)
        ctx.set_materialize_grads(False)
        return x * 3, b

    @staticmethod
    def backward(ctx, ga, gb):
        assert gb is None  # materialize_grads=False: no zeros for the unused output
        return None if ga is None else ga * 3


class _Needs(tg.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        assert ctx.needs_input_grad == (True, False)
        return g * y, None


class _Once(tg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    @tg.autograd.function.once_differentiable
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x.cos()


CUSTOM = {
    "save_for_backward": lambda x, y: _Exp.apply(x * y).sum(),
    "mark_dirty": lambda x, y: _Dirty.apply(x * 1.0).sum(),
    "mark_non_differentiable": lambda x, y: _NonDiff.apply(x)[0].sum() + _NonDiff.apply(x)[1].sum(),
    "needs_input_grad": lambda x, y: _Needs.apply(x, y).sum(),
    "once_differentiable": lambda x, y: _Once.apply(x).sum(),
}


@pytest.mark.parametrize("feature", sorted(CUSTOM))
def test_custom_function_backward_inside(feature):
    def make():
        tg.manual_seed(11)
        x, y = tg.randn(4, requires_grad=True), tg.randn(4)

        def f(x, y):
            out = CUSTOM[feature](x, y)
            out.backward()
            return out.detach()

        return f, lambda k: (x, y), [x, y]

    cf = run_both(make, calls=3, fullgraph=True)
    assert not cf.breaks


@pytest.mark.parametrize("feature", sorted(CUSTOM))
def test_custom_function_backward_after_the_call(feature):
    tg.manual_seed(12)
    x, y = tg.randn(4, requires_grad=True), tg.randn(4)
    x2 = x.detach().clone().requires_grad_()
    cf = tg.compile(CUSTOM[feature], backend="interpreter", fullgraph=True)
    cf(x, y).backward()
    CUSTOM[feature](x2, y).backward()
    np.testing.assert_allclose(x.grad.numpy(), x2.grad.numpy(), rtol=1e-6)


def test_custom_function_saved_annotation_is_the_saved_report():
    x = tg.randn(8, requires_grad=True)
    prog = tg.compile(lambda x: _Exp.apply(x).sum(), backend="interpreter",
                      options={"partition": "annotations"}).inspect(x)
    assert [(s.shape, s.bytes) for s in prog.saved] == [((8,), 32)]  # y = exp(x), as saved


def test_once_differentiable_double_backward_fails_as_in_eager():
    x = tg.randn(3, requires_grad=True)

    def f(x):
        (g,) = tg.autograd.grad(_Once.apply(x).sum(), x, create_graph=True)
        g.sum().backward()

    with pytest.raises(RuntimeError) as eager:
        f(x)
    with pytest.raises(RuntimeError) as compiled:
        tg.compile(f, backend="interpreter")(x)
    assert str(compiled.value) == str(eager.value)


def test_backend_names_are_checked_when_compiling(monkeypatch):
    """backend='cuda' with neither a GPU nor the emulation is refused when compiling (not at
    the first call), naming both ways out; an unknown backend lists those there are."""
    from tracegrad.compiler.backends import cuda

    monkeypatch.delenv(cuda.EMULATE_ENV, raising=False)
    if cuda.gpu_arch() is None:
        with pytest.raises(cuda.NoCuda, match="TRACEGRAD_CUDA_EMULATE=1"):
            tg.compile(lambda x: x + 1, backend="cuda")
    with pytest.raises(ValueError, match="unknown backend 'gpu'; expected one of c, cuda, interpreter"):
        tg.compile(lambda x: x + 1, backend="gpu")


def test_the_first_programs_fast_call_defers_to_the_general_path(monkeypatch, caplog):
    """After the first hit, calls of programs[0] take CompiledFunction's short path
    (compiler._first_program_hit). Everything that makes the general path decide otherwise must
    still do so: grad mode, custom saved-tensor hooks, anomaly mode, a dual tensor, logging,
    another program matching, and eager mode after a graph break."""
    import tracegrad.autograd.forward_ad as fwAD

    def f(x, flag):
        if not flag:
            x.tolist()  # a graph break, once flag is False
        return (x.sin() * x).sum()

    cf = tg.compile(f, backend="c")
    x = tg.tensor([0.5, 1.0], requires_grad=True)
    for _ in range(3):
        cf(x, True).backward()
    assert cf._hit and cf.programs[0].calls == 3
    program = cf.programs[0]
    with tg.no_grad():  # grad mode is guarded: a second program
        cf(x, True)
    assert len(cf.programs) == 2
    cf(x, True)
    with tg.no_grad():
        cf(x, True)  # program 2 through the general path
    assert (program.calls, cf.programs[1].calls) == (4, 2)
    seen = []
    with pytest.warns(RuntimeWarning, match="saved_tensors_hooks are active"):
        with tg.autograd.graph.saved_tensors_hooks(lambda t: seen.append(1) or t, lambda t: t):
            cf(x, True)
    assert seen and program.calls == 4
    with pytest.warns(RuntimeWarning, match="anomaly detection"):
        with tg.autograd.detect_anomaly():
            cf(x, True)
    assert program.calls == 4
    with fwAD.dual_level(), pytest.warns(RuntimeWarning, match="forward-AD dual tensor"):
        cf(fwAD.make_dual(tg.tensor([0.5, 1.0]), tg.ones(2)), True)
    monkeypatch.setenv("TRACEGRAD_LOG", "cache")
    with caplog.at_level(logging.INFO, logger="tracegrad"):
        cf(x, True)
    assert "hit, program 1 of 2" in caplog.text and program.calls == 5
    monkeypatch.delenv("TRACEGRAD_LOG")
    with pytest.warns(RuntimeWarning, match="graph break"):
        cf(x, False)
    cf(x, True)  # eager from now on, as the general path decides after a graph break
    assert program.calls == 5
