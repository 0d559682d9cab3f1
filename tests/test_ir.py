"""The IR: exact listings of small programs, the verifier's checks, DOT export, the networkx
view, cloning and renumbering."""
from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

import tracegrad as tg
from compile_oracle import random_inputs, run_graph
from tracegrad.compiler.ir.graph import Graph, IRError, Value
from tracegrad.ops.registry import REGISTRY, OpDef


@pytest.fixture(autouse=True)
def _verify(monkeypatch):
    monkeypatch.setenv("TRACEGRAD_VERIFY", "1")


def _inspect(fn, *args, **options):
    return tg.compile(fn, backend="interpreter", options=options or None).inspect(*args)


# ----------------------------------------------------------------------------- exact listings
def test_listing_of_a_differentiated_function():
    def f(x, w):
        return (x @ w).tanh().sum()

    prog = _inspect(f, tg.ones(4, 3), tg.ones(3, 2, requires_grad=True))
    assert str(prog) == """\
f_forward(%0:f32[4,3] arg x, %1:f32[3,2] arg w):
  %2:f32[4,2] = matmul %0 %1
  %3:f32[4,2] = tanh %2                      # saved
  %4:f32[] = sum %3 dim=(0, 1) keepdim=False
  return %4
  save %0, %3

f_backward(%0:f32[4,3] saved %0, %1:f32[4,2] saved %3, %2:f32[] grad of %4):
  %3:f32[4,2] = expand %2 shape=(4, 2)
  %4:f32[4,2] = mul %1 %1
  %5:f32[4,2] = sub 1.0:f32 %4
  %6:f32[4,2] = mul %3 %5
  %7:f32[3,4] = permute %0 dims=(1, 0)
  %8:f32[3,2] = matmul %7 %6
  return %8

saved for backward (annotations): 2 values, 80 bytes (the saved-tensor annotations: 80 bytes)
  %0: f32[4, 3] (48 bytes)
  %3: f32[4, 2] (32 bytes)"""
    assert [(s.name, s.shape, s.dtype, s.bytes) for s in prog.saved] == [
        ("%0", (4, 3), tg.float32, 48), ("%3", (4, 2), tg.float32, 32)]


W = tg.ones(3, 2, requires_grad=True)
B = tg.zeros(2, requires_grad=True)


def sgd(x, y):
    loss = ((x @ W + B - y) ** 2).mean()
    loss.backward()
    with tg.no_grad():
        W.sub_(0.1 * W.grad)
        B.sub_(0.1 * B.grad)
    W.grad = None
    B.grad = None
    return loss


def test_listing_of_an_sgd_step_with_lifted_parameters_and_write_backs():
    prog = _inspect(sgd, tg.ones(4, 3), tg.ones(4, 2))
    assert prog.forward is None and prog.saved == []
    assert str(prog) == """\
sgd(%0:f32[4,3] arg x, %1:f32[4,2] arg y, %2:f32[3,2] lifted W, %3:f32[2] lifted B):
  %4:f32[4,2] = matmul %0 %2
  %5:f32[4,2] = add %4 %3
  %6:f32[4,2] = sub %5 %1
  %7:f32[4,2] = mul %6 %6
  %8:f32[] = sum %7 dim=(0, 1) keepdim=False
  %9:f32[] = div %8 8.0:f32
  %10:f32[4,2] = mul 0.25:f32 %6
  %11:f32[2] = sum %10 dim=(0,) keepdim=False
  %12:f32[3,4] = permute %0 dims=(1, 0)
  %13:f32[3,2] = matmul %12 %10
  %14:f32[3,2] = mul 0.1:f32 %13
  %15:f32[3,2] = sub %2 %14
  %16:f32[2] = mul 0.1:f32 %11
  %17:f32[2] = sub %3 %16
  return %9
  W <- %15
  B <- %17"""


def test_listing_with_constants_views_and_an_argument_write_back():
    def g(x, n):
        y = x.reshape(2, 3).permute(1, 0)  # a view of x: it sees the in-place update below
        x.mul_(n)
        return y.sum(0), tg.zeros(2)

    assert str(_inspect(g, tg.ones(6), 3).graph) == """\
g(%0:f32[6] arg x):
  %1:f32[2] = const [0.0, 0.0]
  %2:f32[6] = mul %0 3.0:f32
  %3:f32[2,3] = reshape %2 shape=(2, 3)
  %4:f32[3,2] = permute %3 dims=(1, 0)
  %5:f32[2] = sum %4 dim=(0,) keepdim=False
  return %5, %1
  x <- %2"""


def test_listing_of_new_grad_and_grad_write_backs():
    w = tg.ones(2, requires_grad=True)
    w.grad = tg.ones(2)
    v = tg.ones(2, requires_grad=True)

    def h(x):
        (w * x).sum().backward()
        v.grad = x * 2
        return x

    graph = _inspect(h, tg.ones(2)).graph
    assert str(graph) == """\
h(%0:f32[2] arg x, %1:f32[2] lifted w.grad):
  %2:f32[2] = add %1 %0
  %3:f32[2] = mul %0 2.0:f32
  return ()
  w.grad <- %2
  v.grad = %3"""


def test_listing_of_literals_of_every_dtype():
    g = Graph("lits")
    x = g.add_input((2,), tg.int64, "arg i")
    y = g.add_node(REGISTRY["add"], [x, g.literal(3, tg.int64)], {}, (2,), tg.int64)
    b = g.add_node(REGISTRY["lt"], [y, g.literal(4, tg.int64)], {}, (2,), tg.bool)
    z = g.add_node(REGISTRY["logical_and"], [b, g.literal(True, tg.bool)], {}, (2,), tg.bool)
    h = g.add_node(REGISTRY["mul"], [g.const(np.arange(2.0), tg.float64), g.literal(0.1, tg.float64)],
                   {}, (2,), tg.float64)
    g.outputs = [z, h]
    g.renumber()
    assert g.verify()
    assert str(g) == """\
lits(%0:i64[2] arg i):
  %1:f64[2] = const [0.0, 1.0]
  %2:i64[2] = add %0 3:i64
  %3:b8[2] = lt %2 4:i64
  %4:b8[2] = logical_and %3 True:b8
  %5:f64[2] = mul %1 0.1:f64
  return %4, %5"""


# ----------------------------------------------------------------------------- verifier
def _small():
    g = Graph("small")
    x = g.add_input((3,), tg.float32, "arg x")
    y = g.add_node(REGISTRY["exp"], [x], {}, (3,), tg.float32)
    z = g.add_node(REGISTRY["mul"], [y, x], {}, (3,), tg.float32)
    g.outputs = [z]
    return g.renumber(), x, y, z


def test_verifier_accepts_a_good_graph():
    assert _small()[0].verify()


@pytest.mark.parametrize("break_it,message", [
    (lambda g, x, y, z: g.nodes.reverse(), "before it is defined"),
    (lambda g, x, y, z: setattr(z, "shape", (4,)), "recorded type f32\\[4\\] but the op infers f32\\[3\\]"),
    (lambda g, x, y, z: setattr(y, "dtype", tg.float64), "recorded type f64"),
    (lambda g, x, y, z: g.nodes.append(g.nodes[0]), "defined twice"),
    (lambda g, x, y, z: setattr(g, "outputs", [Value((3,), tg.float32)]), "not defined in the graph"),
    (lambda g, x, y, z: g.inputs.append(x), "listed twice"),
    (lambda g, x, y, z: setattr(z.node, "inputs", [y, g.literal(1.0, tg.float64)]), "rejects its inputs"),
    (lambda g, x, y, z: setattr(g, "saved", [y]), "saved values must be the last outputs"),
    (lambda g, x, y, z: setattr(z.node, "phase", "sideways"), "unknown phase"),
    (lambda g, x, y, z: setattr(y.node, "op", OpDef("exp", REGISTRY["exp"].infer, np.exp)),
     "not the registered op"),
])
def test_verifier_names_the_problem(break_it, message):
    g, x, y, z = _small()
    break_it(g, x, y, z)
    with pytest.raises(IRError, match=message):
        g.verify()


def test_verifier_checks_constants_and_literals():
    g, x, y, z = _small()
    bad = g.literal(1.0, tg.float32)
    bad.data = np.float64(1.0)
    z.node.inputs = [y, bad]
    with pytest.raises(IRError, match="literal .* is not a 0-d f32 scalar"):
        g.verify()
    g, x, y, z = _small()
    c = g.const(np.ones(3, np.float32), tg.float32)
    c.data = np.ones(2, np.float32)
    z.node.inputs = [y, c]
    with pytest.raises(IRError, match="holds data that is not f32\\[3\\]"):
        g.verify()


# ----------------------------------------------------------------------------- views of the graph
def test_dot_export_marks_inputs_saved_values_outputs_and_write_backs():
    prog = _inspect(lambda x: x.exp().sum(), tg.ones(3, requires_grad=True), partition="annotations")
    dot = prog.to_dot()
    assert dot.startswith('digraph "<lambda>_forward" {') and dot.endswith("}")
    assert 'v0 [shape=box, label="%0 arg x\\nf32[3]"];' in dot
    assert 'label="%1 = exp\\nf32[3]", style=filled' in dot  # saved
    assert 'out1 [shape=plaintext, label="save 0"];' in dot
    g = _inspect(sgd, tg.ones(4, 3), tg.ones(4, 2)).graph
    dot = g.to_dot()
    assert 'wb0 [shape=plaintext, label="W"];' in dot and "-> wb0 [style=dashed];" in dot
    assert 'label="%10 = mul 0.25:f32\\nf32[4,2]"' in dot  # literals shown in the node


def test_networkx_view():
    g = _inspect(sgd, tg.ones(4, 3), tg.ones(4, 2)).graph
    nxg = g.to_networkx()
    assert nx.is_directed_acyclic_graph(nxg)
    assert nxg.number_of_nodes() == len(g.inputs) + len(g.nodes)
    assert nxg.nodes[4]["op"] == "matmul" and nxg.nodes[4]["bytes"] == 32
    assert set(nxg.predecessors(4)) == {0, 2}
    order = list(nx.topological_sort(nxg))
    assert order.index(13) > order.index(12)


def test_clone_shares_nothing_and_computes_the_same():
    g = _inspect(sgd, tg.ones(4, 3), tg.ones(4, 2)).graph
    c = g.clone()
    assert str(c) == str(g)
    assert not {id(v) for v in c.inputs} & {id(v) for v in g.inputs}
    arrays = random_inputs(g)
    for a, b in zip(run_graph(c, arrays), run_graph(g, arrays)):
        np.testing.assert_array_equal(a, b)


def test_op_counts_and_constants_in_outputs():
    g = _inspect(lambda x: (x + 1, tg.zeros(2)), tg.ones(2)).graph
    assert g.op_counts() == {"add": 1}
    assert [c.type_str() for c in g.constants()] == ["f32[2]"]
    assert g.constants()[0].data.flags.writeable is False
