"""The LU family of ``tg.linalg`` (PyTorch's): ``lu_factor``, ``lu_factor_ex``, ``lu``,
``lu_solve``, and ``tg.lu_unpack``, all built on the primitives of ``ops/lu.py`` (one
factorization, differentiable, and LAPACK's pivots to a permutation). Pivots are int32 and
1-based, as PyTorch's (LAPACK's getrf): row i was swapped with row ``pivots[i] - 1`` at step i,
and ``A = P L U``.

>>> import tracegrad as tg
>>> A = tg.tensor([[1.0, 2.0], [3.0, 4.0]])
>>> LU, pivots = tg.linalg.lu_factor(A)
>>> pivots
tensor([2, 2], dtype=tracegrad.int32)
>>> tg.linalg.lu_solve(LU, pivots, tg.tensor([[5.0], [6.0]]))
tensor([[-4.0000],
        [ 4.5000]])
"""
from __future__ import annotations

from collections import namedtuple

from ..core.placement import on_inputs_device as _on_inputs_device
from .. import amp as _amp
from ..core import dtypes as _dt
from .._api import functional as F
from ..ops import lu as _lu
from ..ops.linalg import LinAlgError

__all__ = ["lu_factor", "lu_factor_ex", "lu", "lu_solve"]

lu_factor_result = namedtuple("linalg_lu_factor", ["LU", "pivots"])
lu_factor_ex_result = namedtuple("linalg_lu_factor_ex", ["LU", "pivots", "info"])
lu_result = namedtuple("linalg_lu", ["P", "L", "U"])
lu_unpack_result = namedtuple("lu_unpack", ["P", "L", "U"])


def _check_pivot(name, pivot):
    if not pivot:
        raise RuntimeError(f"linalg.{name}: LU without pivoting is not implemented on the CPU")


def _factor(A, check):
    """(LU, pivots) of the packed factorization."""
    m, n = tuple(A.shape[-2:]) if A.ndim >= 2 else (0, 0)
    packed = _lu.LU_FACTOR(A, check=check)
    pivots = F.narrow(F.narrow(packed, -2, m, 1), -1, 0, min(m, n))
    return F.narrow(packed, -2, 0, m), F.cast(F.squeeze(pivots, -2), _dt.int32)


def raise_for_info(info, ndim, message):
    """``check_errors``: LinAlgError for the first matrix whose LAPACK ``info`` is not 0, its
    text ``message(k, where)``: ``k`` that info, ``where`` naming the batch element when
    ``ndim`` (the input's) has a batch."""
    if not bool(info.any()):
        return
    flat = info.reshape(-1)
    batch = int(F.argmax(F.cast(F.ne(flat, 0), _dt.int32)).item())
    raise LinAlgError(message(int(flat[batch].item()), f" (batch element {batch})" if ndim > 2 else ""))


def first_true(mask):
    """LAPACK's ``info`` from a mask along the last dim: int32, 0 where no entry is True, else
    the 1-based index of the first True."""
    if mask.shape[-1] == 0:
        return F.cast(F.sum(mask, -1), _dt.int32)
    first = F.cast(F.argmax(F.cast(mask, _dt.int32), -1), _dt.int32) + 1
    return F.cast(F.where(mask.any(-1), first, 0), _dt.int32)


def lu_factor(A, *, pivot=True):
    """The LU factorization of each matrix (m x n) with partial pivoting, compactly: ``LU``
    (m x n) holds ``L``'s strict lower part (its unit diagonal implied) and ``U``; ``pivots``
    (k = min(m, n), int32, 1-based). RuntimeError when a pivot is exactly zero (``lu_solve``
    would divide by it): ``lu_factor_ex`` and ``lu`` accept such matrices. Differentiable
    (PyTorch's rule, at constant pivots). ``pivot=False`` is CUDA-only in PyTorch: it raises.

    >>> import tracegrad as tg
    >>> tg.linalg.lu_factor(tg.tensor([[1.0, 2.0], [3.0, 4.0]])).LU
    tensor([[3.0000, 4.0000],
            [0.3333, 0.6667]])
    """
    _check_pivot("lu_factor", pivot)
    return lu_factor_result(*_factor(A, check=True))


@_on_inputs_device
def lu_factor_ex(A, *, pivot=True, check_errors=False):
    """``lu_factor`` that also returns ``info`` (int32, per matrix): 0, or the 1-based index of
    the first pivot that is exactly zero (the matrix is singular; the factorization is still
    complete, as LAPACK's). ``check_errors=True`` raises for such a matrix, as ``lu_factor``.

    >>> import tracegrad as tg
    >>> tg.linalg.lu_factor_ex(tg.tensor([[1.0, 2.0], [2.0, 4.0]])).info
    tensor(2, dtype=tracegrad.int32)
    """
    _check_pivot("lu_factor_ex", pivot)
    LU, pivots = _factor(A, check=check_errors)
    diagonal = F.narrow(LU.detach().diagonal(0, -2, -1), -1, 0, pivots.shape[-1])
    return lu_factor_ex_result(LU, pivots, first_true(F.eq(diagonal, 0)))


@_on_inputs_device
def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    """``(P, L, U)`` from ``lu_factor``'s compact result: ``P`` (m x m) the permutation,
    ``L`` (m x k) unit lower triangular, ``U`` (k x n) upper triangular, ``A = P L U``. The parts
    not asked for are empty tensors (as PyTorch's). ``L`` and ``U`` are differentiable in
    ``LU_data``.

    >>> import tracegrad as tg
    >>> P, L, U = tg.lu_unpack(*tg.linalg.lu_factor(tg.tensor([[1.0, 2.0], [3.0, 4.0]])))
    >>> P
    tensor([[0., 1.],
            [1., 0.]])
    >>> P @ L @ U
    tensor([[1., 2.],
            [3., 4.]])
    """
    if LU_data.ndim < 2:
        raise RuntimeError(f"torch.lu_unpack: Expected tensor with 2 or more dimensions. Got size: "
                           f"{list(LU_data.shape)} instead")
    m, n = LU_data.shape[-2:]
    k = min(m, n)
    if tuple(LU_pivots.shape) != tuple(LU_data.shape[:-2]) + (k,):
        raise RuntimeError(f"torch.lu_unpack: LU_pivots of shape {list(LU_pivots.shape)} do not fit "
                           f"LU_data of shape {list(LU_data.shape)} (expected {list(LU_data.shape[:-2]) + [k]})")
    empty = lambda: LU_data.new_zeros((0,))
    p = empty()
    if unpack_pivots:
        p = _lu.permutation_matrix(_lu.LU_PERMUTATION(LU_pivots, m=m), m, LU_data.dtype)
    if not unpack_data:
        return lu_unpack_result(p, empty(), empty())
    return lu_unpack_result(p, *_lu.unit_lower_and_upper(LU_data, k))


@_on_inputs_device
def lu(A, *, pivot=True):
    """``A = P L U`` for each matrix (m x n, k = min(m, n)): ``P`` (m x m) a permutation, ``L``
    (m x k) unit lower triangular, ``U`` (k x n) upper triangular; singular matrices factor too.
    Differentiable in ``A`` (PyTorch's rule, at constant pivots). ``pivot=False`` raises (CUDA-only
    in PyTorch).

    >>> import tracegrad as tg
    >>> P, L, U = tg.linalg.lu(tg.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]))
    >>> U
    tensor([[5.0000, 6.0000],
            [0.0000, 0.8000]])
    """
    _check_pivot("lu", pivot)
    LU, pivots = _factor(A, check=False)
    return lu_result(*lu_unpack(LU, pivots))


def _check_solve(LU, pivots, B, left):
    if LU.ndim < 2 or LU.shape[-1] != LU.shape[-2]:
        size = " by ".join(map(str, LU.shape[-2:])) if LU.ndim >= 2 else "a vector"
        raise RuntimeError(f"torch.linalg.lu_solve: A must be batches of square matrices, but they "
                           f"are {size} matrices")
    if B.ndim < 2:
        raise RuntimeError("linalg.lu_solve: The input tensor B must have at least 2 dimensions.")
    n = LU.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        equation = "AX = B" if left else "XA = B"
        raise RuntimeError(f"linalg.lu_solve: Incompatible shapes of A and B for the equation {equation} "
                           f"({n}x{n} and {B.shape[-2]}x{B.shape[-1]})")
    if pivots.dtype is not _dt.int32:
        raise RuntimeError("linalg.lu_solve: pivots should be a Tensor of scalar type torch.int32")
    if pivots.ndim < 1 or pivots.shape[-1] != n:
        raise RuntimeError("linalg.lu_solve: Number of pivots per batch should be same as the dimension of the matrix")
    if LU.dtype is not B.dtype:
        raise RuntimeError(f"linalg.lu_solve: Expected LU and B to have the same dtype, but found LU of "
                           f"type {LU.dtype.name} and B of type {B.dtype.name} instead")


@_amp.float32
def lu_solve(LU, pivots, B, *, left=True, adjoint=False):
    """``X`` with ``A X = B`` given ``lu_factor(A)`` (``adjoint``: ``A^T X = B``; ``left=False``:
    ``X A = B``, or ``X A^T = B``); batches broadcast. Two triangular solves and the permutation,
    differentiable in ``LU`` and ``B`` (the permutation is applied as a matrix product, so an
    infinite entry of ``B`` spreads NaN where LAPACK's row swaps would not).

    >>> import tracegrad as tg
    >>> A = tg.tensor([[2.0, 1.0], [1.0, 3.0]])
    >>> LU, pivots = tg.linalg.lu_factor(A)
    >>> tg.linalg.lu_solve(LU, pivots, tg.tensor([[3.0, 5.0]]), left=False)
    tensor([[0.8000, 1.4000]])
    """
    from . import solve_triangular

    _check_solve(LU, pivots, B, left)
    if not left:  # X A = B  <=>  A^T X^T = B^T (and X A^T = B  <=>  A X^T = B^T)
        return F.transpose(lu_solve(LU, pivots, F.transpose(B, -2, -1), adjoint=not adjoint), -2, -1)
    p, lower, upper = lu_unpack(LU, pivots)
    if adjoint:  # A^T = U^T L^T P^T: X = P L^-T U^-T B
        y = solve_triangular(F.transpose(upper, -2, -1), B, upper=False)
        return F.matmul(p, solve_triangular(F.transpose(lower, -2, -1), y, upper=True, unitriangular=True))
    y = solve_triangular(lower, F.matmul(F.transpose(p, -2, -1), B), upper=False, unitriangular=True)
    return solve_triangular(upper, y, upper=True)
