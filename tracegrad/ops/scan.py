"""Scan primitives: running sums, products, maxima, minima and log-sum-exps along one dim
(``cumsum cumprod cummax cummin logcumsumexp``). ``dim`` is a non-negative int in the IR; the
public functions in ``tracegrad._api.functional`` wrap it and handle 0-dim inputs.

Sums, products and log-sum-exps of float32 run in float64, as PyTorch's CPU kernels accumulate;
integers and bools sum and multiply as int64. ``cummax``/``cummin`` keep the input's dtype and
propagate NaN; their indices (the latest position of the running extreme, PyTorch's choice for
ties) are a composite of the values: ``scan_indices``.

>>> import tracegrad as tg
>>> tg.cumprod(tg.tensor([2.0, 0.0, 3.0]), 0)
tensor([2., 0., 0.])
>>> tg.cummax(tg.tensor([1.0, 3.0, 2.0, 3.0]), 0).indices
tensor([0, 1, 1, 3])
"""
from __future__ import annotations

import numpy as np

from ..core import creation
from ..core import dtypes as _dt
from ..core.grad_state import is_grad_enabled
from .helpers import where
from .registry import defop


def _infer(name, integer_result=True, floating_only=False):
    def infer(x, dim):
        if not 0 <= dim < len(x.shape):
            raise IndexError(f"{name}: dim {dim} out of range for shape {list(x.shape)}")
        if floating_only and not x.dtype.is_floating_point:
            raise RuntimeError(f"{name}: expected a floating point input, got {x.dtype}")
        promote = integer_result and x.dtype.category < 2  # (bool and integer inputs)
        return tuple(x.shape), _dt.int64 if promote else x.dtype

    return infer


def _accumulating(ufunc):
    """NumPy's ``ufunc.accumulate`` in float64 (int64 for bools and integers), cast back."""
    def impl(x, dim):
        acc = np.int64 if x.dtype.kind in "biu" else np.float64
        out_dtype = np.int64 if acc is np.int64 else x.dtype
        return ufunc.accumulate(x.astype(acc, copy=False), axis=dim).astype(out_dtype, copy=False)

    return impl


def _reverse_cumsum(g, dim):
    return g.flip((dim,)).cumsum(dim).flip((dim,))


# ----------------------------------------------------------------------------- cumsum
# the gradient of a running sum is the running sum of the gradient taken from the end
CUMSUM = defop("cumsum", infer=_infer("cumsum"), impl=_accumulating(np.add), save=(), kind="reduce",
               vjp=lambda ctx, g: (_reverse_cumsum(g, ctx.dim),),
               jvp=lambda ctx, t: t.cumsum(ctx.dim),
               sample=lambda: [(("any",), {"dim": 1}), ((("any", (5, 2, 3)),), {"dim": 0})])


# ----------------------------------------------------------------------------- cumprod
def _zero_split(x, dim):
    """Masks along ``dim``: before the first zero, and at the first zero. Past the first zero
    every running product is 0 and no input but that zero moves it."""
    zeros_so_far = (x == 0).cumsum(dim)
    return zeros_so_far == 0, (x == 0) & (zeros_so_far == 1)


def _cumprod_vjp(ctx, g):
    # d out_j / d x_k = out_j / x_k (k <= j) where x_k != 0: the reversed running sum of g * out
    # over x, before the first zero. At the first zero z: sum over j >= z of g_j times the
    # product without x_z, that is the running product with x_z replaced by 1. Past z the
    # gradient is 0, but not its derivative: when this gradient is itself differentiated
    # (grad mode on, create_graph), the quadratic formula instead. (PyTorch's cumprod_backward)
    x, out, dim = ctx.input(0), ctx.out, ctx.dim
    if is_grad_enabled():
        return (_cumprod_vjp_quadratic(x, g, dim),)
    before, first_zero = _zero_split(x, dim)
    at_nonzero = _reverse_cumsum(g * out, dim) / where(before, x, 1.0)
    without_zero = where(first_zero, 1.0, x).cumprod(dim)
    at_zero = _reverse_cumsum(g * without_zero, dim)
    return (where(before, at_nonzero, where(first_zero, at_zero, 0.0)),)


def _cumprod_vjp_quadratic(x, g, dim):
    """``grad_k = sum over j >= k of g_j * prod over i <= j, i != k of x_i``: a running product
    per k along a new axis (O(n^2) memory along ``dim``), differentiable to any order."""
    n = x.shape[dim]
    k, i = creation.arange(n).reshape(n, 1), creation.arange(n)
    x_without_k = where(k == i, 1.0, x.movedim(dim, -1).unsqueeze(-2))  # [..., k, i]
    terms = x_without_k.cumprod(-1) * g.movedim(dim, -1).unsqueeze(-2)  # [..., k, j]
    return where(i >= k, terms, 0.0).sum(-1).movedim(-1, dim)


def _cumprod_jvp(ctx, t):
    # before the first zero: out * cumsum(t / x); from the first zero z on only t_z moves the
    # product: t_z times the product without x_z
    x, out, dim = ctx.input(0), ctx.out, ctx.dim
    before, first_zero = _zero_split(x, dim)
    t_zero = where(first_zero, t, 0.0).sum(dim, keepdim=True)
    without_zero = where(first_zero, 1.0, x).cumprod(dim)
    return where(before, out * (t / where(before, x, 1.0)).cumsum(dim), t_zero * without_zero)


CUMPROD = defop("cumprod", infer=_infer("cumprod"), impl=_accumulating(np.multiply), save=(0, "out"),
                kind="reduce", vjp=_cumprod_vjp, jvp=_cumprod_jvp,
                sample=lambda: [(("any",), {"dim": 1}), ((("with_zeros", (4, 6)),), {"dim": 1}),
                                ((("with_zeros", (5, 3)),), {"dim": 0})])


# ----------------------------------------------------------------------------- cummax, cummin
def _extreme_impl(ufunc):
    def impl(x, dim):
        if x.dtype == np.bool_:
            return ufunc.accumulate(x.astype(np.uint8), axis=dim).astype(np.bool_)
        return ufunc.accumulate(x, axis=dim)  # (np.maximum/np.minimum propagate NaN)

    return impl


def scan_indices(x, values, dim):
    """The indices ``cummax``/``cummin`` return: for each position, the latest position at or
    before it where ``x`` equals the running extreme ``values`` (or is NaN), as PyTorch's
    kernels compare with ``>=``/``<=``. An int64 tensor of ``x``'s shape."""
    shape = [1] * x.ndim
    shape[dim] = x.shape[dim]
    positions = creation.arange(x.shape[dim]).reshape(shape)
    hit = x == values
    if x.dtype.is_floating_point:
        hit = hit | (x != x)
    return CUMMAX(where(hit, positions, 0), dim=dim)


def _extreme_vjp(ctx, g):
    index = scan_indices(ctx.input(0), ctx.out, ctx.dim)
    return (creation.zeros_like(g).scatter_add(ctx.dim, index, g),)


def _extreme_jvp(ctx, t):
    return t.gather(ctx.dim, scan_indices(ctx.input(0), ctx.out, ctx.dim))


def _extreme_op(name, ufunc):
    return defop(name, infer=_infer(name, integer_result=False), impl=_extreme_impl(ufunc),
                 save=(0, "out"), kind="reduce", vjp=_extreme_vjp, jvp=_extreme_jvp,
                 sample=lambda: [(("any",), {"dim": 1}), ((("any", (5, 2, 3)),), {"dim": 0})])


CUMMAX = _extreme_op("cummax", np.maximum)
CUMMIN = _extreme_op("cummin", np.minimum)


# ----------------------------------------------------------------------------- logcumsumexp
def _signed_log(v, positive):
    """``log |v|`` where ``v`` has the sign asked for, and the dtype's lowest finite number
    elsewhere (not -inf: the rules below subtract logs, and -inf - -inf is NaN). The log never
    sees a zero or the wrong sign, so its own gradient stays finite (no 0 * inf under where)."""
    keep = v > 0 if positive else v < 0
    return where(keep, where(keep, v.abs(), 1.0).log(), float(_dt.finfo(v.dtype).min))


def _reverse_logcumsumexp(v, dim):
    return v.flip((dim,)).logcumsumexp(dim).flip((dim,))


def _logcumsumexp_vjp(ctx, g):
    # d out_j / d x_i = exp(x_i - out_j) for i <= j. The sum over j >= i of g_j exp(x_i - out_j)
    # is taken in log space, positive and negative g apart (PyTorch's formula)
    x, out, dim = ctx.input(0), ctx.out, ctx.dim
    part = [(x + _reverse_logcumsumexp(_signed_log(g, sign) - out, dim)).exp() for sign in (True, False)]
    return (part[0] - part[1],)


def _logcumsumexp_jvp(ctx, t):
    x, out, dim = ctx.input(0), ctx.out, ctx.dim
    part = [((x + _signed_log(t, sign)).logcumsumexp(dim) - out).exp() for sign in (True, False)]
    return part[0] - part[1]


def _logaddexp_impl(x, dim):
    with np.errstate(invalid="ignore"):  # (-inf - -inf inside logaddexp: the result is right)
        return np.logaddexp.accumulate(x.astype(np.float64), axis=dim).astype(x.dtype, copy=False)


LOGCUMSUMEXP = defop("logcumsumexp", infer=_infer("logcumsumexp", floating_only=True),
                     impl=_logaddexp_impl, save=(0, "out"), kind="reduce",
                     vjp=_logcumsumexp_vjp, jvp=_logcumsumexp_jvp,
                     sample=lambda: [(("any",), {"dim": 1}), ((("any", (5, 2, 3)),), {"dim": 0})])
