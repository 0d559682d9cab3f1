"""``tg.linalg`` (PyTorch's ``torch.linalg``): ``inv``, ``det``, ``slogdet``, ``solve``,
``vector_norm``, ``matrix_norm``, ``norm``, ``matrix_power``, ``cross``. ``inv``, ``det`` and
``solve`` are primitives (NumPy's LAPACK, batched) with their own derivative rules; the rest
are compositions. A compiled function that uses a primitive here runs that graph on the
interpreter (no C lowering yet), with a warning saying so.

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
from .ops import linalg as L

__all__ = ["inv", "det", "slogdet", "solve", "vector_norm", "matrix_norm", "norm", "matrix_power",
           "cross"]

slogdet_result = namedtuple("slogdet", ["sign", "logabsdet"])
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
