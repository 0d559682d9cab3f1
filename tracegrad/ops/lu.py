"""LU factorization with partial pivoting: ``linalg_lu_factor`` (differentiable) and
``lu_permutation`` (LAPACK's pivots to a permutation; integers, no derivative). NumPy eagerly
(LAPACK getf2's algorithm, batched), C kernels when compiled (runtime.h.j2 tg_lu_factor,
tg_lu_permutation). ``tracegrad/linalg_lu.py`` builds the public functions from these two.

``linalg_lu_factor``'s (..., m + 1, n) output packs, as the other decompositions do (primitives
have one output): rows 0..m-1 LAPACK's LU (L's strict lower part, its unit diagonal implied, and
U on and above the diagonal), row m the k = min(m, n) pivots, 1-based, as floats (exact: far
below 2^24), zeros after them. ``A = P L U`` with ``P`` from the pivots: row i of A was swapped
with row pivots[i] - 1 at step i.

The rules are written for ``A' = P^T A = L U`` in blocks (k x k top-left): ``L = [L1; L2]``
(L2 when m > n), ``U = [U1, U2]`` (U2 when m < n). The derivative at constant pivots, PyTorch's
(linalg_lu_backward / linalg_lu_jvp, the same map): with X = L1^-1 dA'_11 U1^-1,
dL1 = L1 tril(X, -1), dU1 = triu(X) U1, dU2 = L1^-1 (dA'_12 - dL1 U2), dL2 = (dA'_21 - L2 dU1) U1^-1.
"""
from __future__ import annotations

import numpy as np

from ..core import dtypes as _dt
from ..core.creation import arange, eye
from .decompositions import _matrices as _checked_matrices
from .linalg import LinAlgError, MATMUL, SOLVE, _mT, _tril
from . import helpers as H
from .registry import defop


# ----------------------------------------------------------------------------- factorization
def _singular_message(name, info, batch_index=None):
    where = "" if batch_index is None else f"(Batch element {batch_index}): "
    return (f"torch.linalg.{name}: {where}U[{info},{info}] is zero and using it on lu_solve would "
            "result in a division by zero. If you still want to perform the factorization, consider "
            "calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")


def first_largest(values):
    """LAPACK's idamax along the last axis: the first index of the largest magnitude, a NaN only
    when it comes first (its comparisons fail), as the C kernels do."""
    mags = np.abs(values)
    index = np.argmax(np.where(np.isnan(mags), -1.0, mags), axis=-1)
    return np.where(np.isnan(mags[..., 0]), 0, index)


def _lu_factor_impl(a, check):
    *batch, m, n = a.shape
    k = min(m, n)
    out = np.zeros((*batch, m + 1, n), a.dtype)
    lu = a.reshape(int(np.prod(batch, dtype=np.int64)), m, n).copy()
    rows = np.arange(lu.shape[0])
    info = np.zeros(lu.shape[0], np.int64)
    for j in range(k):
        p = j + first_largest(lu[:, j:, j])
        out.reshape(lu.shape[0], m + 1, n)[:, m, j] = p + 1
        top = lu[rows, j].copy()
        lu[rows, j], lu[rows, p] = lu[rows, p], top
        pivot = lu[:, j, j]
        zero = pivot == 0  # (then the column below is zero too: left as it is, as LAPACK does)
        info = np.where(zero & (info == 0), j + 1, info)
        lu[:, j + 1:, j] /= np.where(zero, 1, pivot)[:, None]
        lu[:, j + 1:, j + 1:] -= lu[:, j + 1:, j, None] * lu[:, j, None, j + 1:]
    if check and info.any():
        first = int(np.argmax(info != 0))
        raise LinAlgError(_singular_message("lu_factor", int(info[first]), first if batch else None))
    out[..., :m, :] = lu.reshape(*batch, m, n)
    return out


def _matrices(name, a):
    return _checked_matrices(name, a, f"torch.{name}: Expected tensor with 2 or more dimensions. Got size: "
                            f"{list(a.shape)} instead")


def _infer_lu_factor(a, check):
    s = _matrices("lu_factor", a)
    return s[:-2] + (s[-2] + 1, s[-1]), a.dtype


# ----------------------------------------------------------------------------- the pieces the rules use
def _triu(x, diagonal=0):
    return H.triu(x, diagonal)


def permutation_matrix(perm, m, dtype):
    """``P`` (..., m, m) with ``P[perm[i], i] = 1`` from a permutation (..., m) (so that
    ``(P^T A)[i] = A[perm[i]]``)."""
    return H.cast(H.eq(H.unsqueeze(perm, -2), H.unsqueeze(arange(m), -1)), dtype)


def lu_parts(packed, m, n):
    """(P, L, U) of a packed factorization: P (..., m, m), L (..., m, k) unit lower, U (..., k, n)."""
    k = min(m, n)
    lu = H.narrow(packed, -2, 0, m)
    pivots = H.cast(H.narrow(H.narrow(packed, -2, m, 1), -1, 0, k), _dt.int32)
    perm = LU_PERMUTATION(H.squeeze(pivots, -2), m=m)
    return (permutation_matrix(perm, m, packed.dtype),) + unit_lower_and_upper(lu, k)


def unit_lower_and_upper(lu, k):
    """(L, U) of the compact LU block (..., m, n): L (..., m, k) its strict lower part with the
    implied unit diagonal, U (..., k, n) its upper part."""
    strict_lower, upper = _split(lu, k)
    return strict_lower + eye(lu.shape[-2], k, dtype=lu.dtype), upper


def _split(lu, k):
    """(the strict lower part of the first k columns, the upper part of the first k rows) of a
    compact (..., m, n) block: where L and U (or their cotangents) sit."""
    return _tril(H.narrow(lu, -1, 0, k), -1), _triu(H.narrow(lu, -2, 0, k))


def _blocks(x, k, rows_first=True):
    """(top k rows or columns, the rest or None)."""
    dim = -2 if rows_first else -1
    size = x.shape[dim]
    return H.narrow(x, dim, 0, k), (H.narrow(x, dim, k, size - k) if size > k else None)


def _lu_vjp(ctx, g):
    m, n = ctx.shapes[0][-2:]
    k = min(m, n)
    p, lower, upper = lu_parts(ctx.out, m, n)
    g_lower, g_upper = _split(H.narrow(g, -2, 0, m), k)
    l1, l2 = _blocks(lower, k)
    u1, u2 = _blocks(upper, k, rows_first=False)
    gl1, gl2 = _blocks(g_lower, k)
    gu1, gu2 = _blocks(g_upper, k, rows_first=False)
    # <gL, dL> + <gU, dU> = <M, X> + <L1^-T gU2, dA'_12> + <gL2 U1^-T, dA'_21>, with
    # M = tril(L1^T gL1 - gU2 U2^T, -1) + triu(gU1 U1^T - L2^T gL2)
    low, up = MATMUL(_mT(l1), gl1), MATMUL(gu1, _mT(u1))
    if u2 is not None:
        low = low - MATMUL(gu2, _mT(u2))
    if l2 is not None:
        up = up - MATMUL(_mT(l2), gl2)
    m_inner = _tril(low, -1) + _triu(up)
    top = SOLVE(_mT(l1), _mT(SOLVE(u1, _mT(m_inner))))  # L1^-T M U1^-T
    if u2 is not None:
        top = H.cat([top, SOLVE(_mT(l1), gu2)], -1)
    if l2 is not None:
        top = H.cat([top, _mT(SOLVE(u1, _mT(gl2)))], -2)
    return (MATMUL(p, top),)


def _lu_jvp(ctx, t):
    m, n = ctx.shapes[0][-2:]
    k = min(m, n)
    p, lower, upper = lu_parts(ctx.out, m, n)
    l1, l2 = _blocks(lower, k)
    u1, u2 = _blocks(upper, k, rows_first=False)
    dt = MATMUL(_mT(p), t)  # dA' = P^T dA
    top, bottom = _blocks(dt, k)
    d11, d12 = _blocks(top, k, rows_first=False)
    x = _right_solve_upper(SOLVE(l1, d11), u1)
    dl1, du1 = MATMUL(l1, _tril(x, -1)), MATMUL(_triu(x), u1)
    packed = _tril(dl1, -1) + du1
    if u2 is not None:
        packed = H.cat([packed, SOLVE(l1, d12 - MATMUL(dl1, u2))], -1)
    if l2 is not None:
        packed = H.cat([packed, _right_solve_upper(bottom - MATMUL(l2, du1), u1)], -2)
    return H.cat([packed, packed.new_zeros(tuple(packed.shape[:-2]) + (1, n))], -2)


def _right_solve_upper(x, upper):
    """``x U^-1``."""
    return _mT(SOLVE(_mT(upper), _mT(x)))


def _lu_samples():
    # (square, batched, wide, tall; "well_conditioned" keeps the pivots far from ties)
    return [((("well_conditioned", (3, 3)),), {"check": True}),
            ((("well_conditioned", (2, 4, 4)),), {"check": False}),
            ((("any", (3, 5)),), {"check": False}),
            ((("any", (2, 5, 3)),), {"check": True})]


LU_FACTOR = defop("linalg_lu_factor", infer=_infer_lu_factor, impl=_lu_factor_impl, save=("out",),
                  kind="linalg", vjp=_lu_vjp, jvp=_lu_jvp, sample=_lu_samples)


# ----------------------------------------------------------------------------- pivots -> permutation
def _permutation_impl(pivots, m):
    *batch, k = pivots.shape
    swaps = pivots.reshape(int(np.prod(batch, dtype=np.int64)), k).astype(np.int64) - 1
    if swaps.size and (swaps.min() < 0 or swaps.max() >= m):
        raise RuntimeError("pivots passed to lu_unpack must be between 1 and LU.size(-2) inclusive."
                           "Did you properly pass the result of lu_factor?")
    perm = np.tile(np.arange(m), (swaps.shape[0], 1))
    rows = np.arange(swaps.shape[0])
    for i in range(k):
        here, there = perm[:, i].copy(), perm[rows, swaps[:, i]].copy()
        perm[:, i], perm[rows, swaps[:, i]] = there, here
    return perm.reshape(*batch, m)


def _infer_permutation(pivots, m):
    if pivots.dtype is not _dt.int32:
        raise RuntimeError("torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of "
                           f"torch.int32 dtype, got {pivots.dtype.name}")
    if len(pivots.shape) < 1 or pivots.shape[-1] > m:
        raise RuntimeError(f"lu_unpack: expected at most {m} pivots per matrix, got shape "
                           f"{list(pivots.shape)}")
    return tuple(pivots.shape[:-1]) + (m,), _dt.int64


def _permutation_samples():
    return [((("pivots", (3,), 3),), {"m": 3}), ((("pivots", (2, 3), 5),), {"m": 5})]


LU_PERMUTATION = defop("lu_permutation", infer=_infer_permutation, impl=_permutation_impl,
                       kind="linalg", differentiable=False, sample=_permutation_samples)
