"""tg.linalg.ldl_factor / ldl_factor_ex / ldl_solve against torch.linalg (LAPACK's Bunch-Kaufman
pivots exactly, the factor and the solutions; info; no derivative, as PyTorch's) and compiled
(C kernels, against eager)."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tracegrad as tg  # noqa: E402

RNG = np.random.default_rng(12)


def _symmetric(n, weak_diagonal=False):
    m = RNG.standard_normal((n, n))
    m = m + m.T
    if weak_diagonal:  # (small diagonal entries: 2 x 2 blocks and interchanges)
        m[np.diag_indices(n)] *= 0.01
    return m


MATRICES = ([np.array([[0.0, 1.0, 2.0], [1.0, 0.0, 3.0], [2.0, 3.0, 1.0]]), np.array([[0.0, 1.0], [1.0, 0.0]]),
             np.array([[2.0]]), RNG.standard_normal((3, 5, 5))]
            + [_symmetric(n, weak) for n in (2, 3, 6, 12, 30) for weak in (False, True) for _ in range(3)])


@pytest.mark.parametrize("k", range(len(MATRICES)))
def test_matches_torch(k):
    a = MATRICES[k]
    ours, theirs = tg.linalg.ldl_factor(tg.tensor(a)), torch.linalg.ldl_factor(torch.tensor(a))
    assert type(ours).__name__ == "linalg_ldl_factor" and ours.pivots.dtype == tg.int32
    np.testing.assert_array_equal(ours.pivots.numpy(), theirs.pivots.numpy())
    np.testing.assert_allclose(ours.LD.numpy(), theirs.LD.numpy(), rtol=1e-9, atol=1e-11)
    b = RNG.standard_normal((2,) + a.shape[:-1] + (3,))  # (a batch to broadcast against)
    x = tg.linalg.ldl_solve(ours.LD, ours.pivots, tg.tensor(b))
    # (PyTorch's ldl_solve crashes when LD's batch must broadcast: it gets them expanded)
    batch = b.shape[:-2]
    want = torch.linalg.ldl_solve(theirs.LD.expand(batch + a.shape[-2:]).contiguous(),
                                  theirs.pivots.expand(batch + a.shape[-1:]).contiguous(), torch.tensor(b))
    np.testing.assert_allclose(x.numpy(), want.numpy(), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose((np.tril(a) + np.tril(a, -1).swapaxes(-1, -2)) @ x.numpy(), b, atol=1e-8)


def test_float32_empty_singular_and_info():
    a = _symmetric(6, weak_diagonal=True).astype(np.float32)
    ours, theirs = tg.linalg.ldl_factor(tg.tensor(a)), torch.linalg.ldl_factor(torch.tensor(a))
    assert ours.LD.dtype == tg.float32
    np.testing.assert_allclose(ours.LD.numpy(), theirs.LD.numpy(), rtol=1e-4, atol=1e-5)
    for x in (np.zeros((0, 0)), np.zeros((2, 2)), np.array([[1.0, 2.0], [2.0, 4.0]]),
              np.stack([np.eye(2), np.zeros((2, 2))])):
        for o, t in zip(tg.linalg.ldl_factor_ex(tg.tensor(x)), torch.linalg.ldl_factor_ex(torch.tensor(x))):
            assert tuple(o.shape) == tuple(t.shape) and str(o.dtype)[-5:] == str(t.dtype)[-5:]
            np.testing.assert_array_equal(o.numpy(), t.numpy())
    with pytest.raises(RuntimeError, match=r"D\[1,1\] is exactly zero \(batch element 1\)"):
        tg.linalg.ldl_factor(tg.tensor(np.stack([np.eye(2), np.zeros((2, 2))])))
    with pytest.raises(RuntimeError, match=r"D\[2,2\] is exactly zero"):
        tg.linalg.ldl_factor_ex(tg.tensor([[1.0, 2.0], [2.0, 4.0]]), check_errors=True)


def test_no_derivative_as_in_pytorch():
    """The results require grad; a backward through them raises PyTorch's error (no gradient
    goes missing silently)."""
    a = tg.tensor(MATRICES[0], requires_grad=True)
    LD, pivots = tg.linalg.ldl_factor(a)
    assert LD.requires_grad and not pivots.requires_grad
    with pytest.raises(RuntimeError, match="derivative for aten::linalg_ldl_factor_ex is not implemented"):
        (LD.sum() + a.sum()).backward()
    b = tg.ones(3, 1, dtype=tg.float64, requires_grad=True)
    x = tg.linalg.ldl_solve(LD.detach(), pivots, b)
    with pytest.raises(RuntimeError, match="derivative for aten::linalg_ldl_solve is not implemented"):
        x.sum().backward()
    with tg.no_grad():
        assert not tg.linalg.ldl_factor(a).LD.requires_grad


def test_compiled_runs_in_c_and_matches_eager():
    """ldl_factor_ex and ldl_solve compile to C kernels (fullgraph: nothing falls back), with
    eager's pivots exactly and its factor and solutions; ldl_factor's singularity check reads
    the factor: a graph break."""
    fn = lambda x, y: (tg.linalg.ldl_factor_ex(x)[:2], tg.linalg.ldl_solve(*tg.linalg.ldl_factor_ex(x)[:2], y))
    for a in MATRICES[:4] + MATRICES[-6:]:
        for dtype in (np.float64, np.float32):
            compiled = tg.compile(fn, backend="c", fullgraph=True)
            x = tg.tensor(a.astype(dtype))
            y = tg.tensor(RNG.standard_normal(a.shape[:-1] + (3,)).astype(dtype))
            (ld, pivots), solution = compiled(x, y)
            (ld_want, pivots_want), solution_want = fn(x, y)
            assert type(compiled.programs[-1].executable).__name__ == "CExecutable"
            np.testing.assert_array_equal(pivots.numpy(), pivots_want.numpy())
            tol = 1e-4 if dtype == np.float32 else 1e-10
            np.testing.assert_allclose(ld.numpy(), ld_want.numpy(), rtol=tol, atol=tol)
            np.testing.assert_allclose(solution.numpy(), solution_want.numpy(), rtol=tol, atol=tol)
    a = tg.tensor(MATRICES[0])
    with pytest.warns(RuntimeWarning, match="graph break"):
        got = tg.compile(lambda x: tg.linalg.ldl_factor(x).LD, backend="c")(a)
    np.testing.assert_array_equal(got.numpy(), tg.linalg.ldl_factor(a).LD.numpy())


@pytest.mark.parametrize("pivots", [[0, 1, 3], [4, 2, 3], [-2, 2, 3], [1, 2, -3], [-2, -2, -4]])
def test_pivots_that_are_not_ldl_factors_raise(pivots):
    """LAPACK's sytrs reads such pivots out of bounds; ours raise, compiled or not."""
    ld = tg.tensor(MATRICES[0])
    piv = tg.tensor(np.array(pivots, np.int32))
    b = tg.ones(3, 1, dtype=tg.float64)
    with pytest.raises(RuntimeError, match="pivots must be those of linalg.ldl_factor"):
        tg.linalg.ldl_solve(ld, piv, b)
    with pytest.raises(RuntimeError, match="pivots must be those of linalg.ldl_factor"):
        tg.compile(tg.linalg.ldl_solve, backend="c", fullgraph=True)(ld, piv, b)


def test_errors():
    with pytest.raises(RuntimeError, match="must have at least 2 dimensions"):
        tg.linalg.ldl_factor(tg.ones(3))
    with pytest.raises(RuntimeError, match="square matrices, but they are 2 by 3"):
        tg.linalg.ldl_factor(tg.ones(2, 3))
    with pytest.raises(RuntimeError, match="floating point or complex tensor as input. Got int64"):
        tg.linalg.ldl_factor(tg.ones(2, 2, dtype=tg.int64))
    LD, pivots = tg.linalg.ldl_factor(tg.tensor(MATRICES[0]))
    with pytest.raises(RuntimeError, match="B must have at least 2 dimensions"):
        tg.linalg.ldl_solve(LD, pivots, tg.ones(3, dtype=tg.float64))
    with pytest.raises(RuntimeError, match=r"Incompatible shapes of A and B for the equation AX = B \(3x3 and 2x1\)"):
        tg.linalg.ldl_solve(LD, pivots, tg.ones(2, 1, dtype=tg.float64))
