"""``tg.linalg`` (PyTorch's ``torch.linalg``): ``inv``, ``det``, ``slogdet``, ``solve``,
``cholesky``, ``eigh``, ``eigvalsh``, ``svd``, ``svdvals``, ``qr``, ``pinv``,
``matrix_rank``, ``cond``, ``solve_triangular``, ``vector_norm``, ``matrix_norm``, ``norm``,
``matrix_power``, ``cross``, ``matrix_exp``, ``multi_dot``, ``vecdot``, ``diagonal``,
``vander``; the LU family ``lu_factor``, ``lu_factor_ex``, ``lu``, ``lu_solve`` (linalg_lu.py),
``lstsq`` (linalg_lstsq.py) and ``ldl_factor``, ``ldl_factor_ex``, ``ldl_solve`` (linalg_ldl.py,
no derivative, as PyTorch's); and ``cholesky_solve``, ``cholesky_inverse``, ``pinverse``,
``lu_unpack`` (``tg.`` level, as in PyTorch). ``inv``, ``det``, ``slogdet``, ``solve``,
``cholesky``, ``eigh``, ``svd``, ``qr``, ``pinv`` and the LU factorization are primitives
(NumPy's LAPACK eagerly, batched; C kernels when compiled) with their own derivative rules; the
rest are compositions. ``eig`` and ``eigvals`` raise NotImplementedError: their results are
complex, and tracegrad has no complex dtypes (linalg_complex.py).

>>> import tracegrad as tg
>>> A = tg.tensor([[2.0, 1.0], [1.0, 3.0]])
>>> tg.linalg.solve(A, tg.tensor([3.0, 5.0]))
tensor([0.8000, 1.4000])
>>> tg.linalg.det(A)
tensor(5.)
"""
from __future__ import annotations

import math
from collections import namedtuple

from ..core.placement import on_inputs_device as _on_inputs_device
from ..core.dtypes import finfo
from .. import amp as _amp
from .._api import functional as F
from .._api.composites import check_norm_input, cross, norm as _vector_norm, tril as _tril
from .._api.rearrange import select as _select
from .complex import eig, eigvals  # (NotImplementedError: complex results)
from .ldl import ldl_factor, ldl_factor_ex, ldl_solve
from .lstsq import lstsq
from .lu import first_true, lu, lu_factor, lu_factor_ex, lu_solve, raise_for_info  # (the LU family)
from ..ops import decompositions as D, determinant as _det, linalg as L
from ..ops.linalg import LinAlgError
from ..core.tensor import Tensor

__all__ = ["inv", "inv_ex", "det", "slogdet", "solve", "solve_ex", "cholesky", "cholesky_ex", "solve_triangular",
           "vector_norm", "tensorinv", "tensorsolve", "householder_product", "matmul", "LinAlgError",
           "matrix_norm", "norm", "matrix_power", "cross", "eigh", "eigvalsh", "svd", "svdvals",
           "cond", "pinv", "matrix_rank", "qr", "matrix_exp", "multi_dot", "vecdot", "diagonal", "vander",
           "lu_factor", "lu_factor_ex", "lu", "lu_solve", "lstsq", "eig", "eigvals",
           "ldl_factor", "ldl_factor_ex", "ldl_solve"]

slogdet_result = namedtuple("slogdet", ["sign", "logabsdet"])
cholesky_ex_result = namedtuple("linalg_cholesky_ex", ["L", "info"])
inv_ex_result = namedtuple("linalg_inv_ex", ["inverse", "info"])
solve_ex_result = namedtuple("linalg_solve_ex", ["result", "info"])
matmul = F.matmul
eigh_result = namedtuple("linalg_eigh", ["eigenvalues", "eigenvectors"])
svd_result = namedtuple("linalg_svd", ["U", "S", "Vh"])
qr_result = namedtuple("linalg_qr", ["Q", "R"])
_INF = float("inf")


@_amp.float32
def inv(A):
    """The inverse of each square matrix of ``A`` (RuntimeError for a singular one)."""
    return L.INV(A)


def _singular(name):
    """The message of ``inv_ex``'s and ``solve_ex``'s ``check_errors`` (raise_for_info)."""
    return lambda k, where: (f"linalg.{name}: The diagonal element {k} is zero, the inversion could not "
                             f"be completed because the input matrix is singular{where}.")


def _nonsingular(A):
    """(LU's info per matrix, ``A`` with its singular matrices replaced by the identity, a mask
    of them broadcastable to a result): the ``_ex`` functions' results are NaN there."""
    from ..core.creation import eye

    info = lu_factor_ex(A.detach()).info
    singular = F.unsqueeze(F.unsqueeze(F.ne(info, 0), -1), -1)
    return info, F.where(singular, eye(A.shape[-1], dtype=A.dtype), A), singular


@_on_inputs_device
@_amp.float32
def inv_ex(A, *, check_errors=False):
    """``inv`` that also returns ``info`` (int32 per matrix: 0, or LU's 1-based index of the
    first exactly zero pivot) instead of raising; a singular matrix's inverse is NaN (PyTorch
    leaves it unspecified). ``check_errors=True`` raises LinAlgError, as ``inv``.

    >>> import tracegrad as tg
    >>> tg.linalg.inv_ex(tg.tensor([[1.0, 2.0], [2.0, 4.0]])).info
    tensor(2, dtype=tracegrad.int32)
    """
    info, safe, singular = _nonsingular(A)
    if check_errors:
        raise_for_info(info, A.ndim, _singular("inv_ex"))
    return inv_ex_result(F.where(singular, float("nan"), L.INV(safe)), info)


def solve_ex(A, B, *, left=True, check_errors=False):
    """``solve`` that also returns ``info`` (as ``inv_ex``'s) instead of raising; the solutions
    of singular systems are NaN. ``check_errors=True`` raises LinAlgError, as ``solve``."""
    info, safe, singular = _nonsingular(A)
    if check_errors:
        raise_for_info(info, A.ndim, _singular("solve_ex"))
    result = solve(safe, B, left=left)
    mask = singular if result.ndim >= singular.ndim else F.squeeze(singular, -1)
    return solve_ex_result(F.where(mask, float("nan"), result), info)


@_amp.float32
def tensorinv(A, ind=2):
    """The tensor inverse of ``A`` with respect to ``tensordot`` over its first ``ind`` dims:
    ``prod(A.shape[:ind]) == prod(A.shape[ind:])``; the result has shape
    ``A.shape[ind:] + A.shape[:ind]``."""
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = math.prod(A.shape[:ind]), math.prod(A.shape[ind:])
    if rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {cols} != {rows}")
    return inv(A.reshape(rows, cols)).reshape(tuple(A.shape[ind:]) + tuple(A.shape[:ind]))


@_amp.float32
def tensorsolve(A, B, dims=None):
    """``X`` with ``tensordot(A, X, X.ndim) == B``: ``X`` has shape ``A.shape[B.ndim:]``
    (``dims``: dims of ``A`` moved to its end first)."""
    if dims is not None:
        dims = [d % A.ndim for d in dims]
        A = F.permute(A, [d for d in range(A.ndim) if d not in dims] + dims)
    shape = tuple(A.shape[B.ndim:])
    rows, cols = math.prod(A.shape[:B.ndim]), math.prod(shape)
    if tuple(A.shape[:B.ndim]) != tuple(B.shape) or rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           f"prod(self.shape[:other.ndim]), but got {cols} != {rows}")
    return solve(A.reshape(rows, cols), B.reshape(rows)).reshape(shape)


@_amp.float32
@_on_inputs_device
def householder_product(A, tau):
    """The first ``n`` columns of ``H_1 ... H_k`` (``A`` is m x n, ``tau`` k <= n), ``H_i = I -
    tau_i v_i v_i^T`` with ``v_i`` column i of ``A`` below the diagonal and 1 on it (LAPACK's
    orgqr: ``Q`` from ``geqrf``'s compact form). Differentiable, batched.

    >>> import tracegrad as tg
    >>> tg.linalg.householder_product(tg.tensor([[1.0], [1.0]]), tg.tensor([1.0]))
    tensor([[ 0.],
            [-1.]])
    """
    from ..core.creation import eye

    m, n = A.shape[-2:]
    k = tau.shape[-1]
    if not (m >= n >= k):
        raise RuntimeError(f"torch.linalg.householder_product: expected input.shape[-2] >= input.shape[-1] >= "
                           f"tau.shape[-1], got {m}, {n} and {k}")
    vectors = F.add(_tril(A, -1), eye(m, n, dtype=A.dtype))
    q = eye(m, n, dtype=A.dtype)
    for i in reversed(range(k)):  # (H_i applied to the product of the later ones)
        v = vectors[..., :, i:i + 1]
        q = F.sub(q, F.mul(F.unsqueeze(tau[..., i:i + 1], -1), F.matmul(v, F.matmul(F.transpose(v, -2, -1), q))))
    return q


def det(A):
    """The determinant of each square matrix of ``A``. Its gradient is the cofactor matrix
    (``det(A) A^-T`` where A is invertible), computed from an SVD, so it is exact at singular
    and nearly singular matrices too (ops/determinant.py); so is the second derivative.

    >>> import tracegrad as tg
    >>> A = tg.tensor([[1.0, 2.0], [2.0, 4.0]], requires_grad=True)
    >>> tg.linalg.det(A).backward()
    >>> A.grad
    tensor([[ 4., -2.],
            [-2.,  1.]])
    """
    return _det.DET(A)


def slogdet(A):
    """``(sign, log|det|)`` of each square matrix, without overflow for large ones (LAPACK's
    LU). The gradient of ``logabsdet`` is ``A^-T`` (+-inf at a singular matrix, as PyTorch's);
    ``sign`` has none.

    >>> import tracegrad as tg
    >>> tg.linalg.slogdet(tg.tensor([[0.0, 2.0], [3.0, 0.0]]))
    slogdet(sign=tensor(-1.), logabsdet=tensor(1.7918))
    """
    packed = _det.SLOGDET(A)
    return slogdet_result(F.squeeze(F.narrow(packed, -1, 0, 1), -1), F.squeeze(F.narrow(packed, -1, 1, 1), -1))


@_amp.float32
def solve(A, B, *, left=True):
    """``X`` with ``A X = B`` (``B`` a matrix, batches broadcast, or a vector); ``left=False``:
    ``X A = B``."""
    if not left:
        return F.transpose(solve(F.transpose(A, -2, -1), F.transpose(B, -2, -1)), -2, -1)
    if B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1])):
        return F.squeeze(L.SOLVE(A, F.unsqueeze(B, -1)), -1)
    return L.SOLVE(A, B)


@_amp.float32
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


@_on_inputs_device
@_amp.float32
def cholesky_ex(A, *, upper=False, check_errors=False):
    """``cholesky`` that also returns ``info`` (int32 per matrix: 0, or the order of the first
    leading minor that is not positive-definite, LAPACK's) instead of raising; a matrix that is
    not positive-definite gets ``L`` NaN from that pivot on (PyTorch leaves it unspecified).
    ``check_errors=True`` raises for such a matrix, as ``cholesky``.

    >>> import tracegrad as tg
    >>> tg.linalg.cholesky_ex(tg.tensor([[4.0, 2.0], [2.0, -5.0]])).info
    tensor(2, dtype=tracegrad.int32)
    """
    lower = L.CHOLESKY(A, check=False)
    info = first_true(F.logical_not(F.gt(lower.detach().diagonal(0, -2, -1), 0)))
    if check_errors:
        raise_for_info(info, A.ndim, lambda k, where: (
            f"linalg.cholesky_ex: The factorization could not be completed because the input is not "
            f"positive-definite (the leading minor of order {k} is not positive-definite){where}."))
    return cholesky_ex_result(F.transpose(lower, -2, -1) if upper else lower, info)


def _check_uplo(name, UPLO):
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"linalg.{name}: Expected UPLO argument to be 'L' or 'U', but got {UPLO!r}")


@_amp.float32
def eigh(A, UPLO="L"):
    """Eigenvalues (ascending) and orthonormal eigenvectors (the columns) of each symmetric
    matrix: ``A = V diag(L) V^T``. ``A`` is read as ``(A + A^T) / 2``; PyTorch reads the
    triangle ``UPLO`` names, the same on symmetric input (``UPLO`` is checked, then has no
    effect), and the gradient, PyTorch's symmetric one, is then the derivative in every
    direction. Each eigenvector's sign is fixed: its first component of largest magnitude is
    positive (PyTorch keeps LAPACK's signs, which may differ; ``V diag(f(L)) V^T``, ``|V|`` and
    projections agree). Gradients through the eigenvectors divide by differences of eigenvalues:
    they are undefined for repeated ones (as in PyTorch), whose eigenvectors are any orthonormal
    basis of their eigenspace (compiled programs, by Jacobi rotations, and LAPACK may choose
    differently there).

    >>> import tracegrad as tg
    >>> L, V = tg.linalg.eigh(tg.tensor([[2.0, 1.0], [1.0, 2.0]]))
    >>> L
    tensor([1., 3.])
    >>> V
    tensor([[ 0.7071,  0.7071],
            [-0.7071,  0.7071]])
    """
    _check_uplo("eigh", UPLO)
    packed = D.EIGH(A)
    n = packed.shape[-1]
    return eigh_result(_select(packed, -2, 0), F.narrow(packed, -2, 1, n))


@_amp.float32
def eigvalsh(A, UPLO="L"):
    """The eigenvalues (ascending) of each symmetric matrix (``eigh``'s reading of ``A``).

    >>> import tracegrad as tg
    >>> tg.linalg.eigvalsh(tg.tensor([[2.0, 1.0], [1.0, 2.0]]))
    tensor([1., 3.])
    """
    _check_uplo("eigvalsh", UPLO)
    return _select(D.EIGH(A), -2, 0)


@_amp.float32
def svd(A, full_matrices=True, *, driver=None):
    """``A = U diag(S) Vh`` for each matrix (m x n, k = min(m, n)): singular values ``S``
    descending, ``U`` (m x k) and ``Vh`` (k x n) with orthonormal columns / rows; with
    ``full_matrices`` (the default, as PyTorch's) ``U`` is m x m and ``Vh`` n x n, completed by
    an orthonormal basis of the rest. Signs: ``U``'s columns are fixed as ``eigh``'s vectors
    (first largest component positive), ``Vh``'s rows with them; PyTorch keeps LAPACK's, which
    may differ (``U S Vh``, ``|U|`` and projections agree). Gradients, PyTorch's, divide by
    differences of singular values (undefined where two are equal) and by the singular values
    when m != n; those of the completing columns are ignored (as PyTorch's). At a zero
    singular value the vectors are any completing ones: compiled programs (one-sided Jacobi)
    and LAPACK may choose differently there. ``driver`` (a CUDA option in PyTorch) is accepted
    and unused.

    >>> import tracegrad as tg
    >>> U, S, Vh = tg.linalg.svd(tg.tensor([[3.0, 0.0], [0.0, -2.0]]))
    >>> S
    tensor([3., 2.])
    >>> U @ tg.diag(S) @ Vh
    tensor([[ 3.,  0.],
            [ 0., -2.]])
    """
    m, n = A.shape[-2:] if A.ndim >= 2 else (None, None)
    packed = D.SVD(A)
    k = min(m, n)
    u = F.narrow(packed, -2, 0, m)
    vh = F.transpose(F.narrow(packed, -2, m + 1, n), -2, -1)
    if full_matrices and m != n:
        if m > k:
            u = F.cat([u, _complement(u)], -1)
        else:
            vh = F.cat([vh, F.transpose(_complement(F.transpose(vh, -2, -1)), -2, -1)], -2)
    return svd_result(u, _select(packed, -2, m), vh)


legacy_svd_result = namedtuple("svd", ["U", "S", "V"])


def legacy_svd(input, some=True, compute_uv=True):
    """``tg.svd`` / ``Tensor.svd`` (PyTorch's older API): ``(U, S, V)`` with ``V = Vh^T``,
    reduced unless ``some=False``; ``compute_uv=False`` gives zero ``U`` (m x m) and ``V``
    (n x n), as PyTorch's.

    >>> import tracegrad as tg
    >>> tg.svd(tg.tensor([[0.0, 2.0], [1.0, 0.0]])).V
    tensor([[0., 1.],
            [1., 0.]])
    """
    if not compute_uv:
        from ..core.creation import zeros

        m, n = input.shape[-2:]
        batch = tuple(input.shape[:-2])
        return legacy_svd_result(zeros(*batch, m, m, dtype=input.dtype), svdvals(input),
                                 zeros(*batch, n, n, dtype=input.dtype))
    u, s, vh = svd(input, full_matrices=not some)
    return legacy_svd_result(u, s, F.transpose(vh, -2, -1))


def _complement(q):
    """An orthonormal basis (m x (m - k), a constant: no gradient) of the space orthogonal to the
    orthonormal columns of ``q`` (m x k): the last columns of its complete QR's Q."""
    m, k = q.shape[-2:]
    full = D.QR(q.detach(), complete=True)
    return F.narrow(F.narrow(full, -2, 0, m), -1, k, m - k)


@_amp.float32
def qr(A, mode="reduced"):
    """``A = Q R`` for each matrix (m x n, k = min(m, n)): ``Q`` with orthonormal columns (m x k;
    m x m with ``mode="complete"``) and ``R`` upper triangular (k x n; m x n). Householder
    reflections with LAPACK's signs, so both equal PyTorch's as they are. ``mode="r"`` returns an
    empty ``Q``. Differentiable (PyTorch's rule) except ``mode="complete"`` with m > n, where it
    raises, as PyTorch's; ``mode="r"`` is differentiable too (PyTorch's raises).

    >>> import tracegrad as tg
    >>> Q, R = tg.linalg.qr(tg.tensor([[3.0, 1.0], [4.0, 2.0]]))
    >>> R
    tensor([[-5.0000, -2.2000],
            [ 0.0000,  0.4000]])
    >>> Q @ R
    tensor([[3.0000, 1.0000],
            [4.0000, 2.0000]])
    """
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' "
                           "(default), 'r', or 'complete'")
    m, n = A.shape[-2:] if A.ndim >= 2 else (0, 0)
    complete = mode == "complete"
    packed = D.QR(A, complete=complete)
    kq = m if complete else min(m, n)
    r = F.narrow(F.narrow(packed, -2, m, kq), -1, 0, n)
    if mode == "r":
        from ..core.creation import empty

        return qr_result(empty(0, dtype=A.dtype), r)
    return qr_result(F.narrow(F.narrow(packed, -2, 0, m), -1, 0, kq), r)


@_amp.float32
def svdvals(A, *, driver=None):
    """The singular values of each matrix, descending (``svd``'s ``S``).

    >>> import tracegrad as tg
    >>> tg.linalg.svdvals(tg.tensor([[0.0, 2.0, 0.0], [1.0, 0.0, 0.0]]))
    tensor([2., 1.])
    """
    return _select(D.SVD(A), -2, A.shape[-2])


def _tolerance(A, s_max, atol, rtol):
    """PyTorch's cut-off for pinv and matrix_rank, as a (..., 1) column: max(atol, rtol * s_max)
    (``s_max`` a column; tensor tolerances have the batch shape), rtol defaulting to eps *
    max(m, n) when atol is not given (or not positive), else to 0."""
    if rtol is None:
        positive_atol = atol is not None and (not isinstance(atol, (int, float)) or atol > 0)
        rtol = 0.0 if positive_atol else _default_rtol(A)
    column = lambda t: F.unsqueeze(t, -1) if isinstance(t, Tensor) else t
    tol = s_max * column(rtol)
    if atol is None:
        return tol
    return F.maximum(tol, column(atol) if isinstance(atol, Tensor) else F.to_tensor(atol, A.dtype))


def _default_rtol(A):
    return float(finfo(A.dtype).eps) * max(A.shape[-2:])


def _spectrum(A, hermitian):
    """(values whose magnitudes are compared with the cut-off, largest magnitude)."""
    if hermitian:
        w = eigvalsh(A)
        return w, F.amax(F.abs(w), -1, keepdim=True)
    s = svdvals(A)
    return s, F.narrow(s, -1, 0, 1)


def pinv(A, rcond=None, hermitian=False, *, atol=None, rtol=None):
    """The Moore-Penrose pseudo-inverse of each matrix, from its SVD (``hermitian``: its
    ``eigh``, reading ``(A + A^T) / 2`` as ``eigh`` does), singular values at most ``max(atol,
    rtol * largest)`` counting as zero (PyTorch's defaults; ``rcond`` is PyTorch's older name
    for ``rtol``). A primitive with PyTorch's gradient (the derivative at constant rank; the
    symmetric part of it with ``hermitian``), defined at repeated singular values too. With
    tensor ``atol``/``rtol`` it is composed of ``svd``/``eigh`` instead, whose gradient needs
    distinct singular values.

    >>> import tracegrad as tg
    >>> tg.linalg.pinv(tg.tensor([[1.0, 0.0], [0.0, 2.0], [0.0, 0.0]]))
    tensor([[1.0000, 0.0000, 0.0000],
            [0.0000, 0.5000, 0.0000]])
    """
    rtol = rcond if rtol is None else rtol
    if not any(isinstance(t, Tensor) for t in (atol, rtol)):
        if A.ndim < 2 or not A.dtype.is_floating_point:
            D.PINV.infer(A, atol=0.0, rtol=0.0, hermitian=hermitian)  # (raises the error)
        if rtol is None:
            rtol = 0.0 if atol is not None and atol > 0 else _default_rtol(A)
        return D.PINV(A, atol=float(atol or 0.0), rtol=float(rtol), hermitian=bool(hermitian))
    if hermitian:
        w, v = eigh(A)
        values, left, right = w, v, v
    else:
        left, values, vh = svd(A, full_matrices=False)
        right = F.transpose(vh, -2, -1)
    _, largest = _spectrum(A, hermitian)
    keep = F.gt(F.abs(values), _tolerance(A, largest, atol, rtol))
    inverse = F.where(keep, 1 / F.where(keep, values, 1.0), 0.0)  # (no 1/0 in either branch)
    return F.matmul(right * F.unsqueeze(inverse, -2), F.transpose(left, -2, -1))


@_amp.float32
def pinverse(input, rcond=1e-15):
    """``tg.pinverse`` (PyTorch's older name): ``linalg.pinv`` with ``rtol=rcond``."""
    return pinv(input, atol=0.0, rtol=rcond)


@_amp.float32
def matrix_rank(A, tol=None, hermitian=False, *, atol=None, rtol=None):
    """The number of singular values (``hermitian``: eigenvalue magnitudes) above
    ``max(atol, rtol * largest)`` (PyTorch's defaults; ``tol`` is PyTorch's older name for
    ``atol``), as int64.

    >>> import tracegrad as tg
    >>> tg.linalg.matrix_rank(tg.tensor([[1.0, 2.0], [2.0, 4.0]]))
    tensor(1)
    """
    atol = tol if atol is None else atol
    values, largest = _spectrum(A, hermitian)
    keep = F.gt(F.abs(values), _tolerance(A, largest, atol, rtol))
    return F.sum(keep, -1)


@_amp.float32
def cond(A, p=None):
    """The condition number of each matrix: largest / smallest singular value for ``p`` None or
    2 (any shape; -2: the inverse ratio), else ``matrix_norm(A, p) * matrix_norm(inv(A), p)``
    (square, invertible: a singular matrix raises, where PyTorch returns inf).

    >>> import tracegrad as tg
    >>> tg.linalg.cond(tg.tensor([[4.0, 0.0], [0.0, 0.5]]))
    tensor(8.)
    """
    if p in (None, 2, -2):
        s = svdvals(A)
        big, small = _select(s, -1, 0), _select(s, -1, s.shape[-1] - 1)
        return big / small if p != -2 else small / big
    return matrix_norm(A, p) * matrix_norm(inv(A), p)


def solve_triangular(A, B, *, upper, left=True, unitriangular=False):
    """``X`` with ``A X = B`` (``left=False``: ``X A = B``) reading only ``A``'s upper or lower
    triangle (and a unit diagonal with ``unitriangular``), as PyTorch's: the gradient for ``A``
    is triangular too.

    >>> import tracegrad as tg
    >>> tg.linalg.solve_triangular(tg.tensor([[2.0, 0.0], [1.0, 1.0]]), tg.tensor([[2.0], [3.0]]), upper=False)
    tensor([[1.],
            [2.]])
    """
    from .._api.composites import tril, triu
    from ..core.creation import eye

    if B.ndim < 2:
        raise RuntimeError(f"linalg.solve_triangular: B must be a matrix or batches of matrices, "
                           f"got shape {list(B.shape)}")
    tri = triu(A, 1 if unitriangular else 0) if upper else tril(A, -1 if unitriangular else 0)
    if unitriangular:
        tri = tri + eye(A.shape[-1], dtype=A.dtype)
    return solve(tri, B, left=left)


@_amp.float32
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


@_on_inputs_device
@_amp.float32
def cholesky_inverse(L_factor, upper=False):
    """The inverse of ``A = L L^T`` (``upper``: ``U^T U``) from its Cholesky factor."""
    from ..core.creation import eye

    n = L_factor.shape[-1]
    return cholesky_solve(F.expand(eye(n, dtype=L_factor.dtype), tuple(L_factor.shape)), L_factor, upper)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """The ``ord``-norm of ``x`` as a vector (over ``dim``, all elements by default)."""
    return _vector_norm(x, ord, dim, keepdim, dtype=dtype)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """Frobenius (``"fro"``), nuclear (``"nuc"``: the sum of the singular values), spectral (2:
    the largest singular value; -2: the smallest) or the induced 1 / inf norms (max absolute
    column / row sum; -1 / -inf: the minimum) of the matrices over ``dim``.

    >>> import tracegrad as tg
    >>> A = tg.tensor([[3.0, 0.0], [0.0, -4.0]])
    >>> tg.linalg.matrix_norm(A, 2), tg.linalg.matrix_norm(A, "nuc")
    (tensor(4.), tensor(7.))
    """
    check_norm_input("linalg.matrix_norm", A)
    A = F.cast(A, dtype) if dtype is not None else A
    if ord == "fro":
        return _vector_norm(A, 2, list(dim), keepdim)
    if ord not in (1, -1, _INF, -_INF, 2, -2, "nuc"):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord!r} not supported; expected 'fro', "
                           "'nuc', 2, -2, 1, -1, inf or -inf")
    rows, cols = (d % A.ndim for d in dim)
    if rows == cols:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({rows}, {cols})")
    if ord in (2, -2, "nuc"):
        from .._api.composites import movedim

        s = svdvals(movedim(A, (rows, cols), (-2, -1)))
        out = F.sum(s, -1) if ord == "nuc" else _select(s, -1, 0 if ord == 2 else s.shape[-1] - 1)
        for d in sorted((rows, cols)) if keepdim else ():
            out = F.unsqueeze(out, d)
        return out
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


@_on_inputs_device
def matrix_power(A, n):
    """``A`` multiplied by itself ``n`` times (the identity for 0; the inverse's power for
    negative ``n``), by repeated squaring."""
    if n < 0:
        return matrix_power(inv(A), -n)
    n_rows = A.shape[-1]
    from ..core.creation import eye

    result, base = None, A
    while n:
        if n & 1:
            result = base if result is None else F.matmul(result, base)
        n >>= 1
        if n:
            base = F.matmul(base, base)
    return result if result is not None else F.expand(eye(n_rows, dtype=A.dtype), tuple(A.shape))


# ----------------------------------------------------------------------------- composed
# Pade-13 coefficients and the 1-norm up to which it is accurate to double precision (Higham,
# "The scaling and squaring method for the matrix exponential revisited", 2005)
_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
           129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
           40840800.0, 960960.0, 16380.0, 182.0, 1.0)
_THETA13 = 5.371920351148152


@_on_inputs_device
def matrix_exp(A):
    """``exp(A)`` of each square matrix: the [13/13] Pade approximant of ``A / 2^s``, squared
    ``s`` times, with ``s`` from the largest 1-norm of the batch (read eagerly: inside a
    compiled function this breaks the graph). Differentiable through its products and solve.

    >>> import tracegrad as tg
    >>> tg.linalg.matrix_exp(tg.tensor([[0.0, 1.0], [0.0, 0.0]]))
    tensor([[1., 1.],
            [0., 1.]])
    """
    from ..core.creation import eye

    L._square("matrix_exp", A)
    n = A.shape[-1]
    if n == 0 or A.numel() == 0:
        return F.clone(A)
    one_norm = float(F.amax(F.sum(F.abs(A.detach()), -2), tuple(range(A.ndim - 1))))
    squarings = max(0, math.ceil(math.log2(one_norm / _THETA13))) if one_norm > _THETA13 else 0
    X = A / (2 ** squarings) if squarings else A
    b = _PADE13
    ident = F.expand(eye(n, dtype=A.dtype), tuple(A.shape))
    X2 = F.matmul(X, X)
    X4 = F.matmul(X2, X2)
    X6 = F.matmul(X4, X2)
    U = F.matmul(X, F.matmul(X6, X6 * b[13] + X4 * b[11] + X2 * b[9]) + X6 * b[7] + X4 * b[5] + X2 * b[3]
                 + ident * b[1])
    V = F.matmul(X6, X6 * b[12] + X4 * b[10] + X2 * b[8]) + X6 * b[6] + X4 * b[4] + X2 * b[2] + ident * b[0]
    result = L.SOLVE(V - U, V + U)
    for _ in range(squarings):
        result = F.matmul(result, result)
    return result


def multi_dot(tensors):
    """The product of the matrices in order (a first 1-d operand is a row, a last a column),
    parenthesised to need the fewest multiplications."""
    tensors = list(tensors)
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    first_vec, last_vec = tensors[0].ndim == 1, tensors[-1].ndim == 1
    mats = [F.unsqueeze(tensors[0], 0) if first_vec else tensors[0], *tensors[1:-1],
            F.unsqueeze(tensors[-1], -1) if last_vec else tensors[-1]]
    for k, m in enumerate(mats):
        if m.ndim != 2:
            raise RuntimeError(f"multi_dot(): tensor {k} must be 2D but got {m.ndim}D")
    dims = [mats[0].shape[0]] + [m.shape[1] for m in mats]
    result = _chain(mats, _chain_order(dims), 0, len(mats) - 1)
    if first_vec:
        result = F.squeeze(result, 0)
    if last_vec:
        result = F.squeeze(result, -1)
    return result


def _chain_order(dims):
    """The matrix-chain dynamic programme: ``split[i][j]`` where the product of i..j splits."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = math.inf
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def _chain(mats, split, i, j):
    if i == j:
        return mats[i]
    k = split[i][j]
    return F.matmul(_chain(mats, split, i, k), _chain(mats, split, k + 1, j))


@_amp.lower_precision
def vecdot(x, y, *, dim=-1):
    """The dot product of the vectors along ``dim`` (broadcast)."""
    return F.sum(F.mul(x, y), dim)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """``A.diagonal(offset, dim1, dim2)`` with the last two dims by default (a view)."""
    return A.diagonal(offset, dim1, dim2)


@_on_inputs_device
def vander(x, *, N=None):
    """The Vandermonde matrix of ``x`` along its last dim: columns ``x^0, x^1, ..., x^(N-1)``."""
    if x.ndim < 1:
        raise RuntimeError("linalg.vander: x must have at least one dimension")
    n = x.shape[-1] if N is None else N
    if n < 1:
        raise RuntimeError(f"linalg.vander: N must be greater than 1, got {n}")
    from ..core.creation import arange

    powers = arange(n, dtype=x.dtype if x.dtype.is_floating_point else None)
    return F.pow(F.unsqueeze(x, -1), powers)
