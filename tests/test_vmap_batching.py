"""vmap's batching rules (tracegrad/batching.py): every op of the registry, vmapped with its
operands batched in several ways, equals the op applied element by element, values and
gradients; autograd through a vmapped function follows eager's (detach, no_grad); functions
that cannot be traced run once per element with a warning; under tg.compile the batched graph
is one program whose size does not grow with the batch."""
import warnings

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.func import functional_call, grad, vmap
from tracegrad.ops import samples
from tracegrad.ops.registry import REGISTRY

B = 3
CASES = [(name, k) for name in sorted(REGISTRY) for k in range(len(samples.cases(REGISTRY[name])))
         if not REGISTRY[name].random and name != "nonzero"]  # nonzero's shape depends on the data
# which operands carry the batch, and at which dim: "all0" all at dim 0, "first"/"last" only
# the first/last operand (the others shared), "all-1" all at their last dim
PATTERNS = ["all0", "first", "last", "all-1"]


def _elements(op, k):
    """B sets of the op's sample inputs (B different draws of each spec) and its attrs."""
    specs, attrs = op.sample()[k]
    draws = [[samples.materialize(s, np.float64, seed=1000 * j + 7 * i + k) for i, s in enumerate(specs)]
             for j in range(B)]
    return draws, dict(attrs)


def _in_dims(pattern, n):
    if pattern == "all0":
        return (0,) * n
    if pattern == "all-1":
        return (-1,) * n
    if pattern == "first":
        return (0,) + (None,) * (n - 1)
    return (None,) * (n - 1) + (0,)


def _stack(arrays, d):
    return np.stack(arrays, axis=d if d >= 0 else d + arrays[0].ndim + 1)


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("name,k", CASES, ids=[f"{n}-{k}" for n, k in CASES])
def test_vmap_of_every_op_equals_the_op_per_element(name, k, pattern):
    op = REGISTRY[name]
    draws, attrs = _elements(op, k)
    n = len(draws[0])
    dims = _in_dims(pattern, n)
    if pattern in ("first", "last") and n == 1:
        pytest.skip("one operand: the same as all0")
    if pattern == "all-1" and any(a.ndim == 0 for a in draws[0]):
        pytest.skip("a 0-dim operand has no last dim")
    # unbatched operands are element 0's; for the per-element reference too
    per_elem = [[draws[j][i] if dims[i] is not None else draws[0][i] for i in range(n)] for j in range(B)]
    floats = [i for i in samples.differentiable_positions(op, draws[0])]

    def tensors(arrays):
        return [tg.tensor(a, requires_grad=i in floats and op.differentiable) for i, a in enumerate(arrays)]

    batched = tensors([_stack([per_elem[j][i] for j in range(B)], d) if d is not None else draws[0][i]
                       for i, d in enumerate(dims)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback to the per-element loop
        out = vmap(lambda *xs: op(*xs, **attrs), in_dims=dims)(*batched)
    refs = [tensors(per_elem[j]) for j in range(B)]
    expected = [op(*r, **attrs) for r in refs]
    np.testing.assert_allclose(out.detach().numpy(), np.stack([e.detach().numpy() for e in expected]), rtol=1e-12, atol=1e-12)
    if not (op.differentiable and out.dtype.is_floating_point and floats):
        return
    w = np.random.default_rng(0).standard_normal(out.shape)
    (out * tg.tensor(w)).sum().backward()
    for j in range(B):
        (expected[j] * tg.tensor(np.asarray(w[j]))).sum().backward()
    for i in floats:
        if dims[i] is None:
            want = sum(refs[j][i].grad.numpy() for j in range(B))
        else:
            want = _stack([refs[j][i].grad.numpy() for j in range(B)], dims[i])
        np.testing.assert_allclose(batched[i].grad.numpy(), want, rtol=1e-10, atol=1e-12,
                                   err_msg=f"gradient of operand {i}")


def _mlp():
    tg.manual_seed(0)
    return tg.nn.Sequential(tg.nn.Linear(4, 8), tg.nn.Tanh(), tg.nn.Linear(8, 2))


def test_per_sample_gradients_equal_the_loop_and_trace_once():
    model = _mlp()
    params = {k: v.detach() for k, v in model.named_parameters()}
    x, y = tg.randn(6, 4), tg.randn(6, 2)

    def loss(p, xi, yi):
        return (functional_call(model, p, (xi,)) - yi).square().sum()

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)
    for name, p in params.items():
        want = tg.stack([grad(loss)(params, x[i], y[i])[name] for i in range(6)])
        assert got[name].shape == (6, *p.shape)
        np.testing.assert_allclose(got[name].numpy(), want.numpy(), rtol=1e-6, atol=1e-7)


def test_gradients_flow_through_vmap_to_parameters_and_inputs():
    model = _mlp()
    x = tg.randn(5, 4, requires_grad=True)
    vmap(model)(x).square().sum().backward()
    got = [p.grad.clone() for p in model.parameters()] + [x.grad.clone()]
    model.zero_grad()
    x.grad = None
    model(x).square().sum().backward()
    for g, p in zip(got, list(model.parameters()) + [x]):
        np.testing.assert_allclose(g.numpy(), p.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_detach_and_no_grad_inside_the_function_cut_the_gradient_as_eagerly():
    w = tg.randn(3, requires_grad=True)

    def f(x):
        a = (x * w).detach() * w  # only the second factor is differentiated
        with tg.no_grad():
            b = x * w
        return a.sum() + (b * w).sum()

    x = tg.randn(4, 3)
    vmap(f)(x).sum().backward()
    got = w.grad.clone()
    w.grad = None
    sum(f(x[i]) for i in range(4)).backward()
    np.testing.assert_allclose(got.numpy(), w.grad.numpy(), rtol=1e-6)


def test_out_dims_nested_vmap_and_unbatched_outputs():
    x, y = tg.randn(2, 3), tg.randn(3, 4)
    outer = vmap(vmap(lambda a, b: a * b, in_dims=(0, None)), in_dims=(None, 1))(x, y)
    want = np.stack([x.numpy() * yk for yk in y.numpy().T])
    np.testing.assert_allclose(outer.numpy(), want, rtol=1e-6)
    c = tg.ones(2)
    a, b = vmap(lambda v: (v.sum(), c), out_dims=(0, None))(x)
    assert b is c and a.shape == (2,)
    s, t = vmap(lambda v: (v * 2, c), out_dims=(1, 0))(x)
    assert s.shape == (3, 2) and t.shape == (2, 2)
    with pytest.raises(ValueError, match="out_dims=None"):
        vmap(lambda v: v * 2, out_dims=None)(x)
    with pytest.raises(ValueError, match="must only return Tensors"):
        vmap(lambda v: 3)(x)


def test_untraceable_functions_run_per_element_with_a_warning():
    def data_dependent(v):
        return v * 2 if v.sum().item() > 0 else v * 3

    x = tg.tensor([[1.0, 2.0], [-3.0, -1.0]])
    with pytest.warns(UserWarning, match="once per batch element.*cannot be traced"):
        out = vmap(data_dependent)(x)
    np.testing.assert_allclose(out.numpy(), [[2, 4], [-9, -3]])
    acc = tg.zeros(2)

    def writes_outside(v):
        acc.add_(v)
        return v * 1

    with pytest.warns(UserWarning, match="writes into tensors it did not create"):
        vmap(writes_outside)(x)
    np.testing.assert_allclose(acc.numpy(), x.numpy().sum(0))


def test_compiled_vmap_is_one_program_whose_size_does_not_grow_with_the_batch():
    w = tg.randn(4, 3)

    def f(x):
        h = x.sum(0)  # a value of the compiled function, read by the vmapped one
        return vmap(lambda xi: ((xi @ w).tanh() * h[:3]).sum())(x)

    sizes = []
    for n in (2, 16):
        x = tg.randn(n, 4)
        compiled = tg.compile(f, fullgraph=True)
        np.testing.assert_allclose(compiled(x).numpy(), f(x).numpy(), rtol=1e-5)
        sizes.append(len(compiled.inspect(x).graph.nodes))
    assert sizes[0] == sizes[1]


class _RoundSTE(tg.autograd.Function):
    """round() with a straight-through gradient (doubled, so it cannot pass for round's own)."""

    @staticmethod
    def forward(ctx, x):
        return x.round()

    @staticmethod
    def backward(ctx, g):
        return 2 * g


def test_custom_functions_keep_their_backward():
    x = tg.tensor([[0.3, 1.7], [2.2, -0.6]], requires_grad=True)
    with pytest.warns(UserWarning, match="custom autograd.Function"):
        out = vmap(lambda v: _RoundSTE.apply(v * 3).sum())(x)
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full((2, 2), 6.0))
    with warnings.catch_warnings():  # nothing outside requires grad: batched, no warning
        warnings.simplefilter("error")
        g = vmap(grad(lambda v: (_RoundSTE.apply(v) * v).sum()))(x.detach())
    xs = x.detach().numpy()
    np.testing.assert_allclose(g.numpy(), 2 * xs + np.round(xs))


def test_forward_ad_tangents_pass_through_vmap():
    import tracegrad.autograd.forward_ad as fwAD

    p, t, w = tg.randn(3, 4), tg.randn(3, 4), tg.randn(4, 2)
    with fwAD.dual_level():
        x = fwAD.make_dual(p, t)
        got = fwAD.unpack_dual(vmap(lambda v: (v @ w).tanh())(x)).tangent
        want = fwAD.unpack_dual((x @ w).tanh()).tangent
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-7)
