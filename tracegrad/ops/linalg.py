"""Matrix product primitive. ``matmul`` here takes operands with at least two dims and
broadcasts the batch dims; 1-D operands are handled in ``tracegrad._api.functional.matmul`` by
unsqueeze/squeeze, so this one rule serves mm, bmm, matmul and ``@``.
"""
from __future__ import annotations

import numpy as np

from ..core import creation
from . import helpers as H
from .registry import defop
from .shapes import broadcast_shapes


def _infer_matmul(a, b):
    sa, sb = tuple(a.shape), tuple(b.shape)
    if len(sa) < 2 or len(sb) < 2:
        raise RuntimeError(f"matmul primitive needs 2-D or batched operands, got {list(sa)} and {list(sb)}")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {a.dtype.name} != {b.dtype.name}")
    if sa[-1] != sb[-2]:
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({'x'.join(map(str, sa[-2:]))} and "
            f"{'x'.join(map(str, sb[-2:]))}); operands have shapes {list(sa)} and {list(sb)}"
        )
    try:
        batch = broadcast_shapes(sa[:-2], sb[:-2])
    except RuntimeError:
        raise RuntimeError(
            f"matmul: batch dimensions of {list(sa)} and {list(sb)} cannot be broadcast"
        ) from None
    return batch + (sa[-2], sb[-1]), a.dtype


def _mT(x):
    n = x.ndim
    return x.permute(tuple(range(n - 2)) + (n - 1, n - 2))


def _matmul_vjp(ctx, g):
    a, b = ctx.input(0), ctx.input(1)
    ga = MATMUL(g, _mT(b)) if ctx.needs_input_grad[0] else None
    gb = None
    if ctx.needs_input_grad[1]:
        k, n = b.shape[-2:]
        if a.ndim > 2 and all(s == 1 for s in b.shape[:-2]) and int(np.prod(a.shape[:-2])) > 1:
            # a matrix shared by every item of a batch (a Linear's weight on (B, T, C) inputs):
            # its gradient, the sum over the batch of A_i^T G_i, is one product over all rows,
            # X^T(B*T x K) @ G(B*T x N), instead of B products and a sum
            gb = MATMUL(_mT(a.reshape(-1, k)), g.reshape(-1, n)).reshape(b.shape)
        else:
            gb = MATMUL(_mT(a), g)
    return ga, gb


def _matmul_jvp(ctx, ta, tb):
    a, b = ctx.input(0), ctx.input(1)
    res = None if ta is None else MATMUL(ta, b)
    if tb is not None:
        part = MATMUL(a, tb)
        res = part if res is None else res + part
    return res


MATMUL = defop("matmul", infer=_infer_matmul, impl=np.matmul, save=(0, 1), kind="linalg",
               vjp=_matmul_vjp, jvp=_matmul_jvp,
               sample=lambda: [((("any", (3, 4)), ("any", (4, 5))), {}),
                               ((("any", (2, 3, 4)), ("any", (1, 4, 2))), {})])


# ----------------------------------------------------------------------------- inverse, solve
# Batched over leading dims (NumPy's LAPACK stacks). Their rules are written with these ops, so
# they differentiate again. The C backend lowers them to its own kernels (backends/c/kernels.py).
# (Determinants: ops/determinant.py.)
class LinAlgError(RuntimeError):
    """A matrix that the operation cannot work with: singular, not positive-definite, or an
    iteration that does not converge (PyTorch's ``torch.linalg.LinAlgError``, a RuntimeError)."""


def _square(name, x):
    s = tuple(x.shape)
    if len(s) < 2 or s[-1] != s[-2]:
        raise RuntimeError(f"linalg.{name}: A must be batches of square matrices, but they are "
                           f"{' by '.join(map(str, s[-2:])) or 'a scalar'} matrices")
    check_float_matrix(name, x)
    return s


def check_float_matrix(name, x):
    """LAPACK's dtypes: float32 and float64 (float16, as in PyTorch, has no linear algebra)."""
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"linalg.{name}: Expected a floating point tensor as input. Got {x.dtype.name}")
    if x.dtype.itemsize < 4:
        raise RuntimeError(f"linalg.{name}: Low precision dtypes not supported. Got {x.dtype.torch_name}")


def _lapack(name, fn):
    def impl(*arrays, **attrs):
        try:
            return fn(*arrays, **attrs)
        except np.linalg.LinAlgError:
            raise LinAlgError(f"linalg.{name}: The input matrix is singular, so it has no inverse "
                               "(or the system has no unique solution)") from None

    return impl


def _well_conditioned(shape=(3, 3)):
    return ("well_conditioned", shape)


def _inv_vjp(ctx, g):
    out_t = _mT(ctx.out)
    return (-MATMUL(MATMUL(out_t, g), out_t),)


INV = defop("linalg_inv", infer=lambda a: (_square("inv", a), a.dtype), impl=_lapack("inv", np.linalg.inv),
            save=("out",), kind="linalg", vjp=_inv_vjp,
            jvp=lambda ctx, t: -MATMUL(MATMUL(ctx.out, t), ctx.out),
            sample=lambda: [((_well_conditioned(),), {}), ((_well_conditioned((2, 4, 4)),), {})])


def _infer_solve(a, b):
    n = _square("solve", a)[-1]
    sb = tuple(b.shape)
    if len(sb) < 2 or sb[-2] != n:
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation AX = B "
                           f"({'x'.join(map(str, a.shape[-2:]))} and {'x'.join(map(str, sb[-2:]))})")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found "
                           f"A of type {a.dtype.name} and B of type {b.dtype.name} instead")
    return broadcast_shapes(tuple(a.shape)[:-2], sb[:-2]) + sb[-2:], a.dtype


def _solve_vjp(ctx, g):
    gb = SOLVE(_mT(ctx.input(0)), g)
    ga = -MATMUL(gb, _mT(ctx.out)) if ctx.needs_input_grad[0] else None
    return ga, gb


def _solve_jvp(ctx, ta, tb):
    rhs = tb
    if ta is not None:
        part = -MATMUL(ta, ctx.out)
        rhs = part if rhs is None else rhs + part
    return SOLVE(ctx.input(0), rhs)


SOLVE = defop("linalg_solve", infer=_infer_solve, impl=_lapack("solve", np.linalg.solve),
              save=(0, "out"), kind="linalg", vjp=_solve_vjp, jvp=_solve_jvp,
              sample=lambda: [((_well_conditioned(), ("any", (3, 2))), {}),
                              ((_well_conditioned((2, 3, 3)), ("any", (1, 3, 4))), {}),
                              ((_well_conditioned(), ("any", (2, 3, 2))), {})])


# ----------------------------------------------------------------------------- cholesky
# The input is read as (A + A^T) / 2. PyTorch reads A's lower triangle; both agree on the
# symmetric matrices both expect, and reading the symmetric part makes PyTorch's gradient (a
# symmetric matrix) the true derivative, which finite differences confirm in every direction.
def _tril(x, diagonal=0):
    return H.tril(x, diagonal)


def _sym(x):
    return (x + _mT(x)) * 0.5


def _phi(x):
    """The lower triangle of ``x`` with its diagonal halved."""
    n = x.shape[-1]
    return _tril(x) - _tril(x) * _eye_like(x, n) * 0.5


def _eye_like(x, n):
    return creation.eye(n, dtype=x.dtype)


def _right_solve(x, lower):
    """``x L^-1`` (``L`` lower triangular): ``(L^-T x^T)^T``."""
    return _mT(SOLVE(_mT(lower), _mT(x)))


def _cholesky_nan(a):
    """Cholesky-Banachiewicz of one symmetric matrix, a pivot that is not positive set to NaN
    and carried on (as the C kernel: runtime.h.j2 tg_cholesky)."""
    n = a.shape[-1]
    out = np.zeros_like(a)
    for i in range(n):
        for j in range(i + 1):
            s = a[i, j] - out[i, :j] @ out[j, :j]
            if i == j:
                out[i, i] = np.sqrt(s) if s > 0 else np.nan
            else:
                out[i, j] = s / out[j, j]
    return out


def _cholesky_impl(a, check=True):
    """``check``: raise for a matrix that is not positive-definite; else its factor is NaN from
    the first pivot that is not positive on (linalg.cholesky_ex reads that pivot)."""
    sym = (a + np.swapaxes(a, -1, -2)) * 0.5
    try:
        return np.linalg.cholesky(sym)
    except np.linalg.LinAlgError:
        if check:
            raise LinAlgError("linalg.cholesky: The factorization could not be completed because the "
                               "input is not positive-definite") from None
    flat = sym.reshape(-1, *sym.shape[-2:])
    return np.stack([_cholesky_nan(m) for m in flat]).reshape(sym.shape) if flat.size else sym


def _cholesky_vjp(ctx, g):
    # gA = L^-T sym(phi(L^T gL)) L^-1 (PyTorch's cholesky_backward)
    lower = ctx.out
    m = _sym(_phi(MATMUL(_mT(lower), g)))
    return (_right_solve(SOLVE(_mT(lower), m), lower),)


def _cholesky_jvp(ctx, t):
    # dL = L phi(L^-1 sym(dA) L^-T)
    lower = ctx.out
    inner = _mT(SOLVE(lower, _mT(SOLVE(lower, _sym(t)))))
    return MATMUL(lower, _phi(inner))


CHOLESKY = defop("linalg_cholesky", infer=lambda a, check=True: (_square("cholesky", a), a.dtype),
                 impl=_cholesky_impl, save=("out",), kind="linalg", vjp=_cholesky_vjp,
                 jvp=_cholesky_jvp,
                 sample=lambda: [((_well_conditioned(),), {}), ((_well_conditioned((2, 4, 4)),), {}),
                                 ((_well_conditioned((2, 3, 3)),), {"check": False})])
