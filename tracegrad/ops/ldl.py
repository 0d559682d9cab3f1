"""LDL^T factorization of symmetric indefinite matrices (Bunch-Kaufman pivoting, LAPACK's sytf2
with the lower triangle, PyTorch's ``linalg.ldl_factor``) and the solve with it (LAPACK's
sytrs): ``linalg_ldl_factor`` and ``linalg_ldl_solve``, NumPy only, one matrix at a time. They
have no derivative in PyTorch (linalg.ldl_factor and ldl_solve raise on backward: so does
tracegrad.linalg.ldl). Their C kernels (compiler/backends/c/templates/factorizations.h.j2) follow these
functions step by step.

``linalg_ldl_factor``'s (..., n + 1, n) output packs LAPACK's result as the other
factorizations do: rows 0..n-1 the factor (L's strict lower part, its unit diagonal implied,
and D's 1 x 1 and 2 x 2 blocks on and below the diagonal; zeros above), row n the pivots as
floats: k > 0 (1-based) a 1 x 1 block whose row and column were swapped with k; -k on both rows
of a 2 x 2 block whose second row and column were swapped with k.
"""
from __future__ import annotations

import math

import numpy as np

from .linalg import _square
from .lu import first_largest
from .registry import defop
from .shapes import broadcast_shapes

_ALPHA = (1 + math.sqrt(17)) / 8  # (Bunch-Kaufman's growth bound)


def _sytf2(a):
    """Factor ``a`` (n x n, lower triangle read, overwritten) in place; returns 1-based signed
    pivots."""
    n = a.shape[0]
    pivots = np.zeros(n, np.int64)
    k = 0
    while k < n:
        step, swap = 1, k
        diagonal = abs(a[k, k])
        below = k + 1 + int(first_largest(a[k + 1:, k])) if k < n - 1 else k
        column = abs(a[below, k]) if k < n - 1 else 0.0
        if not (max(diagonal, column) == 0 or math.isnan(diagonal)):
            if diagonal < _ALPHA * column:
                row = abs(a[below, k + int(first_largest(a[below, k:below]))])
                if below < n - 1:
                    row = max(row, abs(a[below + 1 + int(first_largest(a[below + 1:, below])), below]))
                if diagonal >= _ALPHA * column * (column / row):
                    pass
                elif abs(a[below, below]) >= _ALPHA * row:
                    swap = below
                else:
                    swap, step = below, 2
            _interchange(a, k, k + step - 1, swap, step)
            _update(a, k, step)
        pivots[k:k + step] = swap + 1 if step == 1 else -(swap + 1)
        k += step
    return pivots


def _interchange(a, k, kk, kp, step):
    """Rows and columns kk and kp of the trailing matrix (lower triangle)."""
    if kp == kk:
        return
    a[kp + 1:, [kk, kp]] = a[kp + 1:, [kp, kk]]
    between = a[kk + 1:kp, kk].copy()
    a[kk + 1:kp, kk] = a[kp, kk + 1:kp]
    a[kp, kk + 1:kp] = between
    a[kk, kk], a[kp, kp] = a[kp, kp], a[kk, kk]
    if step == 2:
        a[k + 1, k], a[kp, k] = a[kp, k], a[k + 1, k]


def _update(a, k, step):
    n = a.shape[0]
    if step == 1:
        if k < n - 1:
            inverse = 1 / a[k, k]
            a[k + 1:, k + 1:] -= inverse * np.outer(a[k + 1:, k], a[k + 1:, k])
            a[k + 1:, k] *= inverse
        return
    if k < n - 2:
        d21 = a[k + 1, k]
        d11, d22 = a[k + 1, k + 1] / d21, a[k, k] / d21
        d21 = 1 / (d11 * d22 - 1) / d21
        for j in range(k + 2, n):
            wk = d21 * (d11 * a[j, k] - a[j, k + 1])
            wkp1 = d21 * (d22 * a[j, k + 1] - a[j, k])
            a[j:, j] -= a[j:, k] * wk + a[j:, k + 1] * wkp1
            a[j, k], a[j, k + 1] = wk, wkp1


def _ldl_factor_impl(a, hermitian):
    *batch, n, _ = a.shape
    out = np.zeros((*batch, n + 1, n), a.dtype)
    count = int(np.prod(batch, dtype=np.int64))
    flat_in, flat_out = a.reshape(count, n, n), out.reshape(count, n + 1, n)
    for b in range(flat_in.shape[0]):
        work = flat_in[b].copy()
        pivots = _sytf2(work)
        flat_out[b, :n] = np.tril(work)
        flat_out[b, n] = pivots
    return out


def _infer_ldl_factor(a, hermitian):
    s = _square("ldl_factor_ex", a)
    return s[:-2] + (s[-1] + 1, s[-1]), a.dtype


LDL_FACTOR = defop("linalg_ldl_factor", infer=_infer_ldl_factor, impl=_ldl_factor_impl, kind="linalg",
                   differentiable=False,
                   # (zeros on the diagonal: 2 x 2 blocks; symmetric with eigenvalues of both signs)
                   sample=lambda: [((("any", (5, 5)),), {"hermitian": False}),
                                   ((("with_zeros", (2, 6, 6)),), {"hermitian": False}),
                                   ((("separated", (4, 4)),), {"hermitian": True})])


# ----------------------------------------------------------------------------- solve (sytrs)
def _sytrs(ld, pivots, b):
    """X with A X = B from A's factorization (ld lower, pivots 1-based signed); b overwritten."""
    n = ld.shape[0]
    k = 0
    while k < n:  # L D Y = P^T B
        if pivots[k] > 0:
            kp = pivots[k] - 1
            b[[k, kp]] = b[[kp, k]]
            b[k + 1:] -= np.outer(ld[k + 1:, k], b[k])
            b[k] /= ld[k, k]
            k += 1
            continue
        kp = -pivots[k] - 1
        b[[k + 1, kp]] = b[[kp, k + 1]]
        b[k + 2:] -= np.outer(ld[k + 2:, k], b[k]) + np.outer(ld[k + 2:, k + 1], b[k + 1])
        off = ld[k + 1, k]
        first, second = ld[k, k] / off, ld[k + 1, k + 1] / off
        denominator = first * second - 1
        top, bottom = b[k] / off, b[k + 1] / off
        b[k], b[k + 1] = (second * top - bottom) / denominator, (first * bottom - top) / denominator
        k += 2
    k = n - 1
    while k >= 0:  # L^T X = Y, then the interchanges back
        if pivots[k] > 0:
            b[k] -= ld[k + 1:, k] @ b[k + 1:]
            kp = pivots[k] - 1
            b[[k, kp]] = b[[kp, k]]
            k -= 1
            continue
        b[k] -= ld[k + 1:, k] @ b[k + 1:]
        b[k - 1] -= ld[k + 1:, k - 1] @ b[k + 1:]
        kp = -pivots[k] - 1
        b[[k, kp]] = b[[kp, k]]
        k -= 2
    return b


def _check_pivots(pivots):
    """Raise unless ``pivots`` (one matrix's) are ldl_factor's: blocks of one row (1..n) or of
    two rows holding the same negative pivot (-1..-n). LAPACK's sytrs reads any others out of
    bounds; the C kernel checks the same rule (factorizations.h.j2: tg_ldl_pivots)."""
    n, k = len(pivots), 0
    while k < n:
        p = int(pivots[k])
        if 0 < p <= n:
            k += 1
        elif p < 0 and -p <= n and k + 1 < n and int(pivots[k + 1]) == p:
            k += 2
        else:
            raise RuntimeError(f"torch.linalg.ldl_solve: pivots must be those of linalg.ldl_factor for "
                               f"{n} rows: 1..{n} for a 1 x 1 block, the same value in -{n}..-1 on both "
                               f"rows of a 2 x 2 block; got {list(map(int, pivots))}")


def _ldl_solve_impl(ld, pivots, b, hermitian):
    batch = broadcast_shapes(ld.shape[:-2], pivots.shape[:-1], b.shape[:-2])
    n, cols = b.shape[-2:]
    ld = np.broadcast_to(ld, batch + ld.shape[-2:]).reshape(-1, n, n)
    pivots = np.broadcast_to(pivots, batch + pivots.shape[-1:]).reshape(-1, n).astype(np.int64)
    out = np.broadcast_to(b, batch + (n, cols)).reshape(-1, n, cols).copy()
    for i in range(out.shape[0]):
        _check_pivots(pivots[i])
        _sytrs(ld[i], pivots[i], out[i])
    return out.reshape(batch + (n, cols))


def _infer_ldl_solve(ld, pivots, b, hermitian):
    n = _square("ldl_solve", ld)[-1]
    if len(b.shape) < 2 or b.shape[-2] != n:
        raise RuntimeError(f"torch.linalg.ldl_solve: Incompatible shapes of A and B for the equation "
                           f"AX = B ({n}x{n} and {'x'.join(map(str, b.shape[-2:]))})")
    if len(pivots.shape) < 1 or pivots.shape[-1] != n:
        raise RuntimeError(f"torch.linalg.ldl_solve: Expected LD.shape[-1] and pivots.shape[-1] to be the "
                           f"same, but got pivots with shape {list(pivots.shape)} instead")
    if ld.dtype is not b.dtype:
        raise RuntimeError(f"torch.linalg.ldl_solve: Expected LD and B to have the same dtype, but got LD "
                           f"with dtype {ld.dtype.name} and B with dtype {b.dtype.name} instead")
    batch = broadcast_shapes(tuple(ld.shape[:-2]), tuple(pivots.shape[:-1]), tuple(b.shape[:-2]))
    return batch + tuple(b.shape[-2:]), b.dtype


LDL_SOLVE = defop("linalg_ldl_solve", infer=_infer_ldl_solve, impl=_ldl_solve_impl, kind="linalg",
                  differentiable=False,
                  sample=lambda: [((("well_conditioned", (5, 5)), ("ldl_pivots", (5,)), ("any", (5, 2))),
                                   {"hermitian": False}),
                                  ((("well_conditioned", (4, 4)), ("ldl_pivots", (3, 4)), ("any", (1, 4, 3))),
                                   {"hermitian": False})])
