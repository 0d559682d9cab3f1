"""Indexing (basic and advanced, get and set), gather/scatter, index_select/index_add_,
sort/topk/argsort and nonzero, against PyTorch: values, gradients, in-place semantics, errors."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import oracle  # noqa: E402
import tracegrad as tg  # noqa: E402

RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 4, 5))
MASK34 = A[:, :, 0] > 0
MASK4 = np.array([True, False, False, True])

# each index is written once in NumPy terms; ndarrays become tensors of either library
INDICES = {
    "int_list": ([2, 0, 2],),
    "neg_ints": ([-1, 0], [-2], [-5, 4]),
    "int_then_list": (0, slice(None), [1, 2]),
    "list_slice_int": ([0, 1], slice(None), 0),
    "adjacent_2d": (slice(None), [[0], [1]], [0, 1, 2]),
    "separated": ([0, 2], slice(None), [1, 3]),
    "separated_bcast": ([0, 1], slice(None), [[1], [2]]),
    "none_first": (None, [0, 1]),
    "none_after": ([0, 1], None),
    "bool_true": (True,),
    "bool_false": (False,),
    "ellipsis": (Ellipsis, [1, 0]),
    "list_ellipsis_list": ([1, 0], Ellipsis, [2, 3]),
    "mask_full": (A > 0,),
    "mask_2d": (MASK34,),
    "mask_middle": (slice(None), MASK4),
    "mask_and_list": ([0, 2], MASK4),
    "tensor_int32": (np.array([1, 2], dtype=np.int32),),
    "zero_dim_tensor": (np.array(1),),
    "empty_list": ([],),
    "slices_with_list": ([[0, 1], [1, 2]], [[0], [3]], slice(1, 3)),
    "step_slice_list": (slice(None, None, 2), [3, 1]),
}


def _convert(index, lib):
    make = tg.tensor if lib == "tg" else torch.tensor
    out = []
    for ix in index:
        if isinstance(ix, np.ndarray):
            out.append(make(ix))
        elif isinstance(ix, list) and lib == "torch" and ix == []:
            out.append(torch.tensor([], dtype=torch.int64))
        else:
            out.append(ix)
    return tuple(out)


@pytest.mark.parametrize("key", list(INDICES))
def test_getitem_matches_torch(key):
    index = INDICES[key]
    oracle.compare_fn(lambda x: x[_convert(index, "tg")], lambda x: x[_convert(index, "torch")],
                      [A])


@pytest.mark.parametrize("key", list(INDICES))
def test_setitem_matches_torch(key):
    index = INDICES[key]
    shape = tuple(torch.from_numpy(A)[_convert(index, "torch")].shape)
    value = RNG.standard_normal(shape)

    def run(lib, base, v):
        y = base * 2  # a non-leaf, so that it can be written in place with grad on
        version = y._version
        y[_convert(index, lib)] = v * 3
        assert y._version > version
        return y * y

    oracle.compare_fn(lambda b, v: run("tg", b, v), lambda b, v: run("torch", b, v), [A, value])


def test_setitem_broadcasts_value_and_scalar():
    for lib, make in (("tg", tg.tensor), ("torch", torch.tensor)):
        x = make(np.zeros((3, 4)))
        x[[0, 2]] = make(np.arange(4.0))
        x[[1], [1, 3]] = 7.5
        x[make(np.array([[True, False, False, True]] * 3))] = -1.0
        if lib == "tg":
            ours = x.numpy().copy()
        else:
            np.testing.assert_array_equal(ours, x.numpy())


def test_setitem_value_dtype_is_cast_like_torch():
    x, y = tg.zeros(3, dtype=tg.int64), torch.zeros(3, dtype=torch.int64)
    x[[0, 2]] = 2.7
    y[[0, 2]] = 2.7
    np.testing.assert_array_equal(x.numpy(), y.numpy())


def test_setitem_on_leaf_requiring_grad_is_an_error():
    x = tg.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x[[0]] = 1.0


def test_setitem_into_view_updates_base_and_its_graph():
    for lib in ("tg", "torch"):
        make = tg.tensor if lib == "tg" else torch.tensor
        w = make(A.copy(), requires_grad=True)
        v = make(np.ones(2), requires_grad=True)
        base = w * 1
        view = base[1]  # a basic view
        view[[0, 3], 2] = v * 5
        (base ** 2).sum().backward()
        if lib == "tg":
            ours = (base.detach().numpy().copy(), w.grad.numpy(), v.grad.numpy())
        else:
            for o, t in zip(ours, (base.detach().numpy(), w.grad.numpy(), v.grad.numpy())):
                np.testing.assert_allclose(o, t)


def test_basic_index_is_view_advanced_is_copy():
    x = tg.tensor(A.copy())
    v = x[1, :, 2:4]
    assert np.shares_memory(v.numpy(), x.numpy())
    c = x[[1]]
    assert not np.shares_memory(c.numpy(), x.numpy())
    v.mul_(0)
    assert x._version == v._version == 1 and not x[1, :, 2:4].numpy().any()


@pytest.mark.parametrize("index,exc,message", [
    ((5,), IndexError, "index 5 is out of bounds for dimension 0 with size 3"),
    (([0, 3],), IndexError, "index 3 is out of bounds for dimension 0 with size 3"),
    ((slice(None), [-5]), IndexError, "index -5 is out of bounds for dimension 1 with size 4"),
    ((np.array([1.0]),), IndexError, "tensors used as indices must be long, int, byte or bool"),
    ((np.array([True, False]),), IndexError, r"The shape of the mask \[2\] at index 0 does not match"),
    (([0, 1], [0, 1, 2]), IndexError, r"shape mismatch: indexing tensors could not be broadcast "
                                      r"together with shapes \[2\], \[3\]"),
    ((0, 0, 0, 0), IndexError, "too many indices for tensor of dimension 3"),
])
def test_index_errors_like_torch(index, exc, message):
    x = tg.tensor(A)
    with pytest.raises(exc, match=message):
        x[_convert(index, "tg")]
    with pytest.raises(exc):
        torch.from_numpy(A)[_convert(index, "torch")]


def test_setitem_shape_mismatch_names_shapes():
    x = tg.zeros(2, 4)
    with pytest.raises(RuntimeError, match=r"value tensor of shape \[3\] cannot be broadcast to "
                                           r"indexing result of shape \[2, 4\]"):
        x[tg.tensor([0, 1])] = tg.ones(3)


def test_mask_indexing_breaks_the_graph_when_compiled():
    x = tg.tensor(A)
    with pytest.raises(tg.compiler.CompileError, match="boolean mask"):
        tg.compile(lambda t: t[t > 0].sum(), backend="interpreter", fullgraph=True)(x)


def test_integer_indexing_is_traced():
    x, i = tg.tensor(A), tg.tensor([2, 0])
    f = tg.compile(lambda t, j: t[j, :, [1, 3]] * 2, backend="interpreter", fullgraph=True)
    oracle.assert_close(f(x, i), torch.from_numpy(A)[torch.tensor([2, 0]), :, [1, 3]] * 2)


# ----------------------------------------------------------------------------- gather / scatter / select
def _idx(shape, high, seed=0):
    return np.random.default_rng(seed).integers(0, high, shape)


@pytest.mark.parametrize("dim,shape", [(0, (2, 4, 5)), (1, (3, 6, 2)), (-1, (3, 4, 7)), (2, (1, 1, 1))])
def test_gather_matches_torch(dim, shape):
    idx = _idx(shape, A.shape[dim])
    oracle.compare_fn(lambda x: tg.gather(x, dim, tg.tensor(idx)),
                      lambda x: torch.gather(x, dim, torch.tensor(idx)), [A])
    oracle.compare_fn(lambda x: x.gather(dim, tg.tensor(idx)),
                      lambda x: x.gather(dim, torch.tensor(idx)), [A])


@pytest.mark.parametrize("dim", [0, 1, 2])
def test_scatter_add_matches_torch(dim):
    shape = list(A.shape)
    shape[dim] = 6
    idx = _idx(shape, A.shape[dim])
    src = RNG.standard_normal(shape)
    oracle.compare_fn(lambda x, s: tg.scatter_add(x, dim, tg.tensor(idx), s),
                      lambda x, s: torch.scatter_add(x, dim, torch.tensor(idx), s), [A, src])


def test_scatter_add_src_larger_than_index_grad_by_gradcheck():
    x = tg.tensor(RNG.standard_normal((3, 4)), requires_grad=True)
    src = tg.tensor(RNG.standard_normal((3, 5)), requires_grad=True)
    idx = tg.tensor(_idx((2, 3), 4))
    assert tg.autograd.gradcheck(lambda a, b: tg.scatter_add(a, 1, idx, b), (x, src))
    ref = torch.scatter_add(torch.from_numpy(x.detach().numpy()), 1, torch.tensor(idx.numpy()),
                            torch.from_numpy(src.detach().numpy()))
    oracle.assert_close(tg.scatter_add(x, 1, idx, src), ref)


def test_scatter_add_inplace_bumps_version():
    x = tg.zeros(3, 4)
    out = x.scatter_add_(0, tg.tensor([[0, 1, 2, 0]]), tg.ones(1, 4))
    assert out is x and x._version == 1
    np.testing.assert_array_equal(x.numpy().sum(0), np.ones(4))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_index_select_matches_torch(dim):
    idx = np.array([1, 0, 1, 2])
    oracle.compare_fn(lambda x: tg.index_select(x, dim, tg.tensor(idx)),
                      lambda x: torch.index_select(x, dim, torch.tensor(idx)), [A])
    oracle.compare_fn(lambda x: x.index_select(dim, tg.tensor(idx, dtype=tg.int32)),
                      lambda x: x.index_select(dim, torch.tensor(idx, dtype=torch.int32)), [A])


def test_index_select_errors():
    x = tg.tensor(A)
    with pytest.raises(RuntimeError, match="Expected dtype int32/int64 for index"):
        tg.index_select(x, 0, tg.tensor([1.0]))
    with pytest.raises(IndexError, match="index out of range in self"):
        tg.index_select(x, 0, tg.tensor([7]))
    with pytest.raises(IndexError, match="Index is supposed to be a vector"):
        tg.index_select(x, 0, tg.tensor([[1]]))


@pytest.mark.parametrize("dim,alpha", [(0, 1), (1, 2.5), (2, -1)])
def test_index_add_matches_torch(dim, alpha):
    idx = np.array([1, 0, 1])
    shape = list(A.shape)
    shape[dim] = 3
    src = RNG.standard_normal(shape)
    oracle.compare_fn(lambda x, s: tg.index_add(x, dim, tg.tensor(idx), s, alpha=alpha),
                      lambda x, s: torch.index_add(x, dim, torch.tensor(idx), s, alpha=alpha),
                      [A, src])

    def inplace(lib, x, s):
        y = x * 1
        v = y._version
        out = y.index_add_(dim, (tg if lib == "tg" else torch).tensor(idx), s, alpha=alpha)
        assert out is y and y._version == v + 1
        return y

    oracle.compare_fn(lambda x, s: inplace("tg", x, s), lambda x, s: inplace("torch", x, s), [A, src])


def test_index_add_errors_like_torch():
    x = tg.zeros(2, 4)
    with pytest.raises(IndexError, match=r"Number of indices \(2\) should be equal to source.size"):
        x.index_add_(0, tg.tensor([0, 1]), tg.zeros(1, 4))
    with pytest.raises(RuntimeError, match="index 5 is out of bounds for dimension 0 with size 2"):
        x.index_add_(0, tg.tensor([5]), tg.zeros(1, 4))  # (PyTorch's RuntimeError, as gather's)
    with pytest.raises(RuntimeError, match="source tensor shape must match self tensor shape"):
        x.index_add_(0, tg.tensor([1]), tg.zeros(1, 3))


def test_gather_scatter_errors_like_torch():
    x = tg.zeros(2, 4)
    with pytest.raises(RuntimeError, match="Index tensor must have the same number of dimensions"):
        tg.gather(x, 0, tg.zeros(2, dtype=tg.int64))
    with pytest.raises(RuntimeError, match="Size does not match at dimension 1"):
        tg.gather(x, 0, tg.zeros(2, 5, dtype=tg.int64))
    with pytest.raises(RuntimeError, match="Expected dtype int32/int64 for index"):
        tg.gather(x, 0, tg.zeros(2, 2))
    with pytest.raises(RuntimeError, match="index 7 is out of bounds for dimension 0 with size 2"):
        tg.gather(x, 0, tg.full((1, 1), 7, dtype=tg.int64))
    with pytest.raises(RuntimeError, match="no larger size than src"):
        tg.scatter_add(x, 0, tg.zeros(2, 2, dtype=tg.int64), tg.zeros(1, 2))


# ----------------------------------------------------------------------------- ordering
TIES = np.array([[3.0, 1.0, 3.0, 2.0, 3.0], [0.5, 0.5, -1.0, 2.0, 0.5]])


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_sort_stable_matches_torch(descending, dim):
    vt = tg.sort(tg.tensor(TIES), dim, descending=descending, stable=True)
    vr = torch.sort(torch.from_numpy(TIES), dim=dim, descending=descending, stable=True)
    oracle.assert_close(vt.values, vr.values)
    oracle.assert_close(vt.indices, vr.indices)
    oracle.assert_close(tg.argsort(tg.tensor(TIES), dim, descending, stable=True),
                        torch.argsort(torch.from_numpy(TIES), dim=dim, descending=descending,
                                      stable=True))
    oracle.compare_fn(lambda x: tg.sort(x, dim, descending).values,
                      lambda x: torch.sort(x, dim, descending).values, [A[0]])


def test_sort_handles_nan_like_torch():
    a = np.array([1.0, np.nan, 0.0, 2.0])
    for desc in (False, True):
        ours, ref = tg.tensor(a).sort(descending=desc), torch.from_numpy(a).sort(descending=desc)
        np.testing.assert_array_equal(ours.indices.numpy(), ref.indices.numpy())
        assert ours._fields == ("values", "indices")


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("k,dim", [(2, 1), (3, 0), (1, -1), (0, 1)])
def test_topk_matches_torch(k, dim, largest):
    ours = tg.topk(tg.tensor(A[0]), k, dim, largest=largest)
    ref = torch.topk(torch.from_numpy(A[0]), k, dim, largest=largest)
    oracle.assert_close(ours.values, ref.values)
    oracle.assert_close(ours.indices, ref.indices)  # distinct values: the indices are determined
    oracle.compare_fn(lambda x: x.topk(k, dim, largest).values,
                      lambda x: x.topk(k, dim, largest).values, [A[0]])


def test_topk_with_ties_gathers_consistent_indices():
    x = tg.tensor(TIES)
    values, indices = tg.topk(x, 3, 1)
    ref = torch.topk(torch.from_numpy(TIES), 3, 1)
    oracle.assert_close(values, ref.values)
    np.testing.assert_array_equal(np.take_along_axis(TIES, indices.numpy(), 1), values.numpy())
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        tg.topk(x, 6)


@pytest.mark.parametrize("a", [A > 0.5, np.array([0.0, 2.0, 0.0, -1.0]), np.array(3.0),
                               np.zeros((2, 0), dtype=bool)])
def test_nonzero_matches_torch(a):
    oracle.assert_close(tg.nonzero(tg.tensor(a)), torch.nonzero(torch.from_numpy(a)))
    for o, r in zip(tg.tensor(a).nonzero(as_tuple=True), torch.from_numpy(a).nonzero(as_tuple=True)):
        oracle.assert_close(o, r)
    oracle.assert_close(tg.where(tg.tensor(a))[0], torch.where(torch.from_numpy(a))[0])
