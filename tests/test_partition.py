"""The forward/backward partition: the cost model, the min-cut choice of saved values (never
more bytes than the saved-tensor annotations; recomputing only cheap ops), the saved report,
and gradients equal to eager under both strategies."""
from __future__ import annotations

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.nn.functional
from tracegrad.compiler.ir.graph import Graph
from tracegrad.compiler.passes import cost_model, mincut
from tracegrad.ops import index as _index  # noqa: F401
from tracegrad.ops import samples
from tracegrad.ops.registry import REGISTRY, dispatch


@pytest.fixture(autouse=True)
def _verify(monkeypatch):
    monkeypatch.setenv("TRACEGRAD_VERIFY", "1")


def _prog(fn, *args, strategy="mincut"):
    return tg.compile(fn, backend="interpreter", options={"partition": strategy}).inspect(*args)


# ----------------------------------------------------------------------------- cost model
def test_save_cost_is_bytes():
    g = Graph()
    assert cost_model.save_cost(g.add_input((4, 8), tg.float32, "x")) == 128
    assert cost_model.save_cost(g.add_input((4, 8), tg.float64, "y")) == 256
    assert cost_model.save_cost(g.add_input((0, 8), tg.float32, "z")) == 0


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_can_recompute_only_cheap_deterministic_ops(name):
    op = REGISTRY[name]

    class N:
        pass

    n = N()
    n.op = op
    expected = op.kind in ("elementwise", "movement") and not op.random
    assert cost_model.can_recompute(n) == expected
    if name in ("matmul", "sum", "amax", "gather", "unfold2d", "dropout_mask"):
        assert not cost_model.can_recompute(n)
    if name in ("exp", "mul", "reshape", "expand", "permute", "where", "cast"):
        assert cost_model.can_recompute(n)


def test_capacity_tie_break_never_outweighs_a_byte():
    g = Graph()
    small = g.add_input((1,), tg.bool, "a")  # 1 byte
    n = 1000
    assert cost_model.capacity(small, n) > n * cost_model.TIE_BREAK  # n ties < one byte
    big = g.add_input((2,), tg.bool, "b")
    assert cost_model.capacity(big, n) > cost_model.capacity(small, n) + n * cost_model.TIE_BREAK


# ----------------------------------------------------------------------------- choices
def test_min_cut_recomputes_a_cheap_chain():
    x = tg.ones(256, requires_grad=True)
    prog = _prog(lambda x: x.cos().sin().sum(), x)
    assert prog.saved_choice == "min-cut" and prog.annotation_bytes == 2048
    assert [(s.name, s.shape, s.bytes) for s in prog.saved] == [("%0", (256,), 1024)]
    assert prog.backward.inputs[0].label == "saved %0"
    assert [n.op.name for n in prog.backward.nodes].count("cos") == 2  # cos(x) recomputed


def test_min_cut_saves_the_small_value_before_a_broadcast():
    x = tg.ones(10, requires_grad=True)
    prog = _prog(lambda x: x.expand(100, 10).exp().sum(), x)
    assert prog.saved_choice == "min-cut"
    assert prog.saved_bytes == 40 and prog.annotation_bytes == 4000


def test_equal_bytes_keep_the_annotations():
    prog = _prog(lambda x, w: (x @ w).tanh().sum(), tg.ones(4, 3), tg.ones(3, 2, requires_grad=True))
    assert prog.saved_choice == "annotations" and prog.saved_bytes == prog.annotation_bytes


def test_annotation_strategy_option():
    x = tg.ones(256, requires_grad=True)
    prog = _prog(lambda x: x.cos().sin().sum(), x, strategy="annotations")
    assert prog.saved_choice == "annotations" and prog.saved_bytes == 2048
    assert [n.op.name for n in prog.backward.nodes].count("cos") == 1  # the VJP's cos only
    with pytest.raises(ValueError, match="unknown partition strategy 'greedy'"):
        _prog(lambda x: x.sin().sum(), x, strategy="greedy")


def test_matmul_is_never_recomputed():
    g = Graph("chain")
    x = g.add_input((8, 8), tg.float32, "arg x")
    gr = g.add_input((8, 8), tg.float32, "grad")
    m = g.add_node(REGISTRY["matmul"], [x, x], {}, (8, 8), tg.float32)
    e = g.add_node(REGISTRY["exp"], [m], {}, (8, 8), tg.float32)
    g.add_node(REGISTRY["mul"], [gr, e], {}, (8, 8), tg.float32, phase="backward")
    out = g.nodes[-1].out
    saved = mincut.choose_saved(g, [gr], [out])
    assert saved == [m] or saved == [e]  # equal bytes either way, but never x (recompute matmul)
    assert x not in saved


def test_saved_report_text_reflects_the_choice():
    x = tg.ones(10, requires_grad=True)
    prog = _prog(lambda x: x.expand(100, 10).exp().sum(), x)
    report = prog.saved_report().splitlines()
    assert report[0] == ("saved for backward (min-cut): 1 value, 40 bytes "
                         "(the saved-tensor annotations: 4000 bytes)")
    assert report[1] == "  %0: f32[10] (40 bytes)"
    assert str(prog).endswith(prog.saved_report())
    assert prog.forward.saved == prog.forward.outputs[1:]


# ----------------------------------------------------------------------------- over the registry
CASES = [(n, k) for n in sorted(REGISTRY) for k in range(len(samples.cases(REGISTRY[n])))
         if n != "nonzero" and REGISTRY[n].differentiable]


@pytest.mark.parametrize("name,k", CASES, ids=[f"{n}-{k}" for n, k in CASES])
def test_never_more_bytes_than_annotations_and_same_gradients(name, k):
    op = REGISTRY[name]
    arrays, attrs = samples.cases(op, np.float64)[k]
    diff = set(samples.differentiable_positions(op, arrays))
    if not diff:
        pytest.skip("no differentiable input")

    def f(*ts):  # a cheap epilogue gives the min-cut something to recompute
        return (dispatch(op, *ts, **attrs).sin() * 2.0).exp().sum()

    grads = {}
    for strategy in ("annotations", "mincut"):
        ts = [tg.tensor(np.array(a, copy=True)).requires_grad_(i in diff) for i, a in enumerate(arrays)]
        cf = tg.compile(f, backend="interpreter", fullgraph=True, options={"partition": strategy})
        cf(*ts).backward()
        prog = cf.programs[0]
        assert prog.saved_bytes <= prog.annotation_bytes
        grads[strategy] = [t.grad.numpy() for t in ts if t.grad is not None]
    ts = [tg.tensor(np.array(a, copy=True)).requires_grad_(i in diff) for i, a in enumerate(arrays)]
    f(*ts).backward()
    eager = [t.grad.numpy() for t in ts if t.grad is not None]
    for strategy, got in grads.items():
        assert len(got) == len(eager)
        for g, e in zip(got, eager):
            np.testing.assert_allclose(g, e, rtol=1e-9, atol=1e-9, err_msg=f"{name} {strategy}")
