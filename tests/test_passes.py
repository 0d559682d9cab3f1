"""IR passes: each pass on its own (verifier after it, values against the unoptimised graph),
the rules of each pass, the whole pipeline over the registry and over random programs, and
the SGD step whose listing gets visibly cleaner."""
from __future__ import annotations

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.nn.functional  # (registers the nn primitives)
from compile_oracle import random_inputs, run_both, run_graph
from tracegrad.compiler import passes
from tracegrad.compiler.ir.capture import trace_function
from tracegrad.compiler.ir.graph import Graph
from tracegrad.ops import index as _index  # noqa: F401
from tracegrad.ops import samples
from tracegrad.ops.registry import REGISTRY, dispatch

PASSES = [passes.simplify, passes.fold, passes.cse, passes.dce]


@pytest.fixture(autouse=True)
def _verify(monkeypatch):
    monkeypatch.setenv("TRACEGRAD_VERIFY", "1")


def _raw(fn, *args):
    """The graph exactly as traced (no pass has run)."""
    return trace_function(fn, args, {}).graph.renumber()


def _check_pass(p, graph, seed=0, arrays=None):
    """Run pass ``p`` on a clone; verify; same values as the original on random inputs (or on
    ``arrays``)."""
    arrays = random_inputs(graph, seed) if arrays is None else arrays
    want = run_graph(graph, arrays)
    new = graph.clone()
    passes.run_pass(p, new, verify=True)
    got = run_graph(new, arrays)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6, err_msg=p.__name__)
    return new.renumber()


def _optimised(fn, *args):
    g = _raw(fn, *args)
    return _check_pass(passes.optimize, g)


def _ops(graph):
    return [n.op.name for n in graph.nodes]


# ----------------------------------------------------------------------------- simplify
@pytest.mark.parametrize("fn,remaining", [
    (lambda x: x * 1.0 + -0.0 - 0.0, []),
    (lambda x: x + 0.0, ["add"]),  # -0.0 + 0.0 is +0.0: not an identity for floats
    (lambda x: x.to(tg.int64) + 0, ["cast"]),  # for integers it is
    (lambda x: (1.0 * x) / 1.0, []),
    (lambda x: x ** 1.0, []),
    (lambda x: x ** 2, ["mul"]),
    (lambda x: -0.0 - x, ["neg"]),
    (lambda x: 0.0 - x, ["sub"]),  # 0.0 - 0.0 is +0.0, -(0.0) is -0.0
    (lambda x: x * -1.0, ["neg"]),
    (lambda x: -(-x), []),
    (lambda x: x.reshape(6).reshape(3, 2).reshape(2, 3), []),
    (lambda x: x.reshape(3, 2).reshape(6), ["reshape"]),
    (lambda x: x.permute(1, 0).permute(1, 0), []),
    (lambda x: x.unsqueeze(0).permute(2, 0, 1).permute(1, 2, 0), ["reshape"]),
    (lambda x: x.expand(2, 3), []),
    (lambda x: x.reshape(1, 2, 3).expand(4, 2, 3), ["expand"]),
    (lambda x: x.to(tg.float32), []),
    (lambda x: x.to(tg.float64).to(tg.float32), []),
    (lambda x: x.clone(), []),
    (lambda x: tg.where(tg.tensor(True), x, x * 2), []),
    (lambda x: tg.where(x > 0, x, x), []),
    (lambda x: x.sum(dim=1, keepdim=True).reshape(2), ["sum"]),
    (lambda x: x * tg.ones(2, 3), []),  # broadcast absorption of a uniform constant
    (lambda x: x * tg.full((2, 3), 2.0).exp(), ["mul"]),  # folded to a literal first
])
def test_simplify_rules(fn, remaining):
    g = _optimised(fn, tg.ones(2, 3))
    assert _ops(g) == remaining, str(g)


def test_simplify_keeps_rewrites_that_would_change_the_type():
    g = _optimised(lambda x: x * tg.ones(4, 2, 3), tg.ones(2, 3))  # * 1 broadcasts: keep a node
    assert _ops(g) == ["expand"] and g.outputs[0].shape == (4, 2, 3)
    g = _optimised(lambda x: x.reshape(3, 2).reshape(2, 3).permute(1, 0), tg.ones(2, 3))
    assert _ops(g) == ["permute"]


def test_simplify_never_merges_a_reshape_that_moves_dims():
    # (2,) -> (2,1) -> expand (2,2) broadcasts along columns: not expand((2,), (2,2))
    g = _optimised(lambda x: x.reshape(2, 1).expand(2, 2), tg.tensor([1.0, 2.0]))
    assert _ops(g) == ["reshape", "expand"]


# ----------------------------------------------------------------------------- fold
def test_fold_literals_into_a_literal():
    g = _raw(lambda x: x * (tg.tensor(3.0) - 1.0) / 2.0, tg.ones(2))
    new = _check_pass(passes.fold, g)
    assert "sub" not in _ops(new)


def test_fold_uniform_results_become_expand_of_a_literal():
    g = _optimised(lambda x: x + tg.zeros(1000).exp(), tg.ones(1000))
    assert _ops(g) == ["add"] and g.nodes[0].inputs[1].ref() == "1.0:f32"
    g = _optimised(lambda x: (x, tg.zeros(1000).exp()), tg.ones(1000))
    assert str(g).splitlines()[1] == "  %1:f32[1000] = expand 1.0:f32 shape=(1000,)"


def test_signed_zeros_are_not_one_value():
    """0.0 and -0.0 compare equal but are two values (1 / x tells them apart): a constant or a
    folded result holding both is not uniform, in eager, interpreted and compiled code alike."""
    x = np.array([1.0, 2.0, 3.0], np.float32)

    def fn(t):
        return 1 / (tg.tensor([0.0, -0.0, 0.0]) * t), 1 / (tg.tensor([0.0, -0.0]) * 1.0 + 0.0 * t[:2])

    want = [r.numpy() for r in fn(tg.tensor(x))]
    np.testing.assert_array_equal(want[0], [np.inf, -np.inf, np.inf])
    for backend in ("interpreter", "c"):
        got = tg.compile(fn, backend=backend)(tg.tensor(x))
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.numpy(), w)


def test_fold_small_results_to_constants_and_leaves_big_ones():
    g = _optimised(lambda x: x + tg.arange(4.0).exp(), tg.ones(4))
    assert _ops(g) == ["add"] and g.nodes[0].inputs[1].kind == "const"
    big = _optimised(lambda x: x + tg.arange(10.0).reshape(10, 1).expand(10, 100), tg.ones(10, 100))
    assert _ops(big) == ["expand", "add"]  # 10 stored elements, not 1000
    assert big.nodes[0].inputs[0].shape == (10, 1)


def test_fold_and_cse_never_touch_random_ops():
    op = REGISTRY["dropout_mask"]
    g = Graph("rnd")
    seed = g.literal(5, tg.int64)  # even with a constant seed
    attrs = {"shape": (3, 4), "p": 0.25, "dtype": tg.float64}
    a = g.add_node(op, [seed], attrs, (3, 4), tg.float64)
    b = g.add_node(op, [seed], attrs, (3, 4), tg.float64)
    g.outputs = [a, b]
    passes.optimize(g, verify=True)
    assert _ops(g) == ["dropout_mask", "dropout_mask"]


# ----------------------------------------------------------------------------- cse / dce
def test_cse_merges_equal_nodes_and_keeps_different_ones():
    g = _raw(lambda x: (x.exp() + x.exp(), x.sum(0) * x.sum(1).sum(), x * 0.0, x * -0.0),
             tg.ones(2, 2))
    new = _check_pass(passes.cse, g)
    assert _ops(new).count("exp") == 1
    assert _ops(new).count("sum") == 3  # different dims are different nodes
    assert _ops(new).count("mul") == 3  # 0.0 and -0.0 are different literals


def test_cse_merges_equal_small_constants():
    g = _raw(lambda x: x + tg.tensor([1.0, 2.0]) + tg.tensor([1.0, 2.0]).exp() * 0 +
             tg.tensor([1.0, 2.0]).exp(), tg.ones(2))
    new = _check_pass(passes.cse, g)
    assert _ops(new).count("exp") == 1


def test_dce_drops_dead_nodes_but_keeps_inputs():
    def f(x, y):
        _ = (x * y).exp()
        return x + 1

    g = _raw(f, tg.ones(2), tg.ones(2))
    new = _check_pass(passes.dce, g)
    assert _ops(new) == ["add"] and len(new.inputs) == 2


# ----------------------------------------------------------------------------- whole pipeline
def _random_program(rng):
    """A random chain of cheap ops, literals and movement on a (2, 3) tensor."""
    # (the constants are drawn here, not inside the traced function: a draw there breaks the graph)
    scale, shift = float(rng.choice([1.0, 2.0, -1.0])), float(rng.choice([0.0, -0.0, 0.5]))
    choices = [
        lambda x: x * scale,
        lambda x: x + shift,
        lambda x: x - 0.0,
        lambda x: x / 1.0,
        lambda x: x.exp().tanh(),
        lambda x: x.reshape(3, 2).reshape(2, 3),
        lambda x: x.permute(1, 0).permute(1, 0),
        lambda x: x.clone(),
        lambda x: tg.where(x > 0, x, x * 0.5),
        lambda x: x * tg.ones(2, 3),
        lambda x: x + x.sum(1, keepdim=True),
        lambda x: (x ** 2).sqrt(),
        lambda x: x.to(tg.float64).to(tg.float32),
    ]
    picks = [choices[i] for i in rng.integers(0, len(choices), 6)]

    def f(x, y):
        a, b = x, y
        for k, p in enumerate(picks):
            a, b = (p(a), b) if k % 2 == 0 else (a, p(b) + a)
        return a, b

    return f


@pytest.mark.parametrize("seed", range(25))
@pytest.mark.parametrize("p", PASSES + [passes.optimize], ids=lambda p: p.__name__)
def test_each_pass_on_random_programs(p, seed):
    f = _random_program(np.random.default_rng(seed))
    _check_pass(p, _raw(f, tg.ones(2, 3), tg.ones(2, 3)), seed)


CASES = [(n, k) for n in sorted(REGISTRY) for k in range(len(samples.cases(REGISTRY[n])))
         if n != "nonzero" and REGISTRY[n].differentiable]


@pytest.mark.parametrize("name,k", CASES, ids=[f"{n}-{k}" for n, k in CASES])
def test_pipeline_on_registry_ops_with_backward(name, k):
    """Optimised and unoptimised programs (forward + backward + gradient write-backs) agree."""
    op = REGISTRY[name]
    arrays, attrs = samples.cases(op, np.float64)[k]
    diff = set(samples.differentiable_positions(op, arrays))
    if not diff:
        pytest.skip("no differentiable input")

    def f(*ts):
        out = dispatch(op, *ts, **attrs)
        (out * out).sum().backward()
        return out.detach()

    tensors = [tg.tensor(np.array(a, copy=True)).requires_grad_(i in diff) for i, a in enumerate(arrays)]
    raw = _raw(f, *tensors)
    # (the op's own sample inputs: random ones leave some domains, a Cholesky factor's for one)
    _check_pass(passes.optimize, raw, arrays=[np.array(a, copy=True) for a in arrays])


# ----------------------------------------------------------------------------- the SGD demo
def _sgd_make():
    tg.manual_seed(0)
    model = tg.nn.Linear(8, 1)
    x, y = tg.randn(32, 8), tg.randn(32, 1)

    def step(x, y):  # the program of /tmp/sgd_demo.py
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        with tg.no_grad():
            for p in model.parameters():
                p -= 0.1 * p.grad
                p.grad = None
        return loss

    return step, lambda k: (x, y), list(model.parameters())


def test_sgd_step_listing_gets_visibly_cleaner():
    step, args, _ = _sgd_make()
    raw = tg.compile(step, backend="interpreter", options={"optimize": False}).inspect(*args(0)).graph
    opt = tg.compile(step, backend="interpreter").inspect(*args(0)).graph
    for gone in ("copy", "where", "ne", "pow", "reshape"):
        assert gone in _ops(raw) and gone not in _ops(opt), gone
    assert len(opt.nodes) <= len(raw.nodes) - 10
    assert "  %11:f32[32,1] = mul 0.0625:f32 %7" in str(opt).splitlines()  # 2 * (1/32) * diff


@pytest.mark.parametrize("optimize", [False, True])
def test_sgd_step_values_with_and_without_passes(optimize):
    cf = run_both(_sgd_make, calls=3, options={"optimize": optimize})
    assert len(cf.programs) == 1
