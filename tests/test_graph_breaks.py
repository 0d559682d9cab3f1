"""Graph breaks: every reason a function cannot be captured gives one warning naming the reason
and the user's source line, the whole function then runs eagerly with the right results, and
``fullgraph=True`` raises ``tg.compiler.CompileError`` with the same reason and line."""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.nn.functional as F
from compile_oracle import assert_tree_close, to_np


class _NumpyForward(tg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return tg.tensor(np.sin(x.numpy()))  # untraceable forward body

    @staticmethod
    def backward(ctx, g):
        return g


class _NumpyBackward(tg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * tg.tensor(np.cos(x.numpy()))  # untraceable backward body


def _mask_sum(x):
    return x[x > 0].sum()


OUTSIDE = tg.tensor([1.0, 2.0, 3.0, 4.0])

# name: (function of x, regex of the reason, a piece of the source line it must name)
BREAKS = {
    "bool": (lambda x: x * 2 if x.sum() > 0 else x, r"bool\(\) on a traced tensor \(Python control flow",
             "if x.sum() > 0"),
    "item": (lambda x: x * x.sum().item(), r"\.item\(\) on a traced tensor", "x.sum().item()"),
    "float": (lambda x: x * float(x[0]), r"\.item\(\) on a traced tensor", "float(x[0])"),
    "numpy": (lambda x: tg.tensor(x.detach().numpy() * 2), r"\.numpy\(\) on a traced tensor",
              "x.detach().numpy() * 2"),
    "tolist": (lambda x: sum(x.tolist()), r"\.tolist\(\) on a traced tensor", "sum(x.tolist())"),
    "asarray": (lambda x: tg.tensor(np.asarray(x) + 1), r"np\.asarray\(\) on a traced tensor",
                "np.asarray(x) + 1"),
    "numpy_ufunc": (lambda x: tg.tensor(np.exp(x)), r"np\.asarray\(\) on a traced tensor", "np.exp(x)"),
    "mask_index": (_mask_sum, r"boolean mask indexing \(the output shape depends on the data\)",
                   "x[x > 0].sum()"),
    "nonzero": (lambda x: x.nonzero().sum(), r"nonzero", "x.nonzero().sum()"),
    "one_hot_data_dependent": (lambda x: F.one_hot((x > 0).long()).sum(), r"\.item\(\) on a traced",
                               "F.one_hot((x > 0).long())"),
    "random": (lambda x: x + tg.randn(4), r"random tensor creation", "tg.randn(4)"),
    "custom_forward": (lambda x: _NumpyForward.apply(x).sum(), r"\.numpy\(\) on a traced tensor",
                       "np.sin(x.numpy())"),
    "custom_backward": (lambda x: tg.autograd.grad(_NumpyBackward.apply(x).sum(), x)[0],
                        r"\.numpy\(\) on a traced tensor", "np.cos(x.numpy())"),
    "outside_numpy": (lambda x: x + tg.tensor(OUTSIDE.numpy()[::-1].copy()),
                      r"\.numpy\(\) on a tensor read from outside the function", "OUTSIDE.numpy()"),
    "nn_init": (lambda x: x + tg.nn.init.normal_(tg.empty(4)), r"nn\.init", "tg.nn.init.normal_"),
}


def _x():
    return tg.tensor([0.5, -1.0, 2.0, -0.25], requires_grad=True)


@pytest.mark.parametrize("name", sorted(BREAKS))
def test_break_warns_once_and_runs_eagerly(name):
    fn, reason, source = BREAKS[name]
    cf = tg.compile(fn, backend="interpreter")
    tg.manual_seed(0)
    with pytest.warns(RuntimeWarning) as record:
        got = cf(_x())
    messages = [str(w.message) for w in record if "graph break" in str(w.message)]
    assert len(messages) == 1, messages
    assert re.search(reason, messages[0]), messages[0]
    assert "test_graph_breaks.py:" in messages[0] and source in messages[0], messages[0]
    assert "running the whole function eagerly" in messages[0]
    tg.manual_seed(0)
    want = fn(_x())
    if name not in ("random", "nn_init"):
        assert_tree_close(to_np(got), to_np(want), name)
    assert len(cf.breaks) == 1 and not cf.programs
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # later calls: eager, silently
        cf(_x())


@pytest.mark.parametrize("name", sorted(BREAKS))
def test_fullgraph_raises_compile_error_with_the_reason(name):
    fn, reason, source = BREAKS[name]
    cf = tg.compile(fn, backend="interpreter", fullgraph=True)
    with pytest.raises(tg.compiler.CompileError, match=reason) as info:
        cf(_x())
    assert source in str(info.value)


@pytest.mark.parametrize("name", ["bool", "mask_index", "custom_backward"])
def test_explain_reports_the_break(name):
    fn, reason, source = BREAKS[name]
    report = tg.explain(fn, _x())
    assert report.graph_count == 0 and report.graph_break_count == 1
    assert re.search(reason, str(report))
    assert source in report.break_reasons[0][1]


def test_break_in_backward_after_the_call_falls_back_to_eager():
    x = _x()
    cf = tg.compile(lambda x: _NumpyBackward.apply(x).sum(), backend="interpreter")
    with pytest.warns(RuntimeWarning, match="np.cos"):
        cf(x).backward()
    np.testing.assert_allclose(x.grad.numpy(), np.cos(x.detach().numpy()), rtol=1e-6)


def test_large_numpy_argument_breaks():
    cf = tg.compile(lambda x, a: x + tg.tensor(a).sum(), backend="interpreter", fullgraph=True)
    with pytest.raises(tg.compiler.CompileError, match="argument a is a NumPy array"):
        cf(tg.ones(2), np.ones(10_000, np.float32))


def test_small_numpy_argument_is_guarded_by_value():
    cf = tg.compile(lambda x, a: x + tg.tensor(a), backend="interpreter", fullgraph=True)
    a = np.array([1.0, 2.0], np.float32)
    assert cf(tg.zeros(2), a).tolist() == [1, 2]
    a[0] = 5
    assert cf(tg.zeros(2), a).tolist() == [5, 2]
    assert len(cf.programs) == 2


def test_scalar_read_of_a_tensor_modified_in_the_function_breaks():
    step = tg.zeros(())

    def f(x):
        step.add_(1)
        return x * step.item()

    with pytest.raises(tg.compiler.CompileError, match="modified in place"):
        tg.compile(f, backend="interpreter", fullgraph=True)(tg.ones(2))


def test_optimizer_state_allocated_inside_breaks():
    w = tg.nn.Parameter(tg.ones(2))

    def step():
        opt = tg.optim.SGD([w], lr=0.1, momentum=0.9)
        (w * w).sum().backward()
        opt.step()

    with pytest.raises(tg.compiler.CompileError, match="state 'momentum_buffer' allocated inside"):
        tg.compile(step, backend="interpreter", fullgraph=True)()


def test_breaks_log_topic(monkeypatch, caplog):
    import logging

    monkeypatch.setenv("TRACEGRAD_LOG", "breaks")
    cf = tg.compile(BREAKS["item"][0], backend="interpreter")
    with caplog.at_level(logging.INFO, logger="tracegrad"), pytest.warns(RuntimeWarning):
        cf(_x())
    assert "breaks] tg.compile: graph break in <lambda>: .item() on a traced tensor" in caplog.text


def test_python_reads_of_constants_made_in_the_function_need_no_break():
    """``.tolist()``, ``.item()`` and ``bool()`` of a tensor made from literals inside the
    function read its data while tracing (the same at every trace); of an argument, or of a
    value computed from one, they still break the graph."""
    def f(x):
        table = tg.tensor([2.0, 3.0])
        scale = table.tolist()[1] + tg.tensor(0.5).item()
        return x * scale if tg.tensor(1) else x

    compiled = tg.compile(f, backend="c", fullgraph=True)
    assert compiled(tg.ones(2)).tolist() == [3.5, 3.5]
    with pytest.raises(tg.compiler.CompileError, match=r"\.item\(\) on a traced tensor"):
        tg.compile(lambda x: x * (x.sum() + tg.tensor(1.0)).item(), backend="c", fullgraph=True)(tg.ones(2))


def test_outputs_whose_backward_was_freed_inside_compile_and_raise_at_backward():
    """An output that requires grad through values an inner ``autograd.grad`` freed: eager
    mode raises only if its backward runs, so the compiled function compiles (no graph break,
    fullgraph=True too), and that output's backward raises as eagerly."""
    w = tg.tensor([[0.5, -1.0], [2.0, 0.25]], requires_grad=True)

    def f(x):
        y = (x @ w).tanh()
        return y.sum(dim=1), tg.autograd.grad(y.sum(), [w])[0]

    x = tg.tensor([[1.0, 2.0], [-0.5, 0.3]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = tg.compile(f, backend="c", fullgraph=True)(x)
    want = f(x)
    assert_tree_close(to_np(got), to_np(want), "results")
    assert got[0].requires_grad
    for out in (want[0], got[0]):
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            out.sum().backward()
