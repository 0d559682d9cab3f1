"""tg.linalg.lstsq against torch.linalg.lstsq (every CPU driver: which results are filled, their
shapes and dtypes, values and gradients, vector right-hand sides, batches, rank deficiency,
rcond, errors), compiled against eager; and eig / eigvals, which need complex dtypes."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tracegrad as tg  # noqa: E402

RNG = np.random.default_rng(8)
RANK2 = RNG.standard_normal((5, 2)) @ RNG.standard_normal((2, 3))
SHAPES = {  # (A, B)
    "tall": ((5, 3), (5, 2)),
    "wide": ((3, 5), (3, 2)),
    "vector-batched": ((2, 5, 3), (2, 5)),
    "broadcast-A": ((1, 5, 3), (4, 5, 2)),
    "broadcast-B": ((4, 5, 3), (1, 5, 2)),
}
CASES = [(shape, driver) for shape in SHAPES for driver in (None, "gels", "gelsy", "gelsd", "gelss")]


def _compare(a, b, rcond=None, driver=None):
    ours_in = [tg.tensor(a, requires_grad=True), tg.tensor(b, requires_grad=True)]
    theirs_in = [torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)]
    ours = tg.linalg.lstsq(*ours_in, rcond, driver=driver)
    theirs = torch.linalg.lstsq(*theirs_in, rcond, driver=driver)
    assert type(ours).__name__ == "linalg_lstsq" and ours._fields == ("solution", "residuals", "rank", "singular_values")
    for o, t, field in zip(ours, theirs, ours._fields):
        assert tuple(o.shape) == tuple(t.shape), field
        assert str(o.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], field
        assert o.requires_grad == t.requires_grad or not o.numel(), field  # (empty: no gradient)
        np.testing.assert_allclose(o.detach().numpy(), t.detach().numpy(), rtol=1e-9, atol=1e-10, err_msg=field)
    weights = np.cos(np.arange(theirs.solution.numel())).reshape(tuple(theirs.solution.shape))
    loss_ours = (ours.solution * tg.tensor(weights)).sum() + ours.residuals.sum()
    loss_theirs = (theirs.solution * torch.tensor(weights)).sum() + theirs.residuals.sum()
    loss_ours.backward()
    loss_theirs.backward()
    for o, t in zip(ours_in, theirs_in):
        np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("shape,driver", CASES, ids=[f"{s}-{d}" for s, d in CASES])
def test_matches_torch(shape, driver):
    a_shape, b_shape = SHAPES[shape]
    _compare(RNG.standard_normal(a_shape), RNG.standard_normal(b_shape), driver=driver)


@pytest.mark.parametrize("driver", ["gelsy", "gelsd", "gelss"])
def test_rank_deficient_and_rcond(driver):
    """The minimum-norm solution and the rank; a larger rcond cuts a full-rank matrix (PyTorch's
    gradient is then pinv's with its default cut-off: so is ours). gelsy truncates its pivoted QR
    there, not the SVD: its solution then differs (lstsq's docstring)."""
    _compare(RANK2, RNG.standard_normal((5, 2)), driver=driver)
    a, b = RNG.standard_normal((5, 3)), RNG.standard_normal((5, 2))
    _compare(a, b, rcond=1e-3, driver=driver)
    if driver != "gelsy":
        _compare(a, b, rcond=0.5, driver=driver)


def test_float32_empty_and_negative_rcond():
    a, b = RNG.standard_normal((5, 3)), RNG.standard_normal((5, 2))
    ours = tg.linalg.lstsq(tg.tensor(a, dtype=tg.float32), tg.tensor(b, dtype=tg.float32))
    theirs = torch.linalg.lstsq(torch.tensor(a, dtype=torch.float32), torch.tensor(b, dtype=torch.float32))
    assert ours.solution.dtype == tg.float32
    np.testing.assert_allclose(ours.solution.numpy(), theirs.solution.numpy(), rtol=1e-5, atol=1e-5)
    for driver in ("gelsy", "gelsd"):
        ours = tg.linalg.lstsq(tg.zeros(0, 3), tg.zeros(0, 2), driver=driver)
        theirs = torch.linalg.lstsq(torch.zeros(0, 3), torch.zeros(0, 2), driver=driver)
        for o, t in zip(ours, theirs):
            assert tuple(o.shape) == tuple(t.shape) and not o.numpy().any()
    assert tg.linalg.lstsq(tg.tensor(a), tg.tensor(b), -1.0, driver="gelsd").rank.item() == 3


def test_compiled():
    """The default driver compiles whole; gelsd's full-rank check (for the residuals) reads the
    rank: a graph break, named in a warning."""
    a, b = tg.tensor(RNG.standard_normal((5, 3))), tg.tensor(RNG.standard_normal((5, 2)))
    compiled = tg.compile(lambda x, y: tuple(tg.linalg.lstsq(x, y)), backend="c", fullgraph=True)
    for g, w in zip(compiled(a, b), tg.linalg.lstsq(a, b)):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-10, atol=1e-12)
    with pytest.warns(RuntimeWarning, match="graph break"):
        compiled = tg.compile(lambda x, y: tuple(tg.linalg.lstsq(x, y, driver="gelsd")), backend="c")
        got = compiled(a, b)
    for g, w in zip(got, tg.linalg.lstsq(a, b, driver="gelsd")):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-10, atol=1e-12)


def test_errors():
    a = tg.ones(5, 3, dtype=tg.float64)
    for args, kwargs, message in [
        ((a, tg.ones(5, 2, dtype=tg.float64)), {"driver": "foo"}, "`driver` should be one of"),
        ((tg.ones(5, dtype=tg.float64), tg.ones(5, 2, dtype=tg.float64)), {}, "input must have at least 2 dimensions"),
        ((a, tg.ones(4, 2, dtype=tg.float64)), {}, r"input.size\(-2\) should match other.size\(-2\)"),
        ((a, tg.ones(3, 5, 2, dtype=tg.float64)), {}, "input.dim\\(\\) must be greater or equal to other.dim\\(\\)"),
        ((a, tg.ones(5, 2)), {}, "same dtype, but got input's dtype Double and other's dtype Float"),
        ((tg.ones(5, 3, dtype=tg.int64), tg.ones(5, 2, dtype=tg.int64)), {}, "types other than float and double"),
    ]:
        with pytest.raises(RuntimeError, match=message):
            tg.linalg.lstsq(*args, **kwargs)


@pytest.mark.parametrize("name", ["eig", "eigvals"])
def test_eig_needs_complex_dtypes(name):
    with pytest.raises(NotImplementedError, match=f"tg.linalg.{name}: its results are complex.*no complex dtypes"):
        getattr(tg.linalg, name)(tg.eye(2))
