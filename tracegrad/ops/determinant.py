"""Determinants: ``linalg_det``, ``linalg_slogdet`` and ``linalg_cofactor``, the gradient of the
determinant, which the other two differentiate through. NumPy's LAPACK eagerly (det, slogdet)
and an SVD (cofactor), batched; C kernels when compiled (backends/c/factor_kernels.py).

The derivative of ``det`` is the cofactor matrix ``C(A) = adj(A)^T``, a polynomial in A, defined
at singular matrices too. ``det(A) A^-T`` computes it only where A is invertible (and loses
digits as A nears a singular one), so ``linalg_cofactor`` computes it from the SVD ``A = U S V^T``:
``C(A) = det(U) det(V) U diag(p) V^T``, ``p_i`` the product of the singular values other than
``s_i``: exact at singular matrices (PyTorch uses this formula there, and ``det(A) A^-T``
elsewhere; at an exactly zero determinant its plain backward returns zeros, where this one
returns the cofactors, as PyTorch does when differentiating twice). Its own derivative, the
second derivative of det, is from the same SVD, with no division by singular values or their
differences: ``D^2 det(A)[G, X] = d sum_{i != j} p_ij (G'_ii X'_jj - G'_ij X'_ji)`` with
``G' = U^T G V``, ``d = det(U) det(V)`` and ``p_ij`` the product of the singular values other
than ``s_i`` and ``s_j``.

``linalg_slogdet`` packs ``(sign, log|det|)`` into a last dim of 2 (LAPACK's, without overflow
for large matrices); the gradient of ``log|det|``, ``A^-T``, is ``C(B) / (det(B) c)`` for
``B = A / c``, ``c ~ |det A|^(1/n)`` (so neither overflows): at a singular matrix that is +-inf
(a cofactor over a zero determinant; PyTorch's too), not an error.

Third derivatives of det go through the SVD's derivative, so, like the SVD's gradients, they
are undefined where singular values repeat (two or more zero ones included).
"""
from __future__ import annotations

import math

import numpy as np

from . import elementwise as E
from . import helpers as H
from .decompositions import SVD, _svd_parts
from .elementwise import _quiet
from .linalg import MATMUL, _eye_like, _mT, _square, _well_conditioned
from .registry import defop
from .scan import CUMPROD


# ----------------------------------------------------------------------------- det
def _per_matrix(x):
    """A value per matrix, ``x`` (...), as (..., 1, 1): to scale each matrix of a batch."""
    return x.reshape(tuple(x.shape) + (1, 1))


def _det_vjp(ctx, g):
    return (_per_matrix(g) * COFACTOR(ctx.input(0)),)


def _det_jvp(ctx, t):
    return (COFACTOR(ctx.input(0)) * t).sum((-2, -1))


# (impls _quiet: a determinant that overflows is inf, silently, as PyTorch's)
DET = defop("linalg_det", infer=lambda a: (_square("det", a)[:-2], a.dtype), impl=_quiet(np.linalg.det),
            save=(0,), kind="linalg", vjp=_det_vjp, jvp=_det_jvp, version=2,
            sample=lambda: [((_well_conditioned(),), {}), ((_well_conditioned((2, 3, 3)),), {}),
                            ((("singular", (3, 3)),), {}), ((("singular", (2, 4, 4)),), {})])


# ----------------------------------------------------------------------------- cofactor
def _products_but_one(s):
    """``p_i = prod_{j != i} s_j`` along the last axis, without dividing (s may hold zeros)."""
    ones = np.ones_like(s[..., :1])
    before = np.cumprod(np.concatenate([ones, s[..., :-1]], -1), -1)
    after = np.cumprod(np.concatenate([ones, s[..., :0:-1]], -1), -1)[..., ::-1]
    return before * after


def _cofactor_impl(a):
    n = a.shape[-1]
    out = np.full(a.shape, np.nan, a.dtype)
    if n == 0 or a.size == 0:
        return out
    flat, dst = a.reshape(-1, n, n), out.reshape(-1, n, n)
    finite = np.isfinite(flat).all(axis=(-2, -1))  # (NaN otherwise, as LAPACK's SVD fails there)
    if finite.any():
        u, s, vh = np.linalg.svd(flat[finite].astype(np.float64))
        d = np.sign(np.linalg.det(u) * np.linalg.det(vh))
        dst[finite] = (d[:, None, None] * (u * _products_but_one(s)[:, None, :]) @ vh).astype(a.dtype)
    return out


def _running_products(x):
    """Running products along the last dim."""
    return CUMPROD(x, dim=x.ndim - 1)


def _pair_products(s):
    """``P[i, j] = prod_{k != i, j} s_k`` (i != j; 0 on the diagonal) of a (..., n) tensor, with
    exclusive running products (no division: s may hold zeros)."""
    n = s.shape[-1]
    eye = _eye_like(s, n)
    skip_own = H.where(H.eq(eye, 1), 1.0, H.unsqueeze(s, -2))  # [i, k] = s_k, 1 at k = i
    ones = H.unsqueeze(skip_own, -1).new_ones(tuple(skip_own.shape[:-1]) + (1,))
    before = H.cat([ones, H.narrow(_running_products(skip_own), -1, 0, n - 1)], -1)  # prod_{k < j, k != i}
    one = s.new_ones(tuple(s.shape[:-1]) + (1,))
    after = H.flip(H.cat([one, H.narrow(_running_products(H.flip(s, -1)), -1, 0, n - 1)], -1), -1)
    upper = H.triu(before * H.unsqueeze(after, -2), 1)  # (j > i: the products below j, and above it)
    return upper + _mT(upper)


def _det_second_derivative(a, y):
    """The matrix ``M`` with ``<M, X> = D^2 det(A)[Y, X]`` for all X (symmetric in Y and X, so
    it is both the VJP of ``cofactor`` for a cotangent Y and its JVP for a tangent Y)."""
    n = a.shape[-1]
    u, s, v = _svd_parts(SVD(a), n)
    s = s.squeeze(-2)
    d = E.SIGN(DET(u.detach()) * DET(v.detach()))
    y_rot = MATMUL(MATMUL(_mT(u), y), v)
    eye = _eye_like(a, n)
    pairs = _pair_products(s)
    diag_y = (y_rot * eye).sum(-2, keepdim=True)  # (a row)
    inner = eye * MATMUL(diag_y, pairs) - pairs * _mT(y_rot)
    return _per_matrix(d) * MATMUL(MATMUL(u, inner), _mT(v))


COFACTOR = defop("linalg_cofactor", infer=lambda a: (_square("cofactor", a), a.dtype),
                 impl=_quiet(_cofactor_impl), save=(0,), kind="linalg",
                 vjp=lambda ctx, g: (_det_second_derivative(ctx.input(0), g),),
                 jvp=lambda ctx, t: _det_second_derivative(ctx.input(0), t),
                 # (its derivative at singular matrices, the third of det, is checked by finite
                 # differences in tests/test_linalg.py: PyTorch's differs from its own there)
                 sample=lambda: [((_well_conditioned(),), {}), ((("separated", (2, 4, 4)),), {})])


# ----------------------------------------------------------------------------- slogdet
def _slogdet_impl(a):
    sign, logabs = np.linalg.slogdet(a)
    return np.stack([sign, logabs], -1)


def _inverse_transpose(a, logabs):
    """``A^-T = C(A) / det(A)`` computed on ``B = A / c``, c the power of two nearest to
    ``|det A|^(1/n)`` (dividing by it is exact, so B's tiny determinant keeps its digits), and
    ``|det B|`` near 1 (c = 1 where A is singular: +-inf there, a cofactor over a zero)."""
    n = a.shape[-1]
    finite = H.logical_and(H.gt(logabs, float("-inf")), H.lt(logabs, float("inf")))
    exponent = E.ROUND(H.where(finite, logabs, 0.0) / (max(n, 1) * math.log(2))).detach()
    c = _per_matrix(E.EXP2(exponent))
    b = a / c
    return COFACTOR(b) / (_per_matrix(DET(b)) * c)


def _logabs(packed):
    return H.narrow(packed, -1, 1, 1).squeeze(-1)


def _slogdet_vjp(ctx, g):
    g_logabs = H.narrow(g, -1, 1, 1).unsqueeze(-1)
    return (g_logabs * _inverse_transpose(ctx.input(0), _logabs(ctx.out)),)


def _slogdet_jvp(ctx, t):
    d_logabs = (_inverse_transpose(ctx.input(0), _logabs(ctx.out)) * t).sum((-2, -1))
    d_logabs = H.unsqueeze(d_logabs, -1)
    return H.cat([d_logabs * 0, d_logabs], -1)


SLOGDET = defop("linalg_slogdet", infer=lambda a: (_square("slogdet", a)[:-2] + (2,), a.dtype),
                impl=_quiet(_slogdet_impl), save=(0, "out"), kind="linalg", vjp=_slogdet_vjp, jvp=_slogdet_jvp,
                sample=lambda: [((_well_conditioned(),), {}), ((("any", (2, 4, 4)),), {})])
