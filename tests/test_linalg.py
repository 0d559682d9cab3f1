"""tg.linalg against torch.linalg: values and gradients (the primitives' rules are also in the
registry tests), the functions built on them, singular matrices, and compiled programs (the
C kernels: LU with partial pivoting) against eager."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tracegrad as tg  # noqa: E402

warnings.filterwarnings("ignore", "torch.cholesky is deprecated")  # (the oracle's own deprecation)

RNG = np.random.default_rng(11)
A = RNG.uniform(-1, 1, (2, 4, 4)) + 3 * np.eye(4)
B = RNG.standard_normal((2, 4, 3))
V = RNG.standard_normal(4)
M = RNG.standard_normal((3, 5))
SPD = A @ np.swapaxes(A, -1, -2) + np.eye(4)  # symmetric positive-definite

def _spectral(L, eig):
    """``V diag(f(w)) V^T`` with f = exp(w / 4): independent of each vector's sign."""
    w, v = eig
    return (v * L.exp(w / 4).unsqueeze(-2)) @ v.mT


def _svd_case(L, x, full_matrices=False):
    """``U f(S) Vh + |U| |Vh|``: independent of the signs of each pair of singular vectors."""
    u, s, vh = L.linalg.svd(x, full_matrices=full_matrices)
    return (u * L.exp(s / 4).unsqueeze(-2)) @ vh + u.abs() @ vh.abs()


def _svd_full_case(L, x):
    """``full_matrices=True``: the first k columns of U and rows of Vh (the rest, any basis of
    what remains, are LAPACK's choice in PyTorch; their gradients are ignored in both)."""
    u, s, vh = L.linalg.svd(x)
    k = s.shape[-1]
    return (u[..., :, :k] * L.exp(s / 4).unsqueeze(-2)) @ vh[..., :k, :]


def _legacy_svd_case(L, x, some=True):
    """``tg.svd`` / ``torch.svd`` (V, not Vh): ``U[:, :k] f(S) V^T`` and ``|V|`` (k x k)."""
    u, s, v = x.svd(some=some)
    k = s.shape[-1]
    return (u[..., :, :k] * L.exp(s / 4).unsqueeze(-2)) @ v.mT[..., :k, :] + v.abs().sum(-2, keepdim=True)


CASES = {
    "inv": (lambda L, a, b: L.linalg.inv(a), [A, B]),
    "det": (lambda L, a, b: L.linalg.det(a * 0.5), [A, B]),
    "slogdet": (lambda L, a, b: L.linalg.slogdet(a - 2.5 * L.eye(4, dtype=a.dtype)).logabsdet, [A, B]),
    "solve": (lambda L, a, b: L.linalg.solve(a, b), [A, B]),
    "solve-broadcast": (lambda L, a, b: L.linalg.solve(a[:1], b[0]), [A, B]),
    "solve-vector": (lambda L, a, b: L.linalg.solve(a[0], b[0, :, 0]), [A, B]),
    "solve-right": (lambda L, a, b: L.linalg.solve(a[0], b[0].T, left=False), [A, B]),
    "vector_norm": (lambda L, a, b: L.linalg.vector_norm(b, 3, dim=1), [B, A]),
    "matrix_norm-fro": (lambda L, m, a: L.linalg.matrix_norm(m), [M, A]),
    "matrix_norm-1": (lambda L, m, a: L.linalg.matrix_norm(m, 1) + L.linalg.matrix_norm(m, -float("inf")), [M, A]),
    "norm": (lambda L, m, a: L.linalg.norm(m) + L.linalg.norm(m, float("inf")), [M, A]),
    "matrix_power": (lambda L, a, b: L.linalg.matrix_power(a * 0.3, 5) + L.linalg.matrix_power(a, -2), [A, B]),
    "inverse-method": (lambda L, a, b: a[1].inverse() + a.det().sum(), [A, B]),
    "matrix_exp": (lambda L, a, b: L.linalg.matrix_exp(a * 0.3), [A, B]),
    "matrix_exp-scaled": (lambda L, a, b: L.linalg.matrix_exp(a * 4), [A, B]),
    "multi_dot": (lambda L, a, b: L.linalg.multi_dot([b[0, :, 0], a[0], a[1], b[1]]), [A, B]),
    "multi_dot-matrices": (lambda L, a, b: L.linalg.multi_dot([b[0].T, a[0], a[1] * 2, b[1]]), [A, B]),
    "vecdot-diagonal": (lambda L, a, b: L.linalg.vecdot(a[0], a[1], dim=0) + L.linalg.diagonal(a, offset=1).sum(-1)[0],
                        [A, B]),
    "vander": (lambda L, a, b: L.linalg.vander(b[0, :, 0], N=3), [A, B]),
    # a symmetric input built from A, so that every direction of A's gradient is checked
    "cholesky": (lambda L, a, b: L.linalg.cholesky(a @ a.mT + L.eye(4, dtype=a.dtype)), [A, B]),
    "cholesky-upper": (lambda L, s, b: L.linalg.cholesky(s, upper=True) + s.cholesky(), [SPD, B]),
    "cholesky_solve": (lambda L, s, b: L.cholesky_solve(b, L.linalg.cholesky(s)), [SPD, B]),
    "cholesky_solve-upper": (lambda L, s, b: L.cholesky_solve(b, L.linalg.cholesky(s).mT, upper=True), [SPD, B]),
    "cholesky_inverse": (lambda L, s, b: L.cholesky_inverse(L.linalg.cholesky(s)), [SPD, B]),
    # eigen/singular vectors: sign-invariant functions of them (PyTorch keeps LAPACK's signs,
    # tracegrad fixes its own), through a symmetric input built from A
    "eigh": (lambda L, a, b: _spectral(L, L.linalg.eigh(a + a.mT)), [A, B]),
    "eigh-upper-batched-vectors": (lambda L, a, b: L.linalg.eigh(a @ a.mT, UPLO="U").eigenvectors.abs(), [A, B]),
    "eigvalsh": (lambda L, a, b: L.linalg.eigvalsh(a + a.mT), [A, B]),
    "svd-tall": (lambda L, a, b: _svd_case(L, b), [A, B]),
    "svd-wide": (lambda L, a, b: _svd_case(L, b.mT), [A, B]),
    "svd-square-full": (lambda L, a, b: _svd_case(L, a, full_matrices=True), [A, B]),
    "svdvals": (lambda L, a, b: L.linalg.svdvals(b) + L.linalg.svdvals(b.mT), [A, B]),
    "matrix_norm-2-nuc": (lambda L, a, b: L.linalg.matrix_norm(b, 2) + L.linalg.matrix_norm(b, -2)
                          + L.linalg.matrix_norm(b, "nuc"), [A, B]),
    "matrix_norm-2-dims": (lambda L, a, b: L.linalg.matrix_norm(b, 2, dim=(2, 0), keepdim=True)
                           + L.linalg.matrix_norm(b, "nuc", dim=(0, 1), keepdim=True), [A, B]),
    "norm-2": (lambda L, m, a: L.linalg.norm(m, 2) + L.linalg.norm(m, -2, dim=(1, 0)), [M, A]),
    "cond": (lambda L, a, b: L.linalg.cond(a) + L.linalg.cond(b, -2), [A, B]),
    "pinv": (lambda L, a, b: L.linalg.pinv(b), [A, B]),
    "pinv-wide": (lambda L, a, b: L.linalg.pinv(b.mT), [A, B]),
    "pinv-hermitian": (lambda L, a, b: L.linalg.pinv(a + a.mT, hermitian=True), [A, B]),
    # PyTorch's gradient (a primitive's rule): with singular values cut off, and at repeated ones
    "pinv-cut": (lambda L, a, b: L.linalg.pinv(b, rtol=0.3) + L.linalg.pinv(b, atol=1.0)
                 + L.pinverse(b, rcond=0.2) + b.pinverse(), [A, B]),
    "pinv-repeated": (lambda L, a, b: L.linalg.pinv(2 * L.eye(3, dtype=a.dtype) + a[0, :3, :3] * 0)
                      + L.linalg.pinv(a[0] - a[0] + L.eye(4, dtype=a.dtype), hermitian=True)[:3, :3], [A, B]),
    "svd-full-tall": (lambda L, a, b: _svd_full_case(L, b), [A, B]),
    "svd-full-wide": (lambda L, a, b: _svd_full_case(L, b.mT), [A, B]),
    "svd-legacy": (lambda L, a, b: _legacy_svd_case(L, b) + _legacy_svd_case(L, b, some=False)
                   + L.svd(b, compute_uv=False).S.unsqueeze(-2)
                   + L.svd(b, compute_uv=False).U.sum((-2, -1), keepdim=True)[..., :1], [A, B]),
    # Q and R are LAPACK's in both libraries: compared as they are
    "qr-tall": (lambda L, a, b: L.cat(list(L.linalg.qr(b)), -2), [A, B]),
    "qr-wide": (lambda L, a, b: L.cat(list(L.linalg.qr(b.mT)), -1), [A, B]),
    "qr-square-complete": (lambda L, a, b: L.cat(list(L.linalg.qr(a, mode="complete")), -1)
                           + L.cat([a.qr().Q] * 2, -1), [A, B]),
    "solve_triangular-lower": (lambda L, a, b: L.linalg.solve_triangular(a, b, upper=False), [A, B]),
    "solve_triangular-upper-right": (lambda L, a, b: L.linalg.solve_triangular(
        a[0], b[0].T, upper=True, left=False, unitriangular=True), [A, B]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torch(name):
    fn, arrays = CASES[name]
    ours_in = [tg.tensor(x, requires_grad=True) for x in arrays]
    theirs_in = [torch.tensor(x, requires_grad=True) for x in arrays]
    ours, theirs = fn(tg, *ours_in), fn(torch, *theirs_in)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-10, atol=1e-12)
    cot = RNG.standard_normal(tuple(theirs.shape))
    ours.backward(tg.tensor(cot))
    theirs.backward(torch.tensor(cot))
    for a, b in zip(ours_in, theirs_in):
        if b.grad is not None:
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-9, atol=1e-10)


# matrix_exp picks its number of squarings from the input's norm, read eagerly: a graph break
VALUE_DEPENDENT = {"matrix_exp", "matrix_exp-scaled"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_compiles_to_eager_values(name):
    fn, arrays = CASES[name]
    args = [tg.tensor(x) for x in arrays]
    if name in VALUE_DEPENDENT:
        with pytest.warns(RuntimeWarning, match="graph break"):
            compiled = tg.compile(lambda *xs: fn(tg, *xs), backend="c")
            compiled(*args)
    else:
        compiled = tg.compile(lambda *xs: fn(tg, *xs), backend="c", fullgraph=True)
    np.testing.assert_allclose(compiled(*args).numpy(), fn(tg, *args).numpy(), rtol=1e-10, atol=1e-10)


def test_singular_matrices():
    singular = tg.tensor([[1.0, 2.0], [2.0, 4.0]])
    assert tg.linalg.det(singular).item() == 0.0
    assert tg.compile(tg.linalg.det, backend="c")(singular).item() == 0.0
    for f in (tg.linalg.inv, tg.compile(tg.linalg.inv, backend="c")):
        with pytest.raises(RuntimeError, match="singular"):
            f(singular)
    with pytest.raises(RuntimeError, match="singular"):
        tg.compile(lambda a, b: tg.linalg.solve(a, b), backend="c")(singular, tg.ones(2, 1))
    with pytest.raises(RuntimeError, match="square matrices"):
        tg.linalg.inv(tg.ones(2, 3))
    with pytest.raises(RuntimeError, match="Incompatible shapes"):
        tg.linalg.solve(tg.eye(3), tg.ones(2, 1))
    indefinite = tg.tensor([[1.0, 2.0], [2.0, 1.0]])
    for f in (tg.linalg.cholesky, tg.compile(tg.linalg.cholesky, backend="c")):
        with pytest.raises(RuntimeError, match="not positive-definite"):
            f(indefinite)
    with pytest.raises(RuntimeError, match="B must be a matrix"):
        tg.linalg.solve_triangular(tg.eye(2), tg.ones(2), upper=True)


def test_a_least_squares_fit_trains_compiled():
    """Normal equations solved inside a compiled training step, differentiated through."""
    x = tg.tensor(RNG.standard_normal((20, 3)))
    y = tg.tensor(RNG.standard_normal((20, 1)))
    ridge = tg.nn.Parameter(tg.tensor(0.5, dtype=tg.float64))
    opt = tg.optim.SGD([ridge], lr=0.01)

    def step():
        opt.zero_grad()
        gram = x.T @ x + ridge * tg.eye(3, dtype=tg.float64)
        w = tg.linalg.solve(gram, x.T @ y)
        loss = ((x @ w - y) ** 2).mean() + tg.linalg.det(gram).log() * 1e-3
        loss.backward()
        opt.step()
        return loss

    start = ridge.detach().clone()
    eager = [step().item() for _ in range(3)]
    with tg.no_grad():
        ridge.copy_(start)
    compiled = tg.compile(step, backend="c", fullgraph=True)
    np.testing.assert_allclose([compiled().item() for _ in range(3)], eager, rtol=1e-10)


def test_eigh_signs_values_and_edges():
    """Vectors equal PyTorch's up to each column's sign, which is fixed (first largest component
    positive) the same way eagerly and compiled; 1 x 1, empty, repeated eigenvalues, float32,
    a large matrix compiled, NaN, and the errors."""
    sym = SPD[0] - 8 * np.eye(4)
    w, v = tg.linalg.eigh(tg.tensor(sym))
    tw, tv = torch.linalg.eigh(torch.tensor(sym))
    np.testing.assert_allclose(w.numpy(), tw.numpy(), rtol=1e-12)
    flips = np.sign(np.sum(v.numpy() * tv.numpy(), axis=0))
    np.testing.assert_allclose(v.numpy(), tv.numpy() * flips, atol=1e-12)
    lead = v.numpy()[np.argmax(np.abs(v.numpy()), axis=0), range(4)]
    assert (lead > 0).all()
    compiled = tg.compile(lambda a: tuple(tg.linalg.eigh(a)), backend="c")
    big = RNG.standard_normal((2, 30, 30))
    for x in (sym, big, np.array([[-3.0]]), np.eye(3), np.zeros((2, 0, 0)), big.astype(np.float32)):
        got, want = compiled(tg.tensor(x)), tg.linalg.eigh(tg.tensor(x))
        tol = 2e-5 if x.dtype == np.float32 else 1e-10
        for g, e in zip(got, want):
            assert g.dtype == e.dtype and g.shape == e.shape
            np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=tol, atol=tol)
    repeated = np.diag([1.0, 2.0, 2.0]) + 0.0
    w, v = compiled(tg.tensor(repeated))
    np.testing.assert_allclose((v.numpy() * w.numpy()) @ v.numpy().T, repeated, atol=1e-12)
    nan = compiled(tg.tensor([[1.0, float("nan")], [float("nan"), 2.0]]))
    assert np.isnan(nan[0].numpy()).all() and np.isnan(nan[1].numpy()).all()
    with pytest.raises(RuntimeError, match="square matrices, but they are 2 by 3"):
        tg.linalg.eigh(tg.ones(2, 3))
    with pytest.raises(RuntimeError, match="floating point.*int64"):
        tg.linalg.eigvalsh(tg.ones(2, 2, dtype=tg.int64))
    with pytest.raises(RuntimeError, match="UPLO argument to be 'L' or 'U'"):
        tg.linalg.eigh(tg.eye(2), UPLO="X")


def test_svd_based_values():
    """Values only: cond's other norms (PyTorch's own backward fails there: an in-place inverse),
    pinv of a rank-deficient matrix and with tensor tolerances (composed of svd / eigh),
    matrix_rank (integers)."""
    rank2 = B[0][:, :2] @ B[1][:2, :]  # 4 x 3 of rank 2
    for name, f in {
        "cond-fro-1-inf": lambda L, x: L.linalg.cond(x, "fro") + L.linalg.cond(x, 1) + L.linalg.cond(x, -float("inf")),
        "pinv-tensor-tolerances": lambda L, x: L.linalg.pinv(x[..., :3], rtol=L.tensor(0.3, dtype=x.dtype))
        + L.linalg.pinv(x + x.mT, atol=L.tensor([1.0, 3.0], dtype=x.dtype), hermitian=True)[..., :3, :],
        "pinv-rank-deficient": lambda L, x: L.linalg.pinv(L.tensor(rank2)),
        "matrix_rank": lambda L, x: L.linalg.matrix_rank(x) + L.linalg.matrix_rank(L.tensor(rank2))
        + L.linalg.matrix_rank(x, atol=2.9) + L.linalg.matrix_rank(x, rtol=0.5) + L.linalg.matrix_rank(x, 1.0)
        + L.linalg.matrix_rank(x + x.mT, hermitian=True) + L.linalg.matrix_rank(x, atol=L.tensor([1.0, 3.0], dtype=x.dtype))
        + L.linalg.matrix_rank(x, rtol=L.tensor([[0.1, 0.5]], dtype=x.dtype)),
    }.items():
        ours, theirs = f(tg, tg.tensor(A)), f(torch, torch.tensor(A))
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1], name
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10, atol=1e-12, err_msg=name)
        compiled = tg.compile(lambda x: f(tg, x), backend="c", fullgraph=True)
        np.testing.assert_allclose(compiled(tg.tensor(A)).numpy(), ours.numpy(), rtol=1e-10, atol=1e-12, err_msg=name)


def test_svd_signs_values_and_edges():
    """U and Vh equal PyTorch's up to the sign of each pair of singular vectors, fixed (U's
    first largest component positive) the same way eagerly and compiled (one-sided Jacobi);
    tall, wide, batched, 1 x 1, empty, float32, a large matrix, NaN, and the errors."""
    for x in (B, B.mT):
        u, s, vh = tg.linalg.svd(tg.tensor(x), full_matrices=False)
        tu, ts, tvh = torch.linalg.svd(torch.tensor(x), full_matrices=False)
        np.testing.assert_allclose(s.numpy(), ts.numpy(), rtol=1e-12)
        flips = np.sign(np.sum(u.numpy() * tu.numpy(), axis=-2, keepdims=True))
        np.testing.assert_allclose(u.numpy(), tu.numpy() * flips, atol=1e-12)
        np.testing.assert_allclose(vh.numpy(), tvh.numpy() * np.swapaxes(flips, -1, -2), atol=1e-12)
    compiled = tg.compile(lambda a: tuple(tg.linalg.svd(a, full_matrices=False)), backend="c")
    big = RNG.standard_normal((2, 30, 20))
    for x in (B, B.mT, big, np.swapaxes(big, -1, -2), np.array([[-3.0]]), np.zeros((2, 0, 3)),
              B.astype(np.float32), np.eye(3)):
        got, want = compiled(tg.tensor(x)), tg.linalg.svd(tg.tensor(x), full_matrices=False)
        tol = 2e-5 if x.dtype == np.float32 else 1e-10
        for g, e in zip(got, want):
            assert g.dtype == e.dtype and g.shape == e.shape
            np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=tol, atol=tol)
    for f in (compiled, tg.linalg.svd):
        with pytest.raises(RuntimeError, match="contained non-finite values"):
            f(tg.tensor([[1.0, float("nan")], [0.0, 2.0]]))
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        tg.linalg.svd(tg.ones(3))
    with pytest.raises(RuntimeError, match="floating point.*int64"):
        tg.linalg.svdvals(tg.ones(2, 2, dtype=tg.int64))
    with pytest.raises(RuntimeError, match="Order 3 not supported"):
        tg.linalg.matrix_norm(tg.ones(2, 2), 3)


def test_svd_full_matrices_complete_the_bases():
    """full_matrices=True: U (m x m) and Vh (n x n) orthogonal, their first k columns / rows the
    reduced ones, the completing ones (from a complete QR, no gradient) equal compiled."""
    compiled = tg.compile(lambda a: tuple(tg.linalg.svd(a)), backend="c")
    for x in (B, B.mT, RNG.standard_normal((7, 2))):
        u, s, vh = tg.linalg.svd(tg.tensor(x))
        ru, _, rvh = tg.linalg.svd(tg.tensor(x), full_matrices=False)
        m, n = x.shape[-2:]
        k = min(m, n)
        assert tuple(u.shape[-2:]) == (m, m) and tuple(vh.shape[-2:]) == (n, n)
        np.testing.assert_allclose(u.numpy().swapaxes(-1, -2) @ u.numpy(), np.broadcast_to(np.eye(m), u.shape), atol=1e-12)
        np.testing.assert_allclose(vh.numpy() @ vh.numpy().swapaxes(-1, -2), np.broadcast_to(np.eye(n), vh.shape), atol=1e-12)
        np.testing.assert_array_equal(u.numpy()[..., :k], ru.numpy())
        np.testing.assert_array_equal(vh.numpy()[..., :k, :], rvh.numpy())
        for g, e in zip(compiled(tg.tensor(x)), (u, s, vh)):
            np.testing.assert_allclose(g.numpy(), e.numpy(), atol=1e-10)


def test_qr_modes_edges_and_errors():
    """Values equal PyTorch's as they are (LAPACK's signs: no fix), eagerly and compiled
    (Householder in C): tall, wide, complete, mode 'r', a zero column, 1 x 1, empty, float32;
    complete with m > n is not differentiable (as in PyTorch)."""
    zero_col = np.array([[1.0, 0.0, 2.0], [2.0, 0.0, 1.0], [0.0, 0.0, 3.0]])
    for mode in ("reduced", "complete", "r"):
        compiled = tg.compile(lambda a: tuple(tg.linalg.qr(a, mode=mode)), backend="c")
        for x in (B, B.mT, RNG.standard_normal((30, 20)), zero_col, np.array([[-2.0]]), np.zeros((2, 0, 3)),
                  np.zeros((3, 0)), B.astype(np.float32)):
            ours = tg.linalg.qr(tg.tensor(x), mode=mode)
            theirs = torch.linalg.qr(torch.tensor(x), mode=mode)
            tol = 2e-5 if x.dtype == np.float32 else 1e-10
            for o, t, c in zip(ours, theirs, compiled(tg.tensor(x))):
                assert tuple(o.shape) == tuple(t.shape) and o.dtype == c.dtype, (mode, x.shape)
                np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=tol, atol=tol)
                np.testing.assert_allclose(c.numpy(), o.numpy(), rtol=tol, atol=tol)
    q, r = tg.linalg.qr(tg.tensor(B, requires_grad=True), mode="complete")
    with pytest.raises(RuntimeError, match="not differentiable when mode='complete' and nrows > ncols"):
        q.sum().backward()
    with pytest.raises(RuntimeError, match="unrecognized mode 'full'"):
        tg.linalg.qr(tg.eye(2), mode="full")
    with pytest.raises(RuntimeError, match="floating point.*int64"):
        tg.linalg.qr(tg.ones(2, 2, dtype=tg.int64))


def test_orthogonal_init():
    """PyTorch's algorithm (QR of a normal matrix, Q's columns times sign(diag R)): rows or
    columns orthonormal times gain, for tall, wide and convolution shapes; seeded; empty kept;
    fewer than 2 dims raise."""
    for shape in ((5, 3), (3, 5), (4, 2, 3, 3), (1, 1)):
        tg.manual_seed(0)
        w = tg.nn.init.orthogonal_(tg.empty(*shape), gain=2.0)
        flat = w.numpy().reshape(shape[0], -1).astype(np.float64)
        gram = flat @ flat.T if flat.shape[0] <= flat.shape[1] else flat.T @ flat
        np.testing.assert_allclose(gram, 4 * np.eye(min(flat.shape)), atol=1e-5)
        tg.manual_seed(0)
        assert np.array_equal(tg.nn.init.orthogonal_(tg.empty(*shape), gain=2.0).numpy(), w.numpy())
    assert tg.nn.init.orthogonal_(tg.empty(0, 3)).shape == (0, 3)
    with pytest.raises(ValueError, match="2 or more dimensions"):
        tg.nn.init.orthogonal_(tg.empty(3))


def test_compiled_svd_of_rank_deficient_matrices_keeps_orthonormal_factors():
    """A zero singular value leaves a zero column in the Jacobi iterate; the kernel completes it
    with a unit vector orthogonal to the others (LAPACK's choice may differ), so U and Vh stay
    orthonormal and U S Vh is the matrix (a polar factor U Vh stays orthogonal)."""
    compiled = tg.compile(lambda a: tuple(tg.linalg.svd(a, full_matrices=False)), backend="c")
    for x in (np.zeros((3, 3)), np.outer([1.0, 2.0, 3.0], [1.0, 0.0, 1.0]), np.diag([1.0, 0.0, 2.0]),
              np.zeros((2, 4)), np.outer([1.0, 2.0, 0.0, 1.0], [3.0, 1.0])):
        u, s, vh = (t.numpy() for t in compiled(tg.tensor(x)))
        k = s.shape[-1]
        np.testing.assert_allclose(u.T @ u, np.eye(k), atol=1e-12)
        np.testing.assert_allclose(vh @ vh.T, np.eye(k), atol=1e-12)
        np.testing.assert_allclose((u * s) @ vh, x, atol=1e-12)
        np.testing.assert_allclose(s, tg.linalg.svdvals(tg.tensor(x)).numpy(), atol=1e-12)


@pytest.mark.parametrize("backend", [None, "c", "interpreter"])
def test_cholesky_ex_reports_info_instead_of_raising(backend):
    """info is LAPACK's (the order of the first leading minor that is not positive-definite),
    as PyTorch's; L of the positive-definite matrices is PyTorch's, of the others NaN from that
    pivot on; check_errors raises, naming the batch element."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    m = rng.standard_normal((3, 4, 4))
    a = m @ np.swapaxes(m, -1, -2) + np.eye(4)
    a[1, 2, 2] = -5.0
    a[2] = -np.eye(4)
    run = tg.linalg.cholesky_ex if backend is None else tg.compile(
        lambda x: tuple(tg.linalg.cholesky_ex(x)), backend=backend, fullgraph=True)
    lower, info = run(tg.tensor(a))
    want = torch.linalg.cholesky_ex(torch.tensor(a))
    assert info.dtype == tg.int32
    np.testing.assert_array_equal(info.numpy(), want.info.numpy())
    np.testing.assert_allclose(lower.numpy()[0], want.L.numpy()[0], rtol=1e-12)
    failed = lower.numpy()[1]
    assert np.isnan(failed[2, 2]) and np.isnan(failed[3, 2:]).all() and not np.isnan(failed[:2]).any()
    upper = tg.linalg.cholesky_ex(tg.tensor(a[0]), upper=True)
    np.testing.assert_allclose(upper.L.numpy(), torch.linalg.cholesky_ex(torch.tensor(a[0]), upper=True).L.numpy())
    with pytest.raises(RuntimeError, match=r"leading minor of order 3 is not positive-definite\) \(batch element 1\)"):
        tg.linalg.cholesky_ex(tg.tensor(a), check_errors=True)


@pytest.mark.parametrize("backend", [None, "c"])
def test_inv_ex_and_solve_ex(backend):
    """info as PyTorch's (LU's first zero pivot); results of the invertible matrices PyTorch's,
    of the singular ones NaN; check_errors raises LinAlgError (a RuntimeError, as PyTorch's)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 3, 3))
    a[1] = [[1, 2, 3], [2, 4, 6], [1, 0, 1]]
    b, vec = rng.standard_normal((2, 3, 2)), rng.standard_normal((2, 3))

    def ours(x, y, v):
        return (*tg.linalg.inv_ex(x), *tg.linalg.solve_ex(x, y), tg.linalg.solve_ex(x, v).result,
                tg.linalg.solve_ex(x, y.mT.contiguous(), left=False).result)

    run = tg.compile(ours, backend=backend, fullgraph=True) if backend else ours
    got = run(tg.tensor(a), tg.tensor(b), tg.tensor(vec))
    t = [torch.tensor(v) for v in (a, b, vec)]
    want = (*torch.linalg.inv_ex(t[0]), *torch.linalg.solve_ex(t[0], t[1]), torch.linalg.solve_ex(t[0], t[2]).result,
            torch.linalg.solve_ex(t[0], t[1].mT, left=False).result)
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.shape == tuple(w.shape), k
        if w.dtype == torch.int32:
            np.testing.assert_array_equal(g.numpy(), w.numpy())
            continue
        np.testing.assert_allclose(g.numpy()[0], w.numpy()[0], rtol=1e-10)
        assert np.isnan(g.numpy()[1]).all()
    with pytest.raises(tg.linalg.LinAlgError, match=r"singular \(batch element 1\)"):
        tg.linalg.inv_ex(tg.tensor(a), check_errors=True)
    assert issubclass(tg.linalg.LinAlgError, RuntimeError)
    with pytest.raises(tg.linalg.LinAlgError):
        tg.linalg.cholesky(tg.tensor(-np.eye(2)))


def test_tensorinv_tensorsolve_householder_product_and_matmul():
    rng = np.random.default_rng(1)
    t4 = rng.standard_normal((4, 6, 8, 3))
    np.testing.assert_allclose(tg.linalg.tensorinv(tg.tensor(t4), ind=2).numpy(),
                               torch.linalg.tensorinv(torch.tensor(t4), ind=2).numpy(), rtol=1e-9)
    a, b = rng.standard_normal((6, 2, 3)), rng.standard_normal((2, 3))
    for dims in (None, (0,)):
        arr = a if dims else a.transpose(1, 2, 0)
        np.testing.assert_allclose(tg.linalg.tensorsolve(tg.tensor(arr), tg.tensor(b), dims=dims).numpy(),
                                   torch.linalg.tensorsolve(torch.tensor(arr), torch.tensor(b), dims=dims).numpy(),
                                   rtol=1e-9)
    h, tau = rng.standard_normal((2, 5, 3)), rng.standard_normal((2, 2))
    x, y = tg.tensor(h, requires_grad=True), tg.tensor(tau, requires_grad=True)
    xt, yt = torch.tensor(h, requires_grad=True), torch.tensor(tau, requires_grad=True)
    q, qt = tg.linalg.householder_product(x, y), torch.linalg.householder_product(xt, yt)
    np.testing.assert_allclose(q.detach().numpy(), qt.detach().numpy(), rtol=1e-10)
    q.pow(2).sum().backward()
    qt.pow(2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-9)
    np.testing.assert_allclose(y.grad.numpy(), yt.grad.numpy(), rtol=1e-9)
    np.testing.assert_array_equal(tg.linalg.matmul(tg.ones(2, 3), tg.ones(3)).numpy(), [3.0, 3.0])
