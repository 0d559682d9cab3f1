"""``tg.linalg`` (PyTorch's ``torch.linalg``): ``inv``, ``det``, ``slogdet``, ``solve``,
``cholesky``, ``eigh``, ``eigvalsh``, ``solve_triangular``, ``vector_norm``, ``matrix_norm``,
``norm``, ``matrix_power``, ``cross``; and ``cholesky_solve``, ``cholesky_inverse`` (``tg.``
level, as in PyTorch). ``inv``, ``det``, ``solve``, ``cholesky`` and ``eigh`` are primitives
(NumPy's LAPACK eagerly, batched; C kernels when compiled) with their own derivative rules;
the rest are compositions.

>>> import tracegrad as tg
>>> A = tg.tensor([[2.0, 1.0], [1.0, 3.0]])
>>> tg.linalg.solve(A, tg.tensor([3.0, 5.0]))
tensor([0.8000, 1.4000])
>>> tg.linalg.det(A)
tensor(5.)
"""
from __future__ import annotations

from collections import namedtuple

from . import functional as F
from .composites import cross, norm as _vector_norm
from .layout import select as _select
from .ops import linalg as L

__all__ = ["inv", "det", "slogdet", "solve", "cholesky", "solve_triangular", "vector_norm",
           "matrix_norm", "norm", "matrix_power", "cross", "eigh", "eigvalsh"]

slogdet_result = namedtuple("slogdet", ["sign", "logabsdet"])
eigh_result = namedtuple("linalg_eigh", ["eigenvalues", "eigenvectors"])
_INF = float("inf")


def inv(A):
    """The inverse of each square matrix of ``A`` (RuntimeError for a singular one)."""
    return L.INV(A)


def det(A):
    """The determinant of each square matrix of ``A``. Its gradient needs the inverse: at a
    singular matrix it raises (PyTorch's goes through an SVD there)."""
    return L.DET(A)


def slogdet(A):
    """``(sign, log|det|)`` of each square matrix."""
    d = L.DET(A)
    return slogdet_result(F.sign(d), F.log(F.abs(d)))


def solve(A, B, *, left=True):
    """``X`` with ``A X = B`` (``B`` a matrix, batches broadcast, or a vector); ``left=False``:
    ``X A = B``."""
    if not left:
        return F.transpose(solve(F.transpose(A, -2, -1), F.transpose(B, -2, -1)), -2, -1)
    if B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1])):
        return F.squeeze(L.SOLVE(A, F.unsqueeze(B, -1)), -1)
    return L.SOLVE(A, B)


def cholesky(A, *, upper=False):
    """The Cholesky factor of each symmetric positive-definite matrix: lower triangular ``L``
    with ``A = L L^T`` (``upper=True``: ``U = L^T``, ``A = U^T U``). RuntimeError when a matrix is
    not positive-definite. ``A`` is read as ``(A + A^T) / 2`` (PyTorch reads its lower
    triangle: the same on symmetric input), so the gradient, PyTorch's symmetric one, is the
    derivative in every direction.

    >>> import tracegrad as tg
    >>> tg.linalg.cholesky(tg.tensor([[4.0, 2.0], [2.0, 5.0]]))
    tensor([[2., 0.],
            [1., 2.]])
    """
    lower = L.CHOLESKY(A)
    return F.transpose(lower, -2, -1) if upper else lower


def _check_uplo(name, UPLO):
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"linalg.{name}: Expected UPLO argument to be 'L' or 'U', but got {UPLO!r}")


def eigh(A, UPLO="L"):
    """Eigenvalues (ascending) and orthonormal eigenvectors (the columns) of each symmetric
    matrix: ``A = V diag(L) V^T``. ``A`` is read as ``(A + A^T) / 2``; PyTorch reads the
    triangle ``UPLO`` names, the same on symmetric input (``UPLO`` is checked, then has no
    effect), and the gradient, PyTorch's symmetric one, is then the derivative in every
    direction. Each eigenvector's sign is fixed: its first component of largest magnitude is
    positive (PyTorch keeps LAPACK's signs, which may differ; ``V diag(f(L)) V^T``, ``|V|`` and
    projections agree). Gradients through the eigenvectors divide by differences of eigenvalues:
    they are undefined for repeated ones (as in PyTorch).

    >>> import tracegrad as tg
    >>> L, V = tg.linalg.eigh(tg.tensor([[2.0, 1.0], [1.0, 2.0]]))
    >>> L
    tensor([1., 3.])
    >>> V
    tensor([[ 0.7071,  0.7071],
            [-0.7071,  0.7071]])
    """
    _check_uplo("eigh", UPLO)
    packed = L.EIGH(A)
    n = packed.shape[-1]
    return eigh_result(_select(packed, -2, 0), F.narrow(packed, -2, 1, n))


def eigvalsh(A, UPLO="L"):
    """The eigenvalues (ascending) of each symmetric matrix (``eigh``'s reading of ``A``).

    >>> import tracegrad as tg
    >>> tg.linalg.eigvalsh(tg.tensor([[2.0, 1.0], [1.0, 2.0]]))
    tensor([1., 3.])
    """
    _check_uplo("eigvalsh", UPLO)
    return _select(L.EIGH(A), -2, 0)


def solve_triangular(A, B, *, upper, left=True, unitriangular=False):
    """``X`` with ``A X = B`` (``left=False``: ``X A = B``) reading only ``A``'s upper or lower
    triangle (and a unit diagonal with ``unitriangular``), as PyTorch's: the gradient for ``A``
    is triangular too.

    >>> import tracegrad as tg
    >>> tg.linalg.solve_triangular(tg.tensor([[2.0, 0.0], [1.0, 1.0]]), tg.tensor([[2.0], [3.0]]), upper=False)
    tensor([[1.],
            [2.]])
    """
    from .composites import tril, triu
    from .creation import eye

    if B.ndim < 2:
        raise RuntimeError(f"linalg.solve_triangular: B must be a matrix or batches of matrices, "
                           f"got shape {list(B.shape)}")
    tri = triu(A, 1 if unitriangular else 0) if upper else tril(A, -1 if unitriangular else 0)
    if unitriangular:
        tri = tri + eye(A.shape[-1], dtype=A.dtype)
    return solve(tri, B, left=left)


def cholesky_solve(B, L_factor, upper=False):
    """``X`` with ``A X = B`` for ``A = L L^T`` given its Cholesky factor (``upper``: ``A = U^T
    U``): two triangular solves (``tg.cholesky_solve``, PyTorch's argument order).

    >>> import tracegrad as tg
    >>> tg.cholesky_solve(tg.tensor([[4.0], [5.0]]), tg.tensor([[2.0, 0.0], [1.0, 2.0]]))
    tensor([[0.6250],
            [0.7500]])
    """
    lower = F.transpose(L_factor, -2, -1) if upper else L_factor
    y = solve_triangular(lower, B, upper=False)
    return solve_triangular(F.transpose(lower, -2, -1), y, upper=True)


def cholesky_inverse(L_factor, upper=False):
    """The inverse of ``A = L L^T`` (``upper``: ``U^T U``) from its Cholesky factor."""
    from .creation import eye

    n = L_factor.shape[-1]
    return cholesky_solve(F.expand(eye(n, dtype=L_factor.dtype), tuple(L_factor.shape)), L_factor, upper)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """The ``ord``-norm of ``x`` as a vector (over ``dim``, all elements by default)."""
    x = F.cast(x, dtype) if dtype is not None else x
    return _vector_norm(x, ord, dim, keepdim)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """Frobenius (``"fro"``) or the induced 1 / inf norms (max absolute column / row sum; -1 /
    -inf: the minimum) of the matrices over ``dim``."""
    A = F.cast(A, dtype) if dtype is not None else A
    if ord == "fro":
        return _vector_norm(A, 2, list(dim), keepdim)
    if ord not in (1, -1, _INF, -_INF):
        raise NotImplementedError(f"linalg.matrix_norm: ord={ord!r} is not supported (the spectral and "
                                  "nuclear norms need an SVD); 'fro', 1, -1, inf and -inf are")
    rows, cols = (d % A.ndim for d in dim)
    along, across = (rows, cols) if ord in (1, -1) else (cols, rows)  # sum along, extremum across
    sums = F.sum(F.abs(A), along, keepdim=True)
    pick = F.amax if ord in (1, _INF) else F.amin
    out = pick(sums, across, keepdim=True)
    return out if keepdim else F.squeeze(out, sorted((rows, cols), reverse=True))


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
    """``vector_norm`` for a vector (or ``dim`` of one), ``matrix_norm`` for matrices (2-D
    input or a ``dim`` pair); ``ord=None``: 2 / Frobenius."""
    pair = dim is not None and not isinstance(dim, int) and len(dim) == 2
    if pair or (dim is None and ord is not None and A.ndim == 2):
        return matrix_norm(A, "fro" if ord is None else ord, dim if pair else (-2, -1), keepdim, dtype=dtype)
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


def matrix_power(A, n):
    """``A`` multiplied by itself ``n`` times (the identity for 0; the inverse's power for
    negative ``n``), by repeated squaring."""
    if n < 0:
        return matrix_power(inv(A), -n)
    n_rows = A.shape[-1]
    from .creation import eye

    result, base = None, A
    while n:
        if n & 1:
            result = base if result is None else F.matmul(result, base)
        n >>= 1
        if n:
            base = F.matmul(base, base)
    return result if result is not None else F.expand(eye(n_rows, dtype=A.dtype), tuple(A.shape))
