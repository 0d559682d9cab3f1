"""Matrix decompositions: ``linalg_eigh``, ``linalg_svd``, ``linalg_qr`` and ``linalg_pinv``
(NumPy's LAPACK eagerly, batched; C kernels of their own when compiled: backends/c/kernels.py
and runtime.h.j2). Their rules are written with tracegrad ops, so they differentiate again.

Primitives have one output, so each decomposition packs its results into one tensor (layouts
below, next to each op); ``tracegrad.linalg`` slices them, and the rules see the cotangent of
every part through the same slices (a zero where a part is unused: ``eigvalsh`` is ``eigh``'s
rule with a zero eigenvector cotangent).
"""
from __future__ import annotations

import numpy as np

from .linalg import LinAlgError, MATMUL, SOLVE, _eye_like, _mT, _square, _sym, _tril, check_float_matrix
from . import helpers as H
from .registry import defop

# ----------------------------------------------------------------------------- eigh
# linalg_eigh's (..., n + 1, n) output: row 0 the eigenvalues (ascending), rows 1..n the
# eigenvectors (columns). Like cholesky, the input is read as (A + A^T) / 2 (PyTorch reads one
# triangle): PyTorch's symmetric gradient is then the true derivative in every direction.
#
# Signs: each eigenvector is defined up to its sign. Ours is fixed by `_signs` (and the same rule
# in the C kernel, runtime.h.j2 tg_lead_sign): the first component whose magnitude is within
# SIGN_TIE (relative) of the largest is positive. Near-ties (|v| = (1, 1)/sqrt(2) computed as
# 0.70710678118654746 vs ...757) count as ties, so LAPACK and the C kernel pick the same
# component. PyTorch keeps LAPACK's signs, which may differ.
SIGN_TIE = 1e-3


def _signs(vecs):
    """+-1 per column of ``vecs`` (..., m, k) making its leading component positive."""
    if vecs.size == 0:
        return np.ones(vecs.shape[:-2] + (1, vecs.shape[-1]), vecs.dtype)
    mag = np.abs(vecs)
    near = mag >= mag.max(axis=-2, keepdims=True) * (1 - SIGN_TIE)
    lead = np.take_along_axis(vecs, np.argmax(near, axis=-2)[..., None, :], axis=-2)
    return np.where(lead < 0, -1.0, 1.0).astype(vecs.dtype)


def _rows(x, start, count):
    return H.narrow(x, -2, start, count)


def _diag_row(x):
    """The diagonal of each square matrix as a (..., 1, n) row."""
    return (x * _eye_like(x, x.shape[-1])).sum(-2, keepdim=True)


def _eigh_impl(a):
    try:
        vals, vecs = np.linalg.eigh((a + np.swapaxes(a, -1, -2)) * 0.5)
    except np.linalg.LinAlgError:
        raise LinAlgError("linalg.eigh: The algorithm failed to converge because the input matrix "
                           "is ill-conditioned or has too many repeated eigenvalues") from None
    return np.concatenate([vals[..., None, :], vecs * _signs(vecs)], axis=-2)


def _eigh_parts(packed):
    n = packed.shape[-1]
    return _rows(packed, 0, 1), _rows(packed, 1, n)


def _gaps(vals, eye):
    """``E[i, j] = vals[j] - vals[i]`` (``vals`` a row), 1 on the diagonal (what is divided by it
    there is zero)."""
    return vals - _mT(vals) + eye


def _eigh_vjp(ctx, g):
    # gA = V (skew(V^T gV) / E + diag(gL)) V^T, skew(X) = (X - X^T) / 2: PyTorch's
    # linalg_eig_backward (hermitian); symmetric, so it is also the gradient of sym(A)
    vals, vecs = _eigh_parts(ctx.out)
    g_vals, g_vecs = _eigh_parts(g)
    eye = _eye_like(vecs, vecs.shape[-1])
    vg = MATMUL(_mT(vecs), g_vecs)
    inner = (vg - _mT(vg)) * 0.5 / _gaps(vals, eye) + eye * g_vals
    return (MATMUL(MATMUL(vecs, inner), _mT(vecs)),)


def _eigh_jvp(ctx, t):
    # P = V^T sym(dA) V; dL = diag(P); dV = V (P / E, zero diagonal)
    vals, vecs = _eigh_parts(ctx.out)
    eye = _eye_like(vecs, vecs.shape[-1])
    p = MATMUL(MATMUL(_mT(vecs), _sym(t)), vecs)
    d_vecs = MATMUL(vecs, p * (1 - eye) / _gaps(vals, eye))
    return H.cat([_diag_row(p), d_vecs], -2)


def _infer_eigh(a):
    s = _square("eigh", a)
    return s[:-2] + (s[-1] + 1, s[-1]), a.dtype


def _separated(shape):
    return ("separated", shape)


EIGH = defop("linalg_eigh", infer=_infer_eigh, impl=_eigh_impl, save=("out",), kind="linalg",
             vjp=_eigh_vjp, jvp=_eigh_jvp,
             sample=lambda: [((_separated((3, 3)),), {}), ((_separated((2, 4, 4)),), {})])


# ----------------------------------------------------------------------------- svd
# The reduced SVD A = U diag(S) V^T (k = min(m, n): U m x k, S k descending, V n x k) packed,
# as eigh's, into one (..., m + 1 + n, k) tensor: rows 0..m-1 U, row m S, rows m+1.. V (V, not
# Vh, so that all three share their columns); linalg.svd slices it. Signs: U's columns are
# fixed by `_signs` (as eigenvectors), V's flipped with them.
def _svd_impl(a):
    m, n = a.shape[-2:]
    k = min(m, n)
    if k == 0:
        return np.zeros(a.shape[:-2] + (m + 1 + n, 0), a.dtype)
    if not np.isfinite(a).all():
        raise LinAlgError("linalg.svd: The algorithm failed to converge because the input matrix "
                           "contained non-finite values.")
    try:
        u, s, vh = np.linalg.svd(a, full_matrices=False)
    except np.linalg.LinAlgError:
        raise LinAlgError("linalg.svd: The algorithm failed to converge because the input matrix "
                           "is ill-conditioned or has too many repeated singular values") from None
    flip = _signs(u)
    return np.concatenate([u * flip, s[..., None, :], np.swapaxes(vh, -1, -2) * flip], axis=-2)


def _matrices(name, x, too_few=None):
    """The shape of ``x``, checked to be (batches of) floating matrices of any size;
    ``too_few`` is the message for fewer than 2 dims where PyTorch's op has its own."""
    s = tuple(x.shape)
    if len(s) < 2:
        raise RuntimeError(too_few or f"linalg.{name}: The input tensor A must have at least 2 dimensions, "
                                      f"got shape {list(s)}")
    check_float_matrix(name, x)
    return s


def _infer_svd(a):
    s = _matrices("svd", a)
    m, n = s[-2:]
    return s[:-2] + (m + 1 + n, min(m, n)), a.dtype


def _svd_parts(packed, m):
    """(U, S as a (..., 1, k) row, V) of a packed SVD of m-row matrices."""
    return _rows(packed, 0, m), _rows(packed, m, 1), _rows(packed, m + 1, packed.shape[-2] - m - 1)


def _svd_vjp(ctx, g):
    # PyTorch's svd_backward, skew(X) = X - X^T, E[i, j] = s_j^2 - s_i^2 (1 on the diagonal):
    # gA = U [(skew(U^T gU) S + S skew(V^T gV)) / E + diag(gS)] V^T
    #      + (I - U U^T) gU S^-1 V^T   (m > k)   + U S^-1 gV^T (I - V V^T)   (n > k)
    m, n = ctx.shapes[0][-2:]
    u, s, v = _svd_parts(ctx.out, m)
    gu, gs, gv = _svd_parts(g, m)
    k = s.shape[-1]
    eye = _eye_like(s, k)
    uu, vv = MATMUL(_mT(u), gu), MATMUL(_mT(v), gv)
    uu, vv = uu - _mT(uu), vv - _mT(vv)
    inner = (uu * s + _mT(s) * vv) / _gaps(s * s, eye) + eye * gs
    ga = MATMUL(MATMUL(u, inner), _mT(v))
    if m > k:
        gus = gu / s
        ga = ga + MATMUL(gus - MATMUL(u, MATMUL(_mT(u), gus)), _mT(v))
    if n > k:
        sgv = _mT(gv) / _mT(s)
        ga = ga + MATMUL(u, sgv - MATMUL(MATMUL(sgv, v), _mT(v)))
    return (ga,)


def _svd_jvp(ctx, t):
    # dP = U^T dA V, dS = diag(dP), dX = dP off its diagonal:
    # dU = U (dX S + S dX^T) / E + (I - U U^T) dA V S^-1   (the last term when m > k)
    # dV = V (S dX + dX^T S) / E + (I - V V^T) dA^T U S^-1 (when n > k)
    m, n = ctx.shapes[0][-2:]
    u, s, v = _svd_parts(ctx.out, m)
    k = s.shape[-1]
    eye = _eye_like(s, k)
    dp = MATMUL(MATMUL(_mT(u), t), v)
    dx = dp * (1 - eye)
    gaps = _gaps(s * s, eye)
    du = MATMUL(u, (dx * s + _mT(s) * _mT(dx)) / gaps)
    dv = MATMUL(v, (_mT(s) * dx + _mT(dx) * s) / gaps)
    if m > k:
        w = MATMUL(t, v) / s
        du = du + w - MATMUL(u, MATMUL(_mT(u), w))
    if n > k:
        w = MATMUL(_mT(t), u) / s
        dv = dv + w - MATMUL(v, MATMUL(_mT(v), w))
    return H.cat([du, _diag_row(dp), dv], -2)


SVD = defop("linalg_svd", infer=_infer_svd, impl=_svd_impl, save=("out",), kind="linalg",
            vjp=_svd_vjp, jvp=_svd_jvp,
            sample=lambda: [((_separated((3, 3)),), {}), ((_separated((2, 4, 3)),), {}),
                            ((_separated((3, 5)),), {})])


# ----------------------------------------------------------------------------- qr
# A = Q R by Householder reflections with LAPACK's conventions (geqrf: R's diagonal takes the
# sign opposite to the pivot column's leading entry), so Q and R equal PyTorch's and NumPy's as
# they are: no sign fix here. Packed, as eigh's, into one (..., m + kq, max(kq, n)) tensor
# (kq = Q's columns: k = min(m, n), or m with `complete`): rows 0..m-1 Q (zero columns beyond
# kq), rows m.. R (zero columns beyond n); linalg.qr slices it.
def _qr_impl(a, complete):
    m, n = a.shape[-2:]
    kq = m if complete else min(m, n)
    out = np.zeros(a.shape[:-2] + (m + kq, max(kq, n)), a.dtype)
    if m and n:
        q, r = np.linalg.qr(a, mode="complete" if complete else "reduced")
        out[..., :m, :kq], out[..., m:, :n] = q, r
    elif complete:
        out[..., :m, :m] = np.eye(m, dtype=a.dtype)
    return out


def _infer_qr(a, complete):
    s = _matrices("qr", a)
    m, n = s[-2:]
    kq = m if complete else min(m, n)
    return s[:-2] + (m + kq, max(kq, n)), a.dtype


def _qr_parts(ctx, packed):
    m, n = ctx.shapes[0][-2:]
    if ctx.complete and m > n:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and "
                           "nrows > ncols.")
    k = min(m, n)
    return H.narrow(_rows(packed, 0, m), -1, 0, k), H.narrow(_rows(packed, m, k), -1, 0, n)


def _times_inv_t(x, r):
    """``x R^-T``."""
    return _mT(SOLVE(r, _mT(x)))


def _qr_square_vjp(q, r, gq, gr):
    # m >= n (TensorFlow's QrGrad; PyTorch's linalg_qr_backward is the same map):
    # gA = Q (gR + tril(skew(Q^T gQ) + skew(R gR^T)) R^-T) + (gQ - Q Q^T gQ) R^-T
    qdq, rdr = MATMUL(_mT(q), gq), MATMUL(r, _mT(gr))
    low = _tril(qdq - _mT(qdq) + rdr - _mT(rdr))
    return MATMUL(q, gr + _times_inv_t(low, r)) + _times_inv_t(gq - MATMUL(q, qdq), r)


def _qr_vjp(ctx, g):
    q, r = _qr_parts(ctx, ctx.out)
    gq, gr = _qr_parts(ctx, g)
    m, n = q.shape[-2], r.shape[-1]
    if m >= n:
        return (_qr_square_vjp(q, r, gq, gr),)
    # m < n: A = (X | Y), X = Q R1 (square), Y = Q R2: R2's cotangent reaches Y through Q and
    # Q's through Y R2^T... (TensorFlow's split)
    r1, r2 = H.narrow(r, -1, 0, m), H.narrow(r, -1, m, n - m)
    gr1, gr2 = H.narrow(gr, -1, 0, m), H.narrow(gr, -1, m, n - m)
    y = MATMUL(q, r2)
    gx = _qr_square_vjp(q, r1, gq + MATMUL(y, _mT(gr2)), gr1)
    return (H.cat([gx, MATMUL(q, gr2)], -1),)


def _qr_jvp(ctx, t):
    # C = Q^T dX R1^-1 = Omega (skew: Q^T dQ) + U (upper: dR1 R1^-1), so Omega = L - L^T with
    # L = tril(C, -1); dR1 = U R1, dQ = dX R1^-1 - Q U; for m < n, dR2 = dQ^T Y + Q^T dY
    q, r = _qr_parts(ctx, ctx.out)
    m, n = q.shape[-2], r.shape[-1]
    r1 = H.narrow(r, -1, 0, m) if m < n else r
    dx = H.narrow(t, -1, 0, m) if m < n else t
    dx_r = _mT(SOLVE(_mT(r1), _mT(dx)))  # dX R1^-1
    c = MATMUL(_mT(q), dx_r)
    low = _tril(c, -1)
    upper = c - low + _mT(low)
    dq = dx_r - MATMUL(q, upper)
    dr = MATMUL(upper, r1)
    if m < n:
        r2 = H.narrow(r, -1, m, n - m)
        dr2 = MATMUL(_mT(dq), MATMUL(q, r2)) + MATMUL(_mT(q), H.narrow(t, -1, m, n - m))
        dr = H.cat([dr, dr2], -1)
    pad = r.shape[-1] - dq.shape[-1]  # Q's zero columns in the packing
    if pad:
        dq = H.cat([dq, dq.new_zeros(tuple(dq.shape[:-1]) + (pad,))], -1)
    return H.cat([dq, dr], -2)


QR = defop("linalg_qr", infer=_infer_qr, impl=_qr_impl, save=("out",), kind="linalg",
           vjp=_qr_vjp, jvp=_qr_jvp,
           sample=lambda: [((_separated((4, 3)),), {"complete": False}),
                           ((_separated((2, 3, 3)),), {"complete": False}),
                           ((_separated((2, 4)),), {"complete": False}),
                           ((_separated((3, 4)),), {"complete": True})])


# ----------------------------------------------------------------------------- pinv
# A primitive (not a composition of svd) so that its gradient is PyTorch's pinv_backward, the
# derivative at constant rank, defined at repeated singular values too (through the SVD it
# would divide by their differences). Singular values (hermitian: eigenvalue magnitudes) at or
# below max(atol, rtol * largest) count as zero; linalg.pinv resolves PyTorch's defaults into
# the attrs. hermitian reads (A + A^T) / 2, as eigh does; the rules then see that matrix.
def _finite_or_raise(a, name):
    if not np.isfinite(a).all():
        raise LinAlgError(f"linalg.{name}: The algorithm failed to converge because the input "
                           "matrix contained non-finite values.")


def _pinv_impl(a, atol, rtol, hermitian):
    m, n = a.shape[-2:]
    if min(m, n) == 0:
        return np.zeros(a.shape[:-2] + (n, m), a.dtype)
    if hermitian:
        vals, left = np.linalg.eigh((a + np.swapaxes(a, -1, -2)) * 0.5)
        right = left
    else:
        _finite_or_raise(a, "svd")
        left, vals, vh = np.linalg.svd(a, full_matrices=False)
        right = np.swapaxes(vh, -1, -2)
    mag = np.abs(vals)
    tol = np.maximum(atol, rtol * mag.max(axis=-1, keepdims=True))
    with np.errstate(divide="ignore"):
        inverse = np.where(mag > tol, 1 / np.where(mag > tol, vals, 1), 0)
    return (right * inverse[..., None, :]) @ np.swapaxes(left, -1, -2)


def _infer_pinv(a, atol, rtol, hermitian):
    s = _square("pinv", a) if hermitian else _matrices("pinv", a)
    return s[:-2] + (s[-1], s[-2]), a.dtype


def _pinv_input(ctx):
    a = ctx.input(0)
    return _sym(a) if ctx.hermitian else a


def _pinv_vjp(ctx, g):
    # PyTorch's pinv_backward (written for the smaller of m x m, n x n products)
    a, p = _pinv_input(ctx), ctx.out
    m, n = a.shape[-2:]
    ph, gh = _mT(p), _mT(g)
    if m <= n:
        k = MATMUL(gh, p)
        kph = MATMUL(k, ph)
        ga = (-_mT(MATMUL(p, k)) + kph - MATMUL(MATMUL(a, p), kph)
              + MATMUL(MATMUL(ph, p), gh - MATMUL(k, a)))
    else:
        k = MATMUL(p, gh)
        phk = MATMUL(ph, k)
        ga = (-_mT(MATMUL(k, p)) + phk - MATMUL(MATMUL(phk, p), a)
              + MATMUL(MATMUL(gh - MATMUL(a, k), p), ph))
    return (_sym(ga) if ctx.hermitian else ga,)


def _pinv_jvp(ctx, t):
    # PyTorch's pinv_jvp
    a, p = _pinv_input(ctx), ctx.out
    t = _sym(t) if ctx.hermitian else t
    m, n = a.shape[-2:]
    th, ph = _mT(t), _mT(p)
    if m <= n:
        k = MATMUL(ph, th)
        return (MATMUL(p, k - _mT(k) - MATMUL(k, MATMUL(a, p)))
                + MATMUL(th - MATMUL(p, MATMUL(a, th)), MATMUL(ph, p)))
    k = MATMUL(p, t)
    kh = _mT(k)
    return (MATMUL(kh - k - MATMUL(MATMUL(p, a), kh), p)
            + MATMUL(MATMUL(p, ph), th - MATMUL(MATMUL(th, a), p)))


PINV = defop("linalg_pinv", infer=_infer_pinv, impl=_pinv_impl, save=(0, "out"), kind="linalg",
             vjp=_pinv_vjp, jvp=_pinv_jvp,
             sample=lambda: [((_separated((3, 3)),), dict(atol=0.0, rtol=1e-12, hermitian=False)),
                             ((_separated((2, 4, 3)),), dict(atol=0.0, rtol=1e-12, hermitian=False)),
                             ((_separated((3, 5)),), dict(atol=0.0, rtol=1e-12, hermitian=False)),
                             ((_separated((2, 3, 3)),), dict(atol=0.0, rtol=1e-12, hermitian=True))])
