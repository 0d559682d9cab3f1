"""Reduction primitives: sum, prod, amax, amin (ties share the gradient evenly), argmax, argmin.

``dim`` is always a normalised tuple of non-negative ints in the IR; the public functions in
``tracegrad._api.functional`` accept None, an int or a tuple.
"""
from __future__ import annotations

import numpy as np

from ..core import creation
from ..core import dtypes as _dt
from .registry import defop
from .shapes import reduced_shape


def _check_dims(x, dim):
    if not dim:
        return
    n = max(x.ndim if hasattr(x, "ndim") else len(x.shape), 1)
    for d in dim:
        if not 0 <= d < n:
            raise IndexError(f"reduction dim {d} out of range for shape {list(x.shape)}")


def _infer_reduce(x, dim, keepdim):
    _check_dims(x, dim)
    dtype = _dt.int64 if x.dtype.category < 2 else x.dtype
    return reduced_shape(tuple(x.shape), dim, keepdim), dtype


def _keep(g, shape, dim, keepdim):
    """Re-insert reduced dims as size 1 so ``g`` broadcasts against the input."""
    if keepdim or not dim:
        return g
    return g.reshape(reduced_shape(shape, dim, True))


def _sum_vjp(ctx, g):
    shape = ctx.shapes[0]
    return (_keep(g, shape, ctx.dim, ctx.keepdim).expand(shape),)


def _sum_samples():
    return [(("any",), {"dim": (1,), "keepdim": False}), (("any",), {"dim": (0, 1), "keepdim": True}),
            (("any",), {"dim": (), "keepdim": False})]


SUM = defop("sum", infer=_infer_reduce, save=(), kind="reduce",
            # (np.sum of an ndarray is this call, after a Python-level argument shuffle)
            impl=lambda x, dim, keepdim: np.add.reduce(x, axis=dim, keepdims=keepdim),
            vjp=_sum_vjp, jvp=lambda ctx, t: t.sum(ctx.dim, keepdim=ctx.keepdim),
            c="sum", sample=_sum_samples)


def _prod_vjp(ctx, g):
    """d prod / dx_i is the product of the other elements (see ``_prod_of_others``)."""
    shape, dim = ctx.shapes[0], ctx.dim
    g = _keep(g, shape, dim, ctx.keepdim)
    if not dim:
        return (g,)
    return (g * _prod_of_others(ctx.input(0), shape, dim),)


def _prod_jvp(ctx, t):
    if not ctx.dim:
        return t
    return (t * _prod_of_others(ctx.input(0), ctx.shapes[0], ctx.dim)).sum(ctx.dim, keepdim=ctx.keepdim)


def _prod_of_others(x, shape, dim):
    """For each element, the product of the other elements of its reduction group: a product
    with x_i replaced by 1 (no division, so zeros are handled; O(n^2) in the reduced size)."""
    others = [d for d in range(len(shape)) if d not in dim]
    perm = others + list(dim)
    flat = x.permute(perm).reshape([shape[d] for d in others] + [-1])
    n = flat.shape[-1]
    eye = creation.eye(n, dtype=_dt.bool_)
    rows = flat.unsqueeze(-2).expand(*flat.shape[:-1], n, n)
    others_prod = rows.where(eye.logical_not(), 1.0).prod((flat.ndim,), keepdim=False)
    inv = [perm.index(i) for i in range(len(shape))]
    return others_prod.reshape([shape[d] for d in perm]).permute(inv)


PROD = defop("prod", infer=_infer_reduce, save=(0,), kind="reduce",
             impl=lambda x, dim, keepdim: np.prod(x, axis=dim, keepdims=keepdim),
             vjp=_prod_vjp, jvp=_prod_jvp, c="prod", version=2,  # 2: JVP rule added
             sample=lambda: [(("any",), {"dim": (1,), "keepdim": False}),
                             (("any",), {"dim": (0, 1), "keepdim": True})])


def _extreme_vjp(ctx, g):
    # ties share the gradient evenly (PyTorch's amax/amin and max()/min() without dim)
    x, out = ctx.input(0), ctx.out
    shape, dim, keepdim = ctx.shapes[0], ctx.dim, ctx.keepdim
    mask = (x == _keep(out, shape, dim, keepdim)).to(g.dtype)
    count = mask.sum(dim, keepdim=True)
    return (_keep(g, shape, dim, keepdim) * mask / count,)


def _extreme_jvp(ctx, t):
    x, out = ctx.input(0), ctx.out
    shape, dim, keepdim = ctx.shapes[0], ctx.dim, ctx.keepdim
    mask = (x == _keep(out, shape, dim, keepdim)).to(t.dtype)
    return (t * mask).sum(dim, keepdim=keepdim) / mask.sum(dim, keepdim=keepdim)


def _infer_extreme(x, dim, keepdim):
    _check_dims(x, dim)
    for d in dim:
        if x.shape[d] == 0:
            raise IndexError(
                f"max(): Expected reduction dim {d} to have non-zero size (shape {list(x.shape)})"
            )
    if not dim and 0 in tuple(x.shape):
        raise RuntimeError("max(): Expected reduction dim to be specified for input.numel() == 0.")
    return reduced_shape(tuple(x.shape), dim, keepdim), x.dtype


AMAX = defop("amax", infer=_infer_extreme, save=(0, "out"), kind="reduce",
             impl=lambda x, dim, keepdim: np.amax(x, axis=dim, keepdims=keepdim),
             vjp=_extreme_vjp, jvp=_extreme_jvp, c="max",
             sample=lambda: [(("any",), {"dim": (1,), "keepdim": False}),
                             (("any",), {"dim": (0, 1), "keepdim": False})])
AMIN = defop("amin", infer=_infer_extreme, save=(0, "out"), kind="reduce",
             impl=lambda x, dim, keepdim: np.amin(x, axis=dim, keepdims=keepdim),
             vjp=_extreme_vjp, jvp=_extreme_jvp, c="min",
             sample=lambda: [(("any",), {"dim": (0,), "keepdim": True})])


def _infer_arg(x, dim, keepdim):
    shape = tuple(x.shape)
    if dim is None:
        if len(shape) and 0 in shape:
            raise RuntimeError("argmax(): Expected reduction dim to be specified for input.numel() == 0.")
        return ((1,) * len(shape) if keepdim else ()), _dt.int64
    if shape and shape[dim] == 0:
        raise IndexError(f"argmax(): Expected reduction dim {dim} to have non-zero size.")
    return reduced_shape(shape, (dim,), keepdim), _dt.int64


def _arg_impl(fn):
    def impl(x, dim, keepdim):
        if dim is None:
            r = fn(x.reshape(-1)) if x.ndim else np.int64(0)
            return np.asarray(r, dtype=np.int64).reshape((1,) * x.ndim if keepdim else ())
        return np.asarray(fn(x, axis=dim, keepdims=keepdim), dtype=np.int64)

    return impl


def _arg_samples():
    return [(("any",), {"dim": 1, "keepdim": False}), (("any",), {"dim": None, "keepdim": True})]


ARGMAX = defop("argmax", infer=_infer_arg, impl=_arg_impl(np.argmax), differentiable=False,
               kind="reduce", c="argmax", sample=_arg_samples)
ARGMIN = defop("argmin", infer=_infer_arg, impl=_arg_impl(np.argmin), differentiable=False,
               kind="reduce", c="argmin", sample=_arg_samples)
