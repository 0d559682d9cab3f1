"""Tensor's linear algebra methods: products (``matmul``, ``@``, ``mm``, ``addmm``...) and the
methods of ``tg.linalg``'s functions (``det``, ``inverse``, ``cholesky``, ``svd``, ``qr``...).

>>> import tracegrad as tg
>>> a = tg.tensor([[2.0, 0.0], [0.0, 4.0]])
>>> a @ a.inverse()
tensor([[1., 0.],
        [0., 1.]])
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from . import arithmetic as MX
from . import composites as C
from . import contractions as CT
from . import functional as F
from .numpy_names import numpy_names

if TYPE_CHECKING:
    from .tensor import Tensor


# (lazy, both: the linalg package stands above the Tensor (its functions take tensors); imported
# here at module level, it would lift the Tensor two floors, and with it everything that
# subclasses the Tensor: nn.Parameter, so all of tracegrad.nn)
def _linalg():
    from .. import linalg

    return linalg


def _linalg_legacy():
    from ..linalg import legacy

    return legacy


class LinalgMethods:
    """The linear algebra methods of ``tracegrad.Tensor`` (it lists this mixin)."""

    def matmul(self, b) -> Tensor:
        """The matrix product (vectors, matrices and batches of them, broadcast): ``tg.matmul``,
        also ``self @ other``.

        >>> import tracegrad as tg
        >>> tg.tensor([[1.0, 2.0], [3.0, 4.0]]).matmul(tg.tensor([1.0, 1.0]))
        tensor([3., 7.])
        """
        return F.matmul(self, b)

    def mm(self, b) -> Tensor:
        """``tg.mm(self, ...)`` as a method."""
        return F.mm(self, b)

    def bmm(self, b) -> Tensor:
        """``tg.bmm(self, ...)`` as a method."""
        return F.bmm(self, b)

    def mv(self, v) -> Tensor:
        """``tg.mv(self, ...)`` as a method."""
        return F.mv(self, v)

    def dot(self, b) -> Tensor:
        """``tg.dot(self, ...)`` as a method."""
        return F.dot(self, b)

    def outer(self, b) -> Tensor:
        """``tg.outer(self, ...)`` as a method."""
        return F.outer(self, b)

    def trace(self) -> Tensor:
        """``tg.trace(self, ...)`` as a method."""
        return C.trace(self)

    @numpy_names
    def cross(self, other, dim=None) -> Tensor:
        """The cross product of 3-vectors along ``dim`` (the first dim of size 3 by default)."""
        return C.cross(self, other, dim)

    def addmm(self, mat1, mat2, *, beta: float = 1, alpha: float = 1) -> Tensor:
        """``beta * input + alpha * (mat1 @ mat2)`` (``input`` ignored, NaNs too, when beta is 0)."""
        return MX.addmm(self, mat1, mat2, beta=beta, alpha=alpha)

    def addmv(self, mat, vec, *, beta: float = 1, alpha: float = 1) -> Tensor:
        """``beta * input + alpha * (mat @ vec)``."""
        return MX.addmv(self, mat, vec, beta=beta, alpha=alpha)

    def addr(self, vec1, vec2, *, beta: float = 1, alpha: float = 1) -> Tensor:
        """``beta * input + alpha * outer(vec1, vec2)``."""
        return MX.addr(self, vec1, vec2, beta=beta, alpha=alpha)

    def baddbmm(self, batch1, batch2, *, beta: float = 1, alpha: float = 1) -> Tensor:
        """``beta * input + alpha * (batch1 @ batch2)``, batch by batch."""
        return MX.baddbmm(self, batch1, batch2, beta=beta, alpha=alpha)

    def addbmm(self, batch1, batch2, *, beta: float = 1, alpha: float = 1) -> Tensor:
        """``beta * input + alpha * sum_b(batch1[b] @ batch2[b])``."""
        return MX.addbmm(self, batch1, batch2, beta=beta, alpha=alpha)

    def inner(self, other) -> Tensor:
        """Sum of products over the last dims of both (scalars multiply)."""
        return MX.inner(self, other)

    def vdot(self, other) -> Tensor:
        """The dot product of two 1-d tensors (real: ``dot``)."""
        return MX.vdot(self, other)

    def logdet(self) -> Tensor:
        """``log(det(A))``: NaN for a negative determinant, -inf for zero (``slogdet``'s, so large matrices do
        not overflow; its gradient, ``A^-T``, is +-inf at a singular matrix)."""
        return MX.logdet(self)

    def inverse(self) -> Tensor:
        """The inverse of each square matrix of ``A`` (RuntimeError for a singular one)."""
        return _linalg().inv(self)

    def det(self) -> Tensor:
        """The determinant of each square matrix of ``A``. Its gradient is the cofactor matrix (``det(A) A^-T``
        where A is invertible), computed from an SVD, so it is exact at singular and nearly singular
        matrices too (ops/determinant.py); so is the second derivative."""
        return _linalg().det(self)

    def slogdet(self) -> tuple[Tensor, Tensor]:
        """``(sign, log|det|)`` of each square matrix, without overflow for large ones (LAPACK's LU). The
        gradient of ``logabsdet`` is ``A^-T`` (+-inf at a singular matrix, as PyTorch's); ``sign`` has none."""
        return _linalg().slogdet(self)

    def matrix_power(self, n: int) -> Tensor:
        """``A`` multiplied by itself ``n`` times (the identity for 0; the inverse's power for negative ``n``),
        by repeated squaring."""
        return _linalg().matrix_power(self, n)

    def cholesky(self, upper: bool = False) -> Tensor:
        """``tg.linalg.cholesky(self, ...)`` as a method."""
        return _linalg().cholesky(self, upper=upper)

    def pinverse(self, rcond=1e-15) -> Tensor:
        """``tg.pinverse`` (PyTorch's older name): ``linalg.pinv`` with ``rtol=rcond``."""
        return _linalg().pinverse(self, rcond)

    def svd(self, some: bool = True, compute_uv: bool = True) -> tuple[Tensor, Tensor, Tensor]:
        """``tg.svd`` / ``Tensor.svd`` (PyTorch's older API): ``(U, S, V)`` with ``V = Vh^T``, reduced unless
        ``some=False``; ``compute_uv=False`` gives zero ``U`` (m x m) and ``V`` (n x n), as PyTorch's."""
        return _linalg().legacy_svd(self, some, compute_uv)

    def qr(self, some: bool = True) -> tuple[Tensor, Tensor]:
        """``tg.linalg.qr(self, ...)`` as a method."""
        return _linalg().qr(self, "reduced" if some else "complete")

    def cholesky_solve(self, L_factor, upper: bool = False) -> Tensor:
        """``X`` with ``A X = B`` for ``A = L L^T`` given its Cholesky factor (``upper``: ``A = U^T U``): two
        triangular solves (``tg.cholesky_solve``, PyTorch's argument order)."""
        return _linalg().cholesky_solve(self, L_factor, upper)

    def cholesky_inverse(self, upper: bool = False) -> Tensor:
        """The inverse of ``A = L L^T`` (``upper``: ``U^T U``) from its Cholesky factor."""
        return _linalg().cholesky_inverse(self, upper)

    def __matmul__(self, other) -> Tensor:
        """``self @ other``: ``tg.matmul(self, other)``."""
        return F.matmul(self, other)

    def __rmatmul__(self, other) -> Tensor:
        """``other @ self``: ``tg.matmul(other, self)``."""
        return F.matmul(other, self)

    ger = outer

    def kron(self, other) -> Tensor:
        """``tg.kron(self, ...)`` as a method."""
        return CT.kron(self, other)

    def lu(self, pivot: bool = True, get_infos: bool = False) -> tuple[Tensor, Tensor]:
        """``tg.lu(self, ...)`` as a method."""
        return _linalg_legacy().lu(self, pivot, get_infos)

    def triangular_solve(self, A, upper: bool = True, transpose=False,
                         unitriangular: bool = False) -> tuple[Tensor, Tensor]:
        """``tg.triangular_solve(self, ...)`` as a method."""
        return _linalg_legacy().triangular_solve(self, A, upper, transpose, unitriangular)

    def matrix_exp(self) -> Tensor:
        """``tg.linalg.matrix_exp(self, ...)`` as a method."""
        return _linalg().matrix_exp(self)
