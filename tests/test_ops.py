"""Tests generated from the op registry: every registered op with a ``sample`` is checked
against PyTorch (forward values, first- and second-order gradients), by gradcheck and
gradgradcheck in float64, and its JVP rule by finite differences. Adding an op with a sample
adds its tests; an op without a sample fails ``test_every_differentiable_op_has_a_sample``."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import oracle  # noqa: E402
import tracegrad as tg  # noqa: E402
from tracegrad.autograd.graph import VJPContext  # noqa: E402
from tracegrad.ops import samples  # noqa: E402
from tracegrad.ops.registry import REGISTRY  # noqa: E402

CASES = [(name, k) for name in sorted(REGISTRY) for k in range(len(samples.cases(REGISTRY[name])))]
DIFF_CASES = [(n, k) for n, k in CASES if REGISTRY[n].differentiable  # (and a float input: floor_divide of ints)
              and samples.differentiable_positions(REGISTRY[n], samples.cases(REGISTRY[n])[k][0])]
JVP_CASES = [(n, k) for n, k in DIFF_CASES if REGISTRY[n].jvp is not None]
TWIN_CASES = [(n, k) for n, k in CASES if n in oracle.TWINS]


def _ids(cases):
    return [f"{n}-{k}" for n, k in cases]


def _case(name, k, dtype=np.float64):
    op = REGISTRY[name]
    arrays, attrs = samples.cases(op, dtype)[k]
    return op, arrays, attrs


def _diff_positions(op, arrays):
    return samples.differentiable_positions(op, arrays)


def _inputs(op, arrays, lib):
    diff = set(_diff_positions(op, arrays))
    make = oracle.to_tg if lib == "tg" else oracle.to_torch
    return [make(a, requires_grad=i in diff) for i, a in enumerate(arrays)]


def _cotangent(shape, seed=1):
    return np.random.default_rng(seed).standard_normal(tuple(shape))


def _zeros_if_none(grads, like):
    return [g if g is not None else np.zeros(tuple(t.shape)) for g, t in zip(grads, like)]


# ----------------------------------------------------------------------------- coverage of the registry
def test_every_differentiable_op_has_a_sample():
    missing = [n for n, op in REGISTRY.items() if op.differentiable and op.sample is None]
    assert not missing, f"differentiable ops without a sample (so without tests): {missing}"


def test_every_op_with_a_sample_has_an_oracle():
    missing = [n for n, op in REGISTRY.items()
               if op.sample is not None and n not in oracle.TWINS and n not in oracle.NO_TWIN]
    assert not missing, f"add a torch twin in tests/oracle.py (or a NO_TWIN reason) for {missing}"


def test_every_differentiable_op_has_a_jvp_and_save_annotation():
    for name, op in REGISTRY.items():
        if op.differentiable:
            assert op.vjp is not None, name
            assert op.jvp is not None, f"{name} has no JVP rule"
            assert all(k == "out" or isinstance(k, int) for k in op.save), name


@pytest.mark.parametrize("spec", ["any", ("positive", (2,)), ("index", (5,), 3),
                                  ("unique_index", (2, 2), 4), ("seed",), "bool"])
def test_sample_specs_materialize(spec):
    a = samples.materialize(spec, seed=3)
    domain, shape, params = samples.parse(spec)
    assert a.shape == shape
    if domain == "positive":
        assert (a > 0).all()
    if domain == "unique_index":
        assert len(set(a.ravel().tolist())) == a.size and a.max() < params[0]


def test_bad_sample_spec_is_named():
    with pytest.raises(ValueError, match="unknown domain"):
        samples.parse("negative")
    with pytest.raises(ValueError, match="needs"):
        samples.parse(("index", (2,)))


# ----------------------------------------------------------------------------- forward values
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("name,k", TWIN_CASES, ids=_ids(TWIN_CASES))
def test_forward_matches_torch(name, k, dtype):
    op, arrays, attrs = _case(name, k, dtype)
    out = op(*_inputs(op, arrays, "tg"), **attrs)
    ref = oracle.TWINS[name](*_inputs(op, arrays, "torch"), **attrs)
    assert oracle.TG_TO_TORCH_DTYPE[out.dtype] == ref.dtype, f"{name}: dtype {out.dtype} vs {ref.dtype}"
    oracle.assert_close(out, ref, f"{name} forward")


# ----------------------------------------------------------------------------- gradients vs torch
@pytest.mark.parametrize("name,k", [c for c in DIFF_CASES if c[0] in oracle.TWINS],
                         ids=_ids([c for c in DIFF_CASES if c[0] in oracle.TWINS]))
def test_first_and_second_order_grads_match_torch(name, k):
    op, arrays, attrs = _case(name, k)
    diff = _diff_positions(op, arrays)
    if not diff:
        pytest.skip("no differentiable input in this sample")
    a, b = _inputs(op, arrays, "tg"), _inputs(op, arrays, "torch")
    out, ref = op(*a, **attrs), oracle.TWINS[name](*b, **attrs)
    cot = _cotangent(ref.shape)
    xa, xb = [a[i] for i in diff], [b[i] for i in diff]
    ga = tg.autograd.grad(out, xa, oracle.to_tg(cot), create_graph=True, allow_unused=True)
    gb = torch.autograd.grad(ref, xb, oracle.to_torch(cot), create_graph=True, allow_unused=True)
    for i, g, w in zip(diff, _zeros_if_none(ga, xa), _zeros_if_none(gb, xb)):
        oracle.assert_close(g, w, f"{name}: grad of input {i}")
    # second order: d/dx <grad(x), v> for a random v, through both libraries
    vs = [_cotangent(x.shape, seed=7 + j) for j, x in enumerate(xa)]
    sa = sum((g * oracle.to_tg(v)).sum() for g, v in zip(ga, vs) if g is not None and g.requires_grad)
    sb = sum((g * oracle.to_torch(v)).sum() for g, v in zip(gb, vs) if g is not None and g.requires_grad)
    if not isinstance(sb, torch.Tensor):
        assert not isinstance(sa, tg.Tensor), f"{name}: torch's gradient is constant, ours is not"
        return
    hb = torch.autograd.grad(sb, xb, allow_unused=True)
    ha = tg.autograd.grad(sa, xa, allow_unused=True) if isinstance(sa, tg.Tensor) else [None] * len(xa)
    for i, h, w in zip(diff, _zeros_if_none(ha, xa), _zeros_if_none(hb, xb)):
        oracle.assert_close(h, w, f"{name}: second-order grad of input {i}")


# ----------------------------------------------------------------------------- finite differences
def _op_fn(op, arrays, attrs):
    """The op as a function of its differentiable inputs (the others fixed)."""
    diff = _diff_positions(op, arrays)
    fixed = _inputs(op, arrays, "tg")

    def fn(*xs):
        args = list(fixed)
        for i, x in zip(diff, xs):
            args[i] = x
        return op(*args, **attrs)

    return fn, [oracle.to_tg(arrays[i], requires_grad=True) for i in diff]


@pytest.mark.parametrize("name,k", DIFF_CASES, ids=_ids(DIFF_CASES))
def test_gradcheck(name, k):
    op, arrays, attrs = _case(name, k)
    fn, xs = _op_fn(op, arrays, attrs)
    assert tg.autograd.gradcheck(fn, xs)


@pytest.mark.parametrize("name,k", DIFF_CASES, ids=_ids(DIFF_CASES))
def test_gradgradcheck(name, k):
    op, arrays, attrs = _case(name, k)
    fn, xs = _op_fn(op, arrays, attrs)
    assert tg.autograd.gradgradcheck(fn, xs)


@pytest.mark.parametrize("name,k", JVP_CASES, ids=_ids(JVP_CASES))
def test_jvp_rule_matches_finite_differences(name, k):
    """Calls the JVP rule directly with the same context a VJP rule gets."""
    op, arrays, attrs = _case(name, k)
    diff = _diff_positions(op, arrays)
    inputs = _inputs(op, arrays, "tg")
    out = op(*inputs, **attrs)
    ctx = VJPContext(out.grad_fn)
    rng = np.random.default_rng(5)
    tangents = [rng.standard_normal(a.shape) if i in diff else None for i, a in enumerate(arrays)]
    with tg.no_grad():
        got = op.jvp(ctx, *[oracle.to_tg(t) if t is not None else None for t in tangents])
    eps = 1e-6

    def at(sign):
        moved = [a + sign * eps * t if t is not None else a for a, t in zip(arrays, tangents)]
        return oracle.np_of(op(*[oracle.to_tg(m) for m in moved], **attrs))

    expected = (at(1) - at(-1)) / (2 * eps)
    np.testing.assert_allclose(oracle.np_of(got), expected, rtol=1e-5, atol=1e-6,
                               err_msg=f"{name} jvp")


ELEMENTWISE = sorted(n for n, op in REGISTRY.items() if op.kind == "elementwise")


def test_elementwise_ops_are_silent_on_inf_nan_and_zero_and_leave_numpys_state():
    """inf, nan and zero divisors give PyTorch's values without NumPy's RuntimeWarnings (the
    impls silence them for their own call only: the user's np.seterr state is left as it was)."""
    import warnings

    special = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 1e308, -1.0], dtype=np.float64)
    before = np.geterr()
    ran = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name in ELEMENTWISE:
            op = REGISTRY[name]
            x = tg.tensor(special)
            try:
                op(*([x] * _arity(op)), **_attrs(name))
            except (TypeError, ValueError, RuntimeError):
                continue  # an op these inputs do not fit (an integer-only op, say)
            ran.append(name)
    assert np.geterr() == before
    assert {"log", "div", "sqrt", "exp", "mul", "pow", "fmod", "atanh"} <= set(ran), ran
    with pytest.warns(RuntimeWarning):
        np.log(np.float64(-1.0))  # NumPy's own warning is still on outside tracegrad


def _arity(op):
    arrays, _ = samples.cases(op)[0]
    return len(arrays)


def _attrs(name):
    return samples.cases(REGISTRY[name])[0][1]


def test_where_gives_the_masked_off_branch_a_zero_gradient_even_for_a_nan_cotangent():
    """(PyTorch's: sqrt of a where whose other branch is nan leaves the kept branch's
    gradient 0 there, not nan * 0)"""
    import torch

    grads = []
    for lib in (tg, torch):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = lib.where(lib.tensor([True, False]), x * 1, float("nan"))
        grads.append(lib.autograd.grad(y.sqrt().sum(), [x])[0].numpy())
    np.testing.assert_array_equal(grads[0], grads[1])
