"""The torch.autograd extras under tg.compile (issue 7 item 6).

- jacobian, hessian, hvp, vhp, vjp and jvp (double-vjp trick) of traceable functions called inside
  a compiled function are captured whole (fullgraph=True) on both backends; values equal eager
  tracegrad and torch.autograd.functional.
- Forward-mode AD: dual tensors made inside the compiled function are traced (tangents equal
  eager and torch.func.jvp); a dual tensor passed in (or read from outside) is a graph break with
  a stated reason, also when a program was already compiled for plain tensors.
- Saved-tensor hooks and anomaly mode: custom hooks and detect_anomaly make the call run
  eagerly with a warning (CompileError with fullgraph=True), checked at every call so a program
  compiled before the context was entered is not reused; save_on_cpu is transparent and compiles.
- Profiler: a compiled call is one "compiled <name>" row; ops recorded while tracing are not rows.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tracegrad as tg  # noqa: E402
import tracegrad.autograd.forward_ad as fwAD  # noqa: E402
from tracegrad.autograd import functional as AF  # noqa: E402
from tracegrad.autograd.graph import disable_saved_tensors_hooks, save_on_cpu, saved_tensors_hooks  # noqa: E402
from tracegrad.compiler import CompileError  # noqa: E402

BACKENDS = ["interpreter", "c"]
X = np.linspace(0.1, 1.0, 4)
V = np.array([1.0, -2.0, 0.5, 3.0])


def scalar_fn(lib):
    return lambda x: (lib.sin(x) * x * x).sum()


def vector_fn(lib):
    return lambda x: lib.sin(x) * x


def to_np(r):
    if isinstance(r, (tuple, list)):
        return [to_np(e) for e in r]
    return r.detach().numpy() if hasattr(r, "detach") else np.asarray(r)


def close(a, b, tol=1e-10):
    a, b = to_np(a), to_np(b)
    if isinstance(a, list):
        assert len(a) == len(b)
        for p, q in zip(a, b):
            close(p, q, tol)
    else:
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


# name -> call(lib, functional module, x, v)
CALLS = {
    "jacobian": lambda lib, F, x, v: F.jacobian(vector_fn(lib), x),
    "hessian": lambda lib, F, x, v: F.hessian(scalar_fn(lib), x),
    "hvp": lambda lib, F, x, v: F.hvp(scalar_fn(lib), x, v),
    "vhp": lambda lib, F, x, v: F.vhp(scalar_fn(lib), x, v),
    "vjp": lambda lib, F, x, v: F.vjp(vector_fn(lib), x, v),
    "jvp": lambda lib, F, x, v: F.jvp(vector_fn(lib), x, v),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(CALLS))
def test_functional_api_captured_whole(name, backend):
    call = CALLS[name]
    compiled = tg.compile(lambda x, v: call(tg, AF, x, v), backend=backend, fullgraph=True)
    x, v = tg.tensor(X), tg.tensor(V)
    got = compiled(x, v)
    assert compiled.breaks == [] and len(compiled.programs) == 1
    close(got, call(tg, AF, x, v))
    close(got, call(torch, torch.autograd.functional, torch.tensor(X), torch.tensor(V)))
    close(compiled(tg.tensor(2 * X), v), call(tg, AF, tg.tensor(2 * X), v))  # reused, not stale
    assert len(compiled.programs) == 1


def test_jacobian_of_two_inputs_and_jvp_double_vjp_traces():
    """Tuple inputs; jvp is the double-vjp trick: tg.explain sees one graph, no break."""
    def f(a, b):
        return AF.jacobian(lambda p, q: (p * q.exp()).sum(0), (a, b))

    a, b = np.arange(6.0).reshape(3, 2) / 5, np.array([0.3, -0.2])
    got = tg.compile(f, backend="interpreter", fullgraph=True)(tg.tensor(a), tg.tensor(b))
    want = torch.autograd.functional.jacobian(lambda p, q: (p * q.exp()).sum(0),
                                              (torch.tensor(a), torch.tensor(b)))
    close(got, want)
    report = tg.explain(lambda x, v: AF.jvp(vector_fn(tg), x, v)[1], tg.tensor(X), tg.tensor(V))
    assert report.graph_count == 1 and report.graph_break_count == 0


# ----------------------------------------------------------------------------- forward-mode AD
def _tangent_inside(x, v):
    with fwAD.dual_level():
        y = vector_fn(tg)(fwAD.make_dual(x, v))
        return fwAD.unpack_dual(y).tangent


@pytest.mark.parametrize("backend", BACKENDS)
def test_dual_level_inside_compiled_function_is_traced(backend):
    compiled = tg.compile(_tangent_inside, backend=backend, fullgraph=True)
    got = compiled(tg.tensor(X), tg.tensor(V))
    assert compiled.breaks == []
    close(got, _tangent_inside(tg.tensor(X), tg.tensor(V)))
    _, want = torch.func.jvp(vector_fn(torch), (torch.tensor(X),), (torch.tensor(V),))
    close(got, want)


def test_dual_tensor_argument_breaks_never_drops_the_tangent():
    f = vector_fn(tg)
    want = np.cos(X) * X * V + np.sin(X) * V
    with fwAD.dual_level():
        d = fwAD.make_dual(tg.tensor(X), tg.tensor(V))
        with pytest.raises(CompileError, match="argument x is a forward-AD dual tensor"):
            tg.compile(f, backend="interpreter", fullgraph=True)(d)
        compiled = tg.compile(f, backend="interpreter")
        compiled(tg.tensor(X))  # a program for plain tensors exists first
        with pytest.warns(RuntimeWarning, match="forward-AD dual tensor.*running this call eagerly"):
            out = compiled(d)
        close(fwAD.unpack_dual(out).tangent, want)
        close(compiled(tg.tensor(X)), f(tg.tensor(X)))  # plain calls still use the program
        assert len(compiled.programs) == 1


def test_dual_tensor_read_from_outside_breaks():
    with fwAD.dual_level():
        d = fwAD.make_dual(tg.tensor(X), tg.tensor(V))
        with pytest.raises(CompileError, match="reads a forward-AD dual tensor"):
            tg.compile(lambda y: d * y, backend="interpreter", fullgraph=True)(tg.tensor(X))


# ----------------------------------------------------------------------------- saved-tensor hooks
def _loss(a):
    return (a.sin() * a).sum()


def _grad_with_hooks(fn, a, count):
    """Run fn(a).backward() under counting hooks; return a.grad as NumPy."""
    def pack(t):
        count[0] += 1
        return t

    def unpack(t):
        count[1] += 1
        return t

    a.grad = None
    with saved_tensors_hooks(pack, unpack):
        fn(a).backward()
    return a.grad.numpy().copy()


def test_custom_hooks_run_eagerly_even_after_a_program_exists():
    a = tg.tensor(X, requires_grad=True)
    eager_count = [0, 0]
    want = _grad_with_hooks(_loss, a, eager_count)
    ta = torch.tensor(X, requires_grad=True)
    torch_count = [0, 0]
    with torch.autograd.graph.saved_tensors_hooks(
            lambda t: torch_count.__setitem__(0, torch_count[0] + 1) or t,
            lambda t: torch_count.__setitem__(1, torch_count[1] + 1) or t):
        (ta.sin() * ta).sum().backward()
    assert eager_count == torch_count == [3, 3]
    close(want, ta.grad)

    compiled = tg.compile(_loss, backend="interpreter")
    compiled(a).backward()  # compiled without hooks
    count = [0, 0]
    with pytest.warns(RuntimeWarning, match="saved_tensors_hooks are active"):
        got = _grad_with_hooks(compiled, a, count)
    assert count == eager_count  # not a stale program that skips the hooks
    close(got, want)
    with pytest.raises(CompileError, match="saved_tensors_hooks are active"):
        _grad_with_hooks(tg.compile(_loss, backend="interpreter", fullgraph=True), a, [0, 0])


def test_hooks_entered_inside_the_compiled_function_break_while_tracing():
    def f(a):
        with saved_tensors_hooks(lambda t: t, lambda t: t):
            return _loss(a)

    with pytest.raises(CompileError, match="saved_tensors_hooks are active"):
        tg.compile(f, backend="interpreter", fullgraph=True)(tg.tensor(X, requires_grad=True))


@pytest.mark.parametrize("backend", BACKENDS)
def test_save_on_cpu_is_transparent_and_compiles(backend):
    compiled = tg.compile(_loss, backend=backend, fullgraph=True)
    a = tg.tensor(X, requires_grad=True)
    with save_on_cpu():
        compiled(a).backward()
        compiled(a).backward()
    ta = torch.tensor(X, requires_grad=True)
    with torch.autograd.graph.save_on_cpu():
        for _ in range(2):
            (ta.sin() * ta).sum().backward()
    close(a.grad, ta.grad)
    assert compiled.breaks == [] and len(compiled.programs) == 1 and compiled.programs[0].calls == 2


def test_disable_saved_tensors_hooks_error_is_not_skipped_by_a_program():
    compiled = tg.compile(_loss, backend="interpreter")
    a = tg.tensor(X, requires_grad=True)
    compiled(a)
    with disable_saved_tensors_hooks("no hooks here"):
        close(compiled(a), _loss(a))  # no hooks on the stack: nothing is disabled, still compiled
    assert compiled.breaks == []
    with save_on_cpu(), disable_saved_tensors_hooks("no hooks here"):
        with pytest.raises(RuntimeError, match="no hooks here"):
            _loss(a)
        with pytest.warns(RuntimeWarning, match="disable_saved_tensors_hooks"), \
                pytest.raises(RuntimeError, match="no hooks here"):
            compiled(a)


# ----------------------------------------------------------------------------- anomaly mode
def _nan_grad(x):
    return (x * 0 + (x * 0).sqrt()).sum()


def test_anomaly_mode_runs_eagerly_and_names_the_op():
    compiled = tg.compile(_nan_grad, backend="interpreter")
    x = tg.tensor([0.0, 1.0], requires_grad=True)
    compiled(x).backward()  # a program exists; outside anomaly mode NaN grads pass silently
    assert compiled.breaks == []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with tg.autograd.detect_anomaly():
            out = compiled(x)
            with pytest.raises(RuntimeError, match="Function 'MulBackward0' returned nan values "
                                                   "in its 0th output."):
                out.backward()
    tx = torch.tensor([0.0, 1.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.autograd.detect_anomaly(), pytest.raises(RuntimeError, match="MulBackward0"):
            _nan_grad(tx).backward()
    assert "anomaly detection is enabled" in compiled.breaks[-1][0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with tg.autograd.detect_anomaly(), pytest.raises(CompileError, match="anomaly detection"):
            tg.compile(_nan_grad, backend="interpreter", fullgraph=True)(x)
    with tg.autograd.set_detect_anomaly(False):
        compiled(x)
    assert len(compiled.programs) == 1 and compiled.programs[0].calls == 2


# ----------------------------------------------------------------------------- profiler
def test_profiler_shows_a_compiled_call_as_one_row():
    compiled = tg.compile(vector_fn(tg), backend="interpreter")
    x = tg.tensor(X)
    with tg.autograd.profiler.profile() as prof:
        compiled(x)  # traced then run: the traced ops are not rows
        compiled(x)
    keys = {e.key: e.count for e in prof.key_averages()}
    assert keys.get("compiled <lambda>") == 2, keys
    assert "sin" not in keys and "mul" not in keys, keys
