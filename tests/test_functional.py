"""The public functions of ``tracegrad._api.functional`` (composites and argument handling) against
PyTorch: values and gradients, gradient ties, type promotion, and errors on bad input."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import oracle  # noqa: E402
import tracegrad as tg  # noqa: E402

RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 4))
Y = RNG.standard_normal((3, 4))
P = RNG.uniform(0.5, 2.0, (3, 4))
V = RNG.standard_normal(4)
B3 = RNG.standard_normal((2, 3, 4))
B4 = RNG.standard_normal((2, 4, 5))

# name -> (function of (module, *tensors) written once for both libraries, inputs)
COMPOSITES = {
    "add_alpha": (lambda m, a, b: m.add(a, b, alpha=2.5), [X, Y]),
    "sub_alpha": (lambda m, a, b: m.sub(a, b, alpha=-1.5), [X, Y]),
    "rsub_scalar": (lambda m, a: 2 - a, [X]),
    "rdiv_scalar": (lambda m, a: 2 / a, [P]),
    "div_floor": (lambda m, a, b: m.div(a, b, rounding_mode="floor"), [X * 5, P]),
    "div_trunc": (lambda m, a, b: m.div(a, b, rounding_mode="trunc"), [X * 5, P]),
    "pow_scalar": (lambda m, a: a ** 3, [X]),
    "rpow_scalar": (lambda m, a: 2 ** a, [X]),
    "square": (lambda m, a: m.square(a), [X]),
    "reciprocal": (lambda m, a: m.reciprocal(a), [P]),
    "log2": (lambda m, a: m.log2(a), [P]),
    "log10": (lambda m, a: m.log10(a), [P]),
    "clamp_tensor_bounds": (lambda m, a, lo, hi: m.clamp(a, lo, hi + 1), [X, Y, P]),
    "clamp_min_only": (lambda m, a: a.clamp(min=0.1), [X]),
    "where_scalar": (lambda m, a: m.where(a > 0, a, 0.5), [X]),
    "mean_all": (lambda m, a: a.mean(), [X]),
    "mean_dims": (lambda m, a: m.mean(a, (0, 2), keepdim=True), [B3]),
    "var_default": (lambda m, a: a.var(1), [X]),
    "var_biased": (lambda m, a: m.var(a, 0, unbiased=False), [X]),
    "var_correction": (lambda m, a: m.var(a, (0, 1), correction=2, keepdim=True), [B3]),
    "std": (lambda m, a: a.std(), [X]),
    "std_dim": (lambda m, a: m.std(a, -1, keepdim=True), [B3]),
    "prod_all": (lambda m, a: m.prod(a), [P]),
    "prod_dim": (lambda m, a: a.prod(1, keepdim=True), [X]),
    "sum_dtype": (lambda m, a: m.sum(a, 1, dtype=m.float32), [X]),
    "logsumexp": (lambda m, a: m.logsumexp(a * 50, 1), [X]),
    "logsumexp_dims": (lambda m, a: m.logsumexp(a, (0, 2), keepdim=True), [B3]),
    "amax_dims": (lambda m, a: m.amax(a, (0, 1)), [B3]),
    "amin": (lambda m, a: m.amin(a, -1, keepdim=True), [X]),
    "max_all": (lambda m, a: a.max(), [X]),
    "max_dim_values": (lambda m, a: m.max(a, 1).values, [X]),
    "max_dim_keepdim": (lambda m, a: m.max(a, 0, keepdim=True)[0], [X]),
    "min_dim_values": (lambda m, a: a.min(-1).values, [B3]),
    "max_binary": (lambda m, a, b: m.max(a, b), [X, Y]),
    "maximum": (lambda m, a, b: m.maximum(a, b), [X, V]),
    "minimum": (lambda m, a, b: m.minimum(a, b), [X, Y]),
    "reshape_view": (lambda m, a: a.reshape(2, -1).view(6, 2).t(), [X]),
    "flatten": (lambda m, a: m.flatten(a, 1), [B3]),
    "unflatten": (lambda m, a: a.unflatten(1, (2, 2)), [X]),
    "squeeze_unsqueeze": (lambda m, a: a.unsqueeze(1).unsqueeze(-1).squeeze(1), [X]),
    "transpose_T": (lambda m, a: m.transpose(a, 0, 2)[0].T, [B3]),
    "mT": (lambda m, a: a.mT, [B3]),
    "permute": (lambda m, a: a.permute(2, 0, 1), [B3]),
    "expand": (lambda m, a: a.expand(2, 3, 4), [V]),
    "expand_minus_one": (lambda m, a: a[:, :1].expand(-1, 5), [X]),
    "broadcast_to": (lambda m, a: m.broadcast_to(a, (3, 4)), [V]),
    "flip": (lambda m, a: m.flip(a, (0, 2)), [B3]),
    "narrow": (lambda m, a: m.narrow(a, 1, 1, 2), [X]),
    "cat": (lambda m, a, b: m.cat([a, b, a], 1), [X, Y]),
    "stack": (lambda m, a, b: m.stack([a, b], -1), [X, Y]),
    "split_sizes": (lambda m, a: m.split(a, [1, 3], 1)[1], [X]),
    "split_int": (lambda m, a: a.split(2)[-1], [X]),
    "chunk": (lambda m, a: m.chunk(a, 3, 1)[1], [X]),
    "unbind": (lambda m, a: m.unbind(a, 1)[2], [X]),
    "slicing": (lambda m, a: a[1:, ::2, None][..., -1], [B3]),
    "matmul_vec_vec": (lambda m, a, b: m.matmul(a, b), [V, V * 2]),
    "matmul_mat_vec": (lambda m, a, b: a @ b, [X, V]),
    "matmul_vec_batch": (lambda m, a, b: a @ b, [V, B4]),
    "matmul_batch_bcast": (lambda m, a, b: m.matmul(a, b), [B3, B4[:1]]),
    "mm": (lambda m, a, b: m.mm(a, b.T), [X, Y]),
    "bmm": (lambda m, a, b: m.bmm(a, b), [B3, B4]),
    "mv": (lambda m, a, b: m.mv(a, b), [X, V]),
    "dot": (lambda m, a, b: m.dot(a, b), [V, V + 1]),
    "outer": (lambda m, a, b: m.outer(a, b), [V, V]),
    "addmm": (lambda m, c, a, b: m.addmm(c, a, b.T, beta=0.5, alpha=2), [P[:, :3], X, Y]),
    "sigmoid_relu_chain": (lambda m, a: m.relu(m.sigmoid(a) - 0.5) * m.tanh(a), [X]),
    "erf": (lambda m, a: m.erf(a), [X]),
    "sign_abs": (lambda m, a: m.abs(a) * m.sign(a), [X]),
}


@pytest.mark.parametrize("name", list(COMPOSITES))
def test_composite_matches_torch(name):
    fn, arrays = COMPOSITES[name]
    oracle.compare_fn(lambda *t: fn(tg, *t), lambda *t: fn(torch, *t), arrays)


@pytest.mark.parametrize("name", ["var_default", "logsumexp", "prod_dim", "max_dim_values",
                                  "matmul_vec_batch", "clamp_tensor_bounds", "div_floor"])
def test_composite_gradcheck(name):
    fn, arrays = COMPOSITES[name]
    xs = [tg.tensor(a, requires_grad=True) for a in arrays]
    assert tg.autograd.gradcheck(lambda *t: fn(tg, *t), xs)
    assert tg.autograd.gradgradcheck(lambda *t: fn(tg, *t), xs)


def test_max_with_dim_returns_values_and_indices_like_torch():
    ours, ref = tg.tensor(B3).max(1), torch.from_numpy(B3).max(1)
    oracle.assert_close(ours.values, ref.values)
    oracle.assert_close(ours.indices, ref.indices)
    assert ours._fields == ("values", "indices")
    oracle.assert_close(tg.tensor(X).argmin(), torch.from_numpy(X).argmin())


# ----------------------------------------------------------------------------- gradient ties
TIE = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])


@pytest.mark.parametrize("expr", [
    lambda m, a: m.max(a),             # no dim: ties share evenly
    lambda m, a: m.min(a),
    lambda m, a: m.amax(a, 1),         # amax/amin: ties share evenly
    lambda m, a: m.amin(a, 0),
    lambda m, a: m.max(a, 1).values,   # with dim: one index gets it all
    lambda m, a: m.min(a, 1).values,
    lambda m, a: m.maximum(a, a[:, :1]),  # elementwise ties split in half
    lambda m, a: m.clamp(a, 2.0, 3.0),    # inclusive bounds pass the gradient
    lambda m, a: m.relu(a - 2.0),         # relu'(0) = 0
])
def test_gradient_ties_split_like_torch(expr):
    oracle.compare_fn(lambda t: expr(tg, t), lambda t: expr(torch, t), [TIE])


def test_max_without_dim_spreads_and_with_dim_picks_one():
    x = tg.tensor(TIE, requires_grad=True)
    x.max().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[0, 0.5, 0.5], [0, 0, 0]])
    x.grad = None
    x.max(1).values.sum().backward()
    np.testing.assert_allclose(x.grad.numpy().sum(1), [1, 1])
    assert (x.grad.numpy() == 1).sum() == 2


# ----------------------------------------------------------------------------- type promotion
DTYPES = [tg.float32, tg.float64, tg.int64, tg.int32, tg.bool]
SCALARS = [True, 3, 2.5]


def _make(dtype, ndim):
    shape = (2,) if ndim else ()
    a = np.ones(shape, dtype=dtype.np)
    return tg.tensor(a), torch.from_numpy(a.copy())


@pytest.mark.parametrize("ndim_b", [0, 1], ids=["0dim", "dims"])
@pytest.mark.parametrize("ndim_a", [0, 1], ids=["0dim", "dims"])
@pytest.mark.parametrize("da", DTYPES, ids=lambda d: d.name)
def test_promotion_tensor_tensor_matches_torch(da, ndim_a, ndim_b):
    for db in DTYPES:
        a, ta = _make(da, ndim_a)
        b, tb = _make(db, ndim_b)
        expected = oracle.TG_TO_TORCH_DTYPE
        assert expected[tg.result_type(a, b)] == torch.result_type(ta, tb), (da, db)
        assert expected[tg.mul(a, b).dtype] == torch.mul(ta, tb).dtype, (da, db)
        assert expected[tg.div(a, b).dtype] == torch.div(ta, tb).dtype, (da, db)
        assert expected[tg.maximum(a, b).dtype] == torch.maximum(ta, tb).dtype, (da, db)
        assert tg.eq(a, b).dtype is tg.bool


@pytest.mark.parametrize("ndim", [0, 1], ids=["0dim", "dims"])
@pytest.mark.parametrize("da", DTYPES, ids=lambda d: d.name)
def test_promotion_tensor_scalar_matches_torch(da, ndim):
    a, ta = _make(da, ndim)
    expected = oracle.TG_TO_TORCH_DTYPE
    for s in SCALARS:
        assert expected[tg.result_type(a, s)] == torch.result_type(ta, s), (da, s)
        assert expected[(a * s).dtype] == (ta * s).dtype, (da, s)
        assert expected[(s * a).dtype] == (s * ta).dtype, (da, s)
        if da is not tg.bool or not isinstance(s, bool):
            assert expected[(a + s).dtype] == (ta + s).dtype, (da, s)
        assert expected[(a / s).dtype] == (ta / s).dtype, (da, s)


def test_python_scalar_never_upcasts_a_float32_tensor():
    x = tg.ones(3)
    assert (x * 2.5).dtype is tg.float32 and (x + 10**12).dtype is tg.float32
    assert (tg.ones(3, dtype=tg.int32) + 5).dtype is tg.int32


# ----------------------------------------------------------------------------- bad input
def test_broadcast_mismatch_names_the_shapes():
    with pytest.raises(RuntimeError, match=r"size of tensor a \(4\) must match the size of tensor "
                                           r"b \(3\) at non-singleton dimension 1.*\[2, 4\] and \[3\]"):
        tg.ones(2, 4) + tg.ones(3)


def test_matmul_mismatch_names_the_shapes():
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"):
        tg.ones(2, 3) @ tg.ones(4, 5)
    with pytest.raises(RuntimeError, match=r"inconsistent tensor size.*\[3\].*\[4\]"):
        tg.ones(3) @ tg.ones(4)
    with pytest.raises(RuntimeError, match="batch dimensions of"):
        tg.ones(2, 2, 3) @ tg.ones(3, 3, 4)
    with pytest.raises(RuntimeError, match="both arguments to matmul need to be at least 1D"):
        tg.matmul(tg.ones(()), tg.ones(3))


def test_ragged_and_string_data_are_rejected():
    with pytest.raises(ValueError, match="expected sequence of length 2 at dim 1 \\(got 1\\)"):
        tg.tensor([[1, 2], [3]])
    with pytest.raises(TypeError, match="str"):
        tg.tensor(["a", "b"])
    with pytest.raises(TypeError, match="could not infer dtype"):
        tg.tensor([object()])


def test_numpy_on_a_tensor_requiring_grad_is_an_error():
    x = tg.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Can't call numpy\(\) on Tensor that requires grad"):
        x.numpy()
    assert x.detach().numpy().shape == (2,)


def test_reshape_and_view_errors():
    with pytest.raises(RuntimeError, match=r"shape '\[5, -1\]' is invalid for input of size 12"):
        tg.tensor(X).reshape(5, -1)
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        tg.tensor(X).t().view(12)
    with pytest.raises(IndexError, match="Dimension out of range"):
        tg.tensor(X).sum(2)
    with pytest.raises(RuntimeError, match="Sizes of tensors must match except in dimension 0"):
        tg.cat([tg.ones(2, 3), tg.ones(2, 4)])
