"""The torch.Tensor methods bound in tracegrad/_methods_extra.py and the eager-only functions of
numerics.py (angle, gcd, lcm, nextafter, histogram): values, gradients and in-place effects
against PyTorch."""
import warnings

import numpy as np
import pytest

import tracegrad as tg

torch = pytest.importorskip("torch")
from oracle import assert_close, compare_fn, to_tg, to_torch  # noqa: E402

rng = np.random.default_rng(1)
X = rng.standard_normal((3, 4))


@pytest.mark.parametrize("call", [
    lambda t, lib: t.kron(lib.ones(2, 1, dtype=t.dtype)),
    lambda t, lib: t.renorm(2, 0, 1.0),
    lambda t, lib: t.hardshrink(0.6),
    lambda t, lib: t.split_with_sizes([1, 3], 1)[1],
    lambda t, lib: t.unsafe_chunk(2, 1)[0],
    lambda t, lib: t.narrow_copy(1, 1, 2),
    lambda t, lib: t.adjoint(),
    lambda t, lib: t.mH,
    lambda t, lib: t.H,
    lambda t, lib: t.conj() + t.resolve_neg() + t.real,
    lambda t, lib: t.sum_to_size(1, 4),
    lambda t, lib: t.sum_to_size(3, 1),
    lambda t, lib: t[:, :3].matrix_exp(),
    lambda t, lib: t.prelu(lib.tensor([0.25], dtype=t.dtype)),
    lambda t, lib: t.angle(),
    lambda t, lib: t.mode(1).values,
], ids=lambda f: "")
def test_methods_equal_torch_values_and_gradients(call):
    compare_fn(lambda t: call(t, tg), lambda t: call(t, torch), [X])


def test_inplace_forms():
    for name, args in [("greater_", (0.1,)), ("less_equal_", (0.0,)), ("not_equal_", (0.0,)),
                       ("renorm_", (1, 1, 0.5))]:
        a, b = to_tg(X), to_torch(X)
        getattr(a, name)(*args)
        getattr(b, name)(*args)
        assert_close(a, b, name)
    m = rng.standard_normal((4, 2))
    for name, operands in [("addmm_", (X, m)), ("addr_", (rng.standard_normal(3), rng.standard_normal(2))),
                           ("addmv_", (X, rng.standard_normal(4)))]:
        base = rng.standard_normal((3, 2) if name != "addmv_" else (3,))
        a, b = to_tg(base), to_torch(base)
        getattr(a, name)(*map(to_tg, operands), beta=0.5, alpha=2.0)
        getattr(b, name)(*map(to_torch, operands), beta=0.5, alpha=2.0)
        assert_close(a, b, name)


def test_complex_api_on_real_tensors():
    t = to_tg(X)
    assert t.real is t and not t.is_conj() and not t.is_neg() and t.conj() is t
    assert t.isreal().all() and t.isreal().dtype == tg.bool
    with pytest.raises(RuntimeError, match="imag is not implemented"):
        t.imag
    with pytest.raises(RuntimeError, match="only supported on matrices"):
        tg.ones(2, 2, 2).H


@pytest.mark.parametrize("accumulate", [False, True])
def test_put(accumulate):
    idx = np.array([0, -1, 5, 5]) if accumulate else np.array([0, -1, 5])
    src = rng.standard_normal(idx.size)
    a, b = to_tg(X), to_torch(X)
    assert a.put_(to_tg(idx), to_tg(src), accumulate) is a
    b.put_(to_torch(idx), to_torch(src), accumulate)
    assert_close(a, b, "put_")
    compare_fn(lambda x, s: x.put(to_tg(idx), s, accumulate), lambda x, s: x.put(to_torch(idx), s, accumulate),
               [X, src])
    with pytest.raises(RuntimeError, match="same number of elements"):
        to_tg(X).put_(to_tg(np.array([0, 1])), to_tg(np.ones(3)))


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
def test_index_reduce(reduce, include_self):
    index = np.array([0, 2, 0, 1, 2])
    src = rng.standard_normal((3, 5))
    compare_fn(lambda x, s: x.index_reduce(1, to_tg(index), s, reduce, include_self=include_self),
               lambda x, s: x.index_reduce(1, to_torch(index), s, reduce, include_self=include_self),
               [X, src])
    a = to_tg(X)
    a.index_reduce_(1, to_tg(index), to_tg(src), reduce, include_self=include_self)
    assert_close(a, to_torch(X).index_reduce_(1, to_torch(index), to_torch(src), reduce,
                                              include_self=include_self), "index_reduce_")


def test_sum_to_size_error_names_the_sizes():
    with pytest.raises(RuntimeError, match=r"size \[2, 4\] is not expandable to size \[3, 4\]"):
        to_tg(X).sum_to_size(2, 4)


def test_apply_map_resize():
    a, b = to_tg(X), to_torch(X)
    a.apply_(lambda v: v * 2 + 1)
    b.apply_(lambda v: v * 2 + 1)
    assert_close(a, b, "apply_")
    other = rng.standard_normal(4)
    a.map_(to_tg(other), lambda u, v: u - v)
    b.map_(to_torch(other), lambda u, v: u - v)
    assert_close(a, b, "map_")
    with pytest.raises(RuntimeError, match="requires grad"):
        tg.ones(2, requires_grad=True).apply_(abs)
    r = to_tg(X)
    version = r._version
    r.resize_(2, 3)
    assert r.shape == (2, 3) and r._version > version
    np.testing.assert_array_equal(r.numpy().reshape(-1), X.reshape(-1)[:6])
    r.resize_as_(tg.ones(4, 4))
    np.testing.assert_array_equal(r.numpy().reshape(-1)[:6], X.reshape(-1)[:6])
    with pytest.raises(RuntimeError, match="view"):
        to_tg(X)[0].resize_(2)


def test_layout_queries_and_what_has_no_form():
    x = tg.arange(12.0).reshape(3, 4)
    tx = torch.arange(12.0).reshape(3, 4)
    for view in (lambda t: t[1:, 2:], lambda t: t.t()[1], lambda t: t):
        assert view(x).storage_offset() == view(tx).storage_offset()
    assert x.dim_order() == tx.dim_order() and x.new_empty_strided((2, 2), (2, 1)).shape == (2, 2)
    assert not (x.is_sparse or x.is_quantized or x.is_meta or x.is_pinned() or x.is_shared())
    with pytest.raises(AssertionError, match="not compiled with CUDA enabled"):  # (PyTorch's CPU build's error)
        x.cuda()
    assert x.bfloat16().dtype is tg.bfloat16 and x.half().dtype is tg.float16


def test_angle_gcd_lcm_nextafter_histogram():
    v = np.array([-1.0, 0.0, 2.0, np.nan, -np.inf, np.inf])
    assert_close(tg.angle(to_tg(v)), torch.angle(to_torch(v)), "angle")
    a, b = np.array([12, 18, -4, 0]), np.array([8, 27, 6, 5])
    for name in ("gcd", "lcm"):
        np.testing.assert_array_equal(getattr(tg, name)(to_tg(a), to_tg(b)).numpy(),
                                      getattr(torch, name)(to_torch(a), to_torch(b)).numpy())
    f = np.array([1.0, 0.0, -2.0])
    np.testing.assert_array_equal(tg.nextafter(to_tg(f), to_tg(np.ones(3))).numpy(),
                                  torch.nextafter(to_torch(f), to_torch(np.ones(3))).numpy())
    with pytest.raises(RuntimeError, match="not implemented"):
        tg.gcd(to_tg(f), to_tg(f))
    data = rng.standard_normal(50)
    w = rng.random(50)
    for kw in (dict(bins=5), dict(bins=4, range=(-1.0, 1.0)), dict(bins=6, density=True)):
        got = tg.histogram(to_tg(data), weight=to_tg(w), **kw)
        want = torch.histogram(to_torch(data), weight=to_torch(w), **kw)
        assert_close(got.hist, want.hist, "hist")
        assert_close(got.bin_edges, want.bin_edges, "edges")
    edges = np.array([-3.0, -1.0, 0.0, 2.0])
    got = to_tg(data).histogram(to_tg(edges))
    assert_close(got[0], torch.histogram(to_torch(data), to_torch(edges))[0], "hist with edges")


@pytest.mark.parametrize("shape, size, fill", [((2, 3), 4, -1), ((2, 3), 2, 7), ((5,), 6, -1), ((), 2, -1),
                                               ((0, 2), 3, -1)])
def test_nonzero_static_equals_torchs_and_compiles(shape, size, fill):
    x = (np.random.default_rng(3).random(shape) > 0.5).astype(np.float32) if shape else np.float32(1.0)
    want = torch.nonzero_static(torch.tensor(x), size=size, fill_value=fill)
    got = tg.nonzero_static(tg.tensor(x), size=size, fill_value=fill)
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    compiled = tg.compile(lambda t: t.nonzero_static(size=size, fill_value=fill), fullgraph=True)
    np.testing.assert_array_equal(compiled(tg.tensor(x)).numpy(), want.numpy())


def test_deprecated_lu_and_triangular_solve_and_i0():
    a = np.tril(np.random.default_rng(4).standard_normal((3, 3))) + 3 * np.eye(3)
    b = np.random.default_rng(5).standard_normal((3, 2))
    for upper, transpose, unit in [(False, False, False), (False, True, False), (False, False, True)]:
        with pytest.warns(UserWarning, match="deprecated"):
            got = tg.triangular_solve(tg.tensor(b), tg.tensor(a), upper=upper, transpose=transpose,
                                      unitriangular=unit)
        with warnings.catch_warnings():  # (torch warns once per process)
            warnings.simplefilter("ignore")
            want = torch.triangular_solve(torch.tensor(b), torch.tensor(a), upper=upper, transpose=transpose,
                                          unitriangular=unit)
        np.testing.assert_allclose(got.solution.numpy(), want.solution.numpy(), rtol=1e-12)
        np.testing.assert_array_equal(got.cloned_coefficient.numpy(), want.cloned_coefficient.numpy())
    m = np.random.default_rng(6).standard_normal((3, 3))
    with pytest.warns(UserWarning, match="torch.lu is deprecated"):
        lu, piv, info = tg.tensor(m).lu(get_infos=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_lu, t_piv, t_info = torch.tensor(m).lu(get_infos=True)
    np.testing.assert_allclose(lu.numpy(), t_lu.numpy(), rtol=1e-12)
    np.testing.assert_array_equal(piv.numpy(), t_piv.numpy())
    assert_close(tg.i0(to_tg(X)), torch.i0(to_torch(X)), "i0")
