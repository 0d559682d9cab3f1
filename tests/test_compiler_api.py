"""tg.compiler's torch.compiler helpers: reset, is_compiling, disable, allow_in_graph,
assume_constant_result, list_backends."""
import warnings

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.compiler import CompileError


def test_is_compiling_inside_a_trace_only():
    seen = []

    @tg.compile
    def f(x):
        seen.append(tg.compiler.is_compiling())
        return x + 1

    # (the append changes state the function reads: the traced call runs once, then eagerly)
    with pytest.warns(RuntimeWarning, match="changes closure variable seen"):
        f(tg.ones(2))
    assert seen == [True] and not tg.compiler.is_compiling() and tg.compiler.is_dynamo_compiling is tg.compiler.is_compiling


def test_disable_runs_the_caller_eagerly_and_fullgraph_refuses():
    calls = []

    @tg.compiler.disable(reason="it logs")
    def log(x):
        calls.append(float(x.sum()))
        return x

    f = tg.compile(lambda x: log(x * 2) + 1)
    with pytest.warns(RuntimeWarning, match="log is marked tg.compiler.disable \\(it logs\\)"):
        out = f(tg.ones(3))
    np.testing.assert_array_equal(out.numpy(), [3.0, 3.0, 3.0])
    assert calls == [6.0]
    with pytest.raises(CompileError, match="marked tg.compiler.disable"):
        tg.compile(lambda x: log(x), fullgraph=True)(tg.ones(1))


def test_reset_forgets_every_program():
    g = tg.compile(lambda x: x * 2)
    g(tg.ones(2))
    assert len(g.programs) == 1
    tg.compiler.reset()
    assert g.programs == []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(g(tg.ones(2)).numpy(), [2.0, 2.0])
    assert len(g.programs) == 1


def test_pass_through_decorators_and_backends():
    fn = lambda x: x
    assert tg.compiler.allow_in_graph(fn) is fn and tg.compiler.assume_constant_result(fn) is fn
    assert "c" in tg.compiler.list_backends() and "interpreter" in tg.compiler.list_backends()
