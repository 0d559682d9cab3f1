"""``tg.linalg.lstsq`` (PyTorch's): least-squares solutions, composed of ``pinv`` (a primitive
with PyTorch's gradient) and ``matmul``.

PyTorch's CPU drivers (LAPACK's gelsy, the default, gelsd, gelss and gels) return the
minimum-norm least-squares solution ``pinv(A) B`` of a matrix of full rank, or of the rank that
``rcond`` leaves (singular values at most ``rcond`` times the largest counting as zero); its
gradient is that of ``pinv(A) B`` (linalg_lstsq_backward). Here the solution is computed so,
from the SVD, for every driver; the driver picks which of the other results are filled, as
PyTorch's does.

>>> import tracegrad as tg
>>> A = tg.tensor([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]])
>>> tg.linalg.lstsq(A, tg.tensor([[1.0], [2.0], [4.0]])).solution
tensor([[0.8333],
        [1.5000]])
"""
from __future__ import annotations

from collections import namedtuple


from .. import amp as _amp
from ..core import dtypes as _dt
from .._api import functional as F

__all__ = ["lstsq"]

lstsq_result = namedtuple("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])
DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def _check(A, B, driver):
    if driver not in DRIVERS:
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    if A.ndim < 2:
        raise RuntimeError("torch.linalg.lstsq: input must have at least 2 dimensions.")
    if not (A.ndim >= B.ndim and A.ndim - B.ndim <= 1):
        raise RuntimeError("torch.linalg.lstsq: input.dim() must be greater or equal to other.dim() and "
                           "(input.dim() - other.dim()) <= 1")
    if not (A.dtype.is_floating_point and B.dtype.is_floating_point):
        raise RuntimeError("This function doesn't handle types other than float and double")
    if A.dtype is not B.dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same dtype, but got "
                           f"input's dtype {A.dtype.torch_name} and other's dtype "
                           f"{B.dtype.torch_name}")
    vector = A.ndim - B.ndim == 1
    if B.shape[-1 if vector else -2] != A.shape[-2]:
        other = "other.size(-1)" if vector else "other.size(-2)"
        raise RuntimeError(f"torch.linalg.lstsq: input.size(-2) should match {other}")
    return vector


@_amp.float32
def lstsq(A, B, rcond=None, *, driver=None):
    """The least-squares solution ``X`` minimizing ``||A X - B||`` for each matrix ``A`` (m x n)
    and right-hand side ``B`` (m x k, or a vector of m: ``A``'s batch without its last dim),
    batches broadcast; of several, the one of least norm. Returns ``(solution, residuals,
    rank, singular_values)`` as PyTorch's CPU drivers do: ``residuals`` (the squared residual of
    each column) when m > n with ``gels``, or with ``gelsd`` / ``gelss`` when every matrix has
    full rank, else empty; ``rank`` (int64) except with ``gels``; ``singular_values`` with
    ``gelsd`` / ``gelss``. ``rcond``: singular values at most ``rcond`` times the largest count
    as zero (default: the dtype's eps times max(m, n); negative: eps).

    Values and gradients are those of ``pinv(A) B`` (PyTorch's gradient, which uses pinv's default
    cut-off whatever ``rcond`` is, so that with a larger ``rcond`` it is not the derivative of
    the truncated solution, here as there). PyTorch's gelsy finds
    the rank by a pivoted QR, not the SVD: where ``rcond`` cuts singular values that are not
    (nearly) zero, its ``rank`` may differ from this SVD count, and its solution (a truncated QR
    solve) from the truncated SVD's here. ``gels`` on a rank-deficient matrix returns numbers
    without meaning in PyTorch, the minimum-norm solution here. The full-rank check of
    ``gelsd`` / ``gelss`` for the residuals reads the rank: a graph break when compiled.

    >>> import tracegrad as tg
    >>> A = tg.tensor([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]])
    >>> result = tg.linalg.lstsq(A, tg.tensor([1.0, 2.0, 4.0]), driver="gelsd")
    >>> result.residuals, result.rank
    (tensor([0.1667]), tensor(2))
    """
    from . import matrix_rank, pinv, svdvals

    driver = "gelsy" if driver is None else driver
    vector = _check(A, B, driver)
    m, n = A.shape[-2:]
    eps = float(_dt.finfo(A.dtype).eps)
    rtol = eps * max(m, n) if rcond is None else (eps if rcond < 0 else float(rcond))
    b = F.unsqueeze(B, -1) if vector else B
    x = F.matmul(pinv(A), b)
    if rtol != eps * max(m, n):
        # PyTorch differentiates pinv(A) B with pinv's default cut-off whatever rcond is: the
        # value cut at rcond, the gradient (as PyTorch's) that of the default
        x = x + F.matmul(pinv(A.detach(), rtol=rtol) - pinv(A.detach()), b.detach())
    empty = A.new_zeros((0,))
    batch = tuple(A.shape[:-2])
    if driver == "gels":
        rank = empty.to(_dt.int64)
    elif min(m, n) == 0:
        rank = A.new_zeros(batch).to(_dt.int64)
    else:
        rank = matrix_rank(A.detach(), rtol=rtol)
    singular_values = svdvals(A.detach()) if driver in ("gelsd", "gelss") else empty
    residuals = empty
    if m > n and driver != "gelsy" and (driver == "gels" or bool(F.eq(rank, n).all())):
        residuals = F.sum(F.square(F.matmul(A, x) - b), -2)
    return lstsq_result(F.squeeze(x, -1) if vector else x, residuals, rank, singular_values)
