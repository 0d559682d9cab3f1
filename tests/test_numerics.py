"""tg.cdist, trapezoid, cumulative_trapezoid, gradient, renorm, frexp, chain_matmul, hardshrink
(tracegrad/numerics.py); vander, cartesian_prod, combinations, block_diag, atleast_nd, dstack,
tril/triu_indices (layout.py); searchsorted, bucketize, isin, msort, mode (searching.py):
values and gradients against PyTorch, traced forms compiled against eager."""
import numpy as np
import pytest

import tracegrad as tg

torch = pytest.importorskip("torch")
from oracle import assert_close, compare_fn, to_tg, to_torch  # noqa: E402

rng = np.random.default_rng(0)
A = rng.standard_normal((2, 5, 3))
Bm = rng.standard_normal((2, 4, 3))
BIG = rng.standard_normal((30, 3))  # more than 25 rows: PyTorch's product form of p = 2


def _with(name, **kw):
    return (lambda *xs: getattr(tg, name)(*xs, **kw)), (lambda *xs: getattr(torch, name)(*xs, **kw))


@pytest.mark.parametrize("p", [2.0, 1.0, 0.5, 3.0, float("inf")])
def test_cdist(p):
    compare_fn(*_with("cdist", p=p), [A, Bm])


@pytest.mark.parametrize("mode", ["use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist",
                                  "use_mm_for_euclid_dist_if_necessary"])
def test_cdist_modes_and_zero_distances(mode):
    x = np.concatenate([BIG, BIG[:3]])  # repeated rows: zero distances, gradient 0 there
    compare_fn(*_with("cdist", compute_mode=mode), [x, BIG], rtol=1e-7, atol=1e-7)


def test_cdist_errors_are_named():
    with pytest.raises(RuntimeError, match="same number of columns"):
        tg.cdist(tg.ones(2, 3), tg.ones(2, 4))
    with pytest.raises(RuntimeError, match="at least 2D"):
        tg.cdist(tg.ones(3), tg.ones(2, 3))


@pytest.mark.parametrize("kind", ["dx", "x1d", "xfull", "plain"])
@pytest.mark.parametrize("name", ["trapezoid", "cumulative_trapezoid"])
def test_trapezoid(name, kind):
    y = rng.standard_normal((3, 6))
    x = np.sort(rng.standard_normal(6))
    if kind == "dx":
        compare_fn(*_with(name, dx=0.3, dim=1), [y])
    elif kind == "plain":
        compare_fn(*_with(name, dim=0), [y])
    elif kind == "x1d":
        compare_fn(*_with(name), [y, x])
    else:
        compare_fn(*_with(name), [y, np.broadcast_to(x, y.shape).copy()])


@pytest.mark.parametrize("edge_order", [1, 2])
@pytest.mark.parametrize("spacing", ["default", "scalar", "coords"])
def test_gradient(edge_order, spacing):
    y = rng.standard_normal((4, 5))
    coords = [np.sort(rng.standard_normal(4)), np.sort(rng.standard_normal(5))]
    for lib, conv in ((tg, to_tg), (torch, to_torch)):
        kw = {"edge_order": edge_order}
        if spacing == "scalar":
            kw["spacing"] = 0.5
        elif spacing == "coords":
            kw["spacing"] = [conv(c) for c in coords]
        out = lib.gradient(conv(y), **kw)
        if lib is tg:
            got = out
        else:
            want = out
    for g, w in zip(got, want):
        assert_close(g, w, "gradient")
    d1 = tg.gradient(to_tg(y), dim=1)
    assert len(d1) == 1 and d1[0].shape == (4, 5)


def test_gradient_differentiates():
    compare_fn(lambda y: tg.gradient(y, dim=1, edge_order=2)[0],
               lambda y: torch.gradient(y, dim=1, edge_order=2)[0], [rng.standard_normal((3, 5))])


@pytest.mark.parametrize("p,maxnorm", [(2, 1.0), (1, 0.5), (3, 100.0)])
def test_renorm(p, maxnorm):
    compare_fn(lambda x: tg.renorm(x, p, 1, maxnorm), lambda x: torch.renorm(x, p, 1, maxnorm),
               [rng.standard_normal((3, 4, 2))])


def test_frexp_chain_matmul_hardshrink():
    x = rng.standard_normal(7) * 100
    m, e = tg.frexp(to_tg(x))
    tm, te = torch.frexp(to_torch(x))
    assert_close(m, tm, "mantissa")
    assert e.dtype == tg.int32 and (e.numpy() == te.numpy()).all()
    assert type(tg.frexp(to_tg(x))).__name__ == "frexp" and tg.frexp(to_tg(x)).exponent.dtype == tg.int32
    mats = [rng.standard_normal(s) for s in [(2, 3), (3, 4), (4, 2)]]
    compare_fn(lambda *m: tg.chain_matmul(*m), lambda *m: torch.chain_matmul(*m), mats)
    compare_fn(lambda x: tg.hardshrink(x, 0.7), lambda x: torch.hardshrink(x, 0.7), [rng.standard_normal(9)])


def test_combinatorics_and_block_diag():
    a, b = np.arange(3.0), np.arange(2.0) + 5
    compare_fn(lambda x, y: tg.cartesian_prod(x, y), lambda x, y: torch.cartesian_prod(x, y), [a, b])
    for r in (0, 1, 2, 3, 4):
        for rep in (False, True):
            compare_fn(lambda x: tg.combinations(x, r, rep), lambda x: torch.combinations(x, r, rep), [a])
    parts = [rng.standard_normal((2, 2)), rng.standard_normal(3), np.array(4.0), rng.standard_normal((1, 2))]
    compare_fn(lambda *m: tg.block_diag(*m), lambda *m: torch.block_diag(*m), parts)
    for n in (0, 3):
        np.testing.assert_array_equal(tg.tril_indices(4, 5, n - 1).numpy(), torch.tril_indices(4, 5, n - 1).numpy())
        np.testing.assert_array_equal(tg.triu_indices(5, 3, 1 - n).numpy(), torch.triu_indices(5, 3, 1 - n).numpy())


@pytest.mark.parametrize("k", [1, 2, 3])
def test_atleast_and_dstack(k):
    for shape in [(), (3,), (2, 3), (2, 3, 4)]:
        x = rng.standard_normal(shape)
        got = getattr(tg, f"atleast_{k}d")(to_tg(x))
        want = getattr(torch, f"atleast_{k}d")(to_torch(x))
        assert tuple(got.shape) == tuple(want.shape)
    pair = getattr(tg, f"atleast_{k}d")(tg.ones(2), tg.tensor(1.0))
    assert isinstance(pair, tuple) and len(pair) == 2
    compare_fn(lambda x, y: tg.dstack([x, y]), lambda x, y: torch.dstack([x, y]),
               [rng.standard_normal((2, 3)), rng.standard_normal((2, 3))])


SEQ = np.array([1.0, 2.0, 2.0, 4.0, 6.0])  # NaNs in the sequence: PyTorch's result depends on its search path
VALUES = np.array([[0.0, 2.0, 3.0, np.nan], [5.0, 1.0, 2.0, 4.0]])


@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_and_bucketize_equal_torch_eager_and_compiled(side):
    seq2 = np.sort(rng.standard_normal((2, 6)), axis=1)
    vals2 = rng.standard_normal((2, 3))
    right = side == "right"
    for seq, vals in ((SEQ, VALUES), (seq2, vals2)):
        want = torch.searchsorted(to_torch(seq), to_torch(vals), side=side)
        got = tg.searchsorted(to_tg(seq), to_tg(vals), side=side)
        compiled = tg.compile(lambda s, v: tg.searchsorted(s, v, right=right), fullgraph=True)(to_tg(seq), to_tg(vals))
        np.testing.assert_array_equal(got.numpy(), want.numpy())
        np.testing.assert_array_equal(compiled.numpy(), want.numpy())
    b = to_tg(np.array([1.0, 3.0, 5.0]))
    x = rng.standard_normal((3, 4)) * 4
    np.testing.assert_array_equal(tg.bucketize(to_tg(x), b, right=right).numpy(),
                                  torch.bucketize(to_torch(x), to_torch(b.numpy()), right=right).numpy())
    assert tg.searchsorted(b, 3.0, out_int32=True).dtype == tg.int32
    with pytest.raises(RuntimeError, match="opposites"):
        tg.searchsorted(b, b, right=True, side="left")


def test_isin_msort_mode():
    e, t = np.array([[1, 2, 3], [4, 5, 6]]), np.array([2, 6, 9])
    for invert in (False, True):
        want = torch.isin(to_torch(e), to_torch(t), invert=invert).numpy()
        np.testing.assert_array_equal(tg.isin(to_tg(e), to_tg(t), invert=invert).numpy(), want)
        compiled = tg.compile(lambda a, b: tg.isin(a, b, invert=invert), fullgraph=True)
        np.testing.assert_array_equal(compiled(to_tg(e), to_tg(t)).numpy(), want)
    np.testing.assert_array_equal(tg.isin(to_tg(e), 5).numpy(), torch.isin(to_torch(e), 5).numpy())
    compare_fn(tg.msort, torch.msort, [rng.standard_normal((4, 3))])
    x = np.array([[1, 2, 2, 3, 3], [5, 5, 1, 1, 0], [7, 7, 7, 1, 1]], dtype=np.float64)
    for dim, keepdim in ((1, False), (0, True), (-1, True)):
        got, want = tg.mode(to_tg(x), dim, keepdim), torch.mode(to_torch(x), dim, keepdim)
        np.testing.assert_array_equal(got.values.numpy(), want.values.numpy())
        np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
    compare_fn(lambda v: tg.mode(v, 1).values, lambda v: torch.mode(v, 1).values, [x])


@pytest.mark.parametrize("x,kwargs", [([1, 2, 3], {"N": 3}), ([1.5, -2.0, 0.5, 3.0], {}),
                                      ([2, -3], {"N": 5, "increasing": True}), ([1.0, 2.0], {"N": 0}),
                                      ([1.0, 2.0], {"N": 1})])
def test_vander(x, kwargs):
    """Values and dtype as PyTorch's; the gradient by finite differences (PyTorch's own
    vander backward fails: it modifies a saved tensor in place)."""
    got, want = tg.vander(tg.tensor(x), **kwargs), torch.vander(torch.tensor(x), **kwargs)
    assert got.dtype.name == str(want.dtype).replace("torch.", "")
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    compiled = tg.compile(lambda v: tg.vander(v, **kwargs), backend="c", fullgraph=True)(tg.tensor(x))
    np.testing.assert_array_equal(compiled.numpy(), want.numpy())
    if isinstance(x[0], float) and kwargs.get("N", len(x)) > 0:
        assert tg.autograd.gradcheck(lambda v: tg.vander(v, **kwargs),
                                     [tg.tensor(x, dtype=tg.float64, requires_grad=True)])
