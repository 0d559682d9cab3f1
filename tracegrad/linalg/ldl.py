"""``tg.linalg.ldl_factor``, ``ldl_factor_ex`` and ``ldl_solve`` (PyTorch's): the LDL^T
factorization of symmetric indefinite matrices with Bunch-Kaufman pivoting (LAPACK's sytrf on
the lower triangle) and the solve with it (ops/ldl.py). As in PyTorch they have no derivative:
their results require grad when an input does, and a backward through them raises (never a
silently missing gradient). No C kernel: compiled, they run on the interpreter, with a warning.

>>> import tracegrad as tg
>>> A = tg.tensor([[4.0, 1.0, 2.0], [1.0, -3.0, 0.0], [2.0, 0.0, 1.0]])
>>> LD, pivots = tg.linalg.ldl_factor(A)
>>> pivots
tensor([1, 2, 3], dtype=tracegrad.int32)
>>> tg.linalg.ldl_solve(LD, pivots, tg.tensor([[1.0], [2.0], [3.0]]))
tensor([[-13.0000],
        [ -5.0000],
        [ 29.0000]])
"""
from __future__ import annotations

from collections import namedtuple

from ..core.placement import on_inputs_device as _on_inputs_device
from ..core import dtypes as _dt
from .._api import functional as F
from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled
from .lu import first_true, raise_for_info
from ..ops import ldl as _ldl

__all__ = ["ldl_factor", "ldl_factor_ex", "ldl_solve"]

ldl_factor_result = namedtuple("linalg_ldl_factor", ["LD", "pivots"])
ldl_factor_ex_result = namedtuple("linalg_ldl_factor_ex", ["LD", "pivots", "info"])


class _NoDerivative(Function):
    """Passes ``out`` through, tied to ``inputs``; its backward raises PyTorch's error."""

    @staticmethod
    def forward(ctx, name, out, *inputs):
        ctx.name = name
        return out.clone()

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError(f"derivative for {ctx.name} is not implemented")


def _without_derivative(name, out, *inputs):
    if is_grad_enabled() and any(t.requires_grad for t in inputs):
        return _NoDerivative.apply(name, out, *inputs)
    return out


@_on_inputs_device
def ldl_factor_ex(A, *, hermitian=False, check_errors=False):
    """``ldl_factor`` that also returns ``info`` (int32 per matrix: 0, or the 1-based index of
    the first 1 x 1 block of D that is exactly zero: the matrix is singular; the factorization
    is still complete, as LAPACK's); ``check_errors=True`` raises for such a matrix.

    >>> import tracegrad as tg
    >>> tg.linalg.ldl_factor_ex(tg.tensor([[1.0, 2.0], [2.0, 4.0]])).info
    tensor(2, dtype=tracegrad.int32)
    """
    if A.ndim < 2:
        raise RuntimeError("torch.linalg.ldl_factor_ex: The input tensor A must have at least 2 dimensions.")
    if not A.dtype.is_floating_point:
        raise RuntimeError(f"torch.linalg.ldl_factor_ex: Expected a floating point or complex tensor as "
                           f"input. Got {A.dtype.name}")
    n = A.shape[-1]
    packed = _ldl.LDL_FACTOR(A, hermitian=bool(hermitian))
    LD = _without_derivative("aten::linalg_ldl_factor_ex", F.narrow(packed, -2, 0, n), A)
    pivots = F.cast(F.squeeze(F.narrow(packed, -2, n, 1), -2), _dt.int32)
    info = first_true(F.logical_and(F.gt(pivots, 0), F.eq(LD.detach().diagonal(0, -2, -1), 0)))
    if check_errors:
        raise_for_info(info, A.ndim, lambda k, where: (
            f"torch.linalg.ldl_factor: D[{k},{k}] is exactly zero{where}: the matrix is singular "
            "(linalg.ldl_factor_ex factors it anyway)"))
    return ldl_factor_ex_result(LD, pivots, info)


def ldl_factor(A, *, hermitian=False):
    """``A = P L D L^T P^T`` for each symmetric matrix (its lower triangle read; ``hermitian``
    is the same for real matrices): ``LD`` holds L's strict lower part and D's 1 x 1 and 2 x 2
    blocks, ``pivots`` (int32) the interchanges, LAPACK's (a negative pivot marks a 2 x 2
    block). RuntimeError for a singular matrix (``ldl_factor_ex`` factors it).

    >>> import tracegrad as tg
    >>> tg.linalg.ldl_factor(tg.tensor([[0.0, 1.0], [1.0, 0.0]])).pivots
    tensor([-2, -2], dtype=tracegrad.int32)
    """
    LD, pivots, _ = ldl_factor_ex(A, hermitian=hermitian, check_errors=True)
    return ldl_factor_result(LD, pivots)


def ldl_solve(LD, pivots, B, *, hermitian=False):
    """``X`` with ``A X = B`` given ``ldl_factor(A)`` (batches broadcast; ``B`` a matrix).

    >>> import tracegrad as tg
    >>> LD, pivots = tg.linalg.ldl_factor(tg.tensor([[0.0, 1.0], [1.0, 0.0]]))
    >>> tg.linalg.ldl_solve(LD, pivots, tg.tensor([[2.0], [3.0]]))
    tensor([[3.],
            [2.]])
    """
    if B.ndim < 2:
        raise RuntimeError("torch.linalg.ldl_solve: The input tensor B must have at least 2 dimensions.")
    if pivots.dtype not in (_dt.int32, _dt.int64):
        raise RuntimeError(f"torch.linalg.ldl_solve: Expected pivots to be integers. Got {pivots.dtype.name}")
    out = _ldl.LDL_SOLVE(LD, pivots, B, hermitian=bool(hermitian))
    return _without_derivative("aten::linalg_ldl_solve", out, LD, B)
