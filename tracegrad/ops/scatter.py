"""Scatter primitives beyond ``scatter_add`` (ops/index.py): ``scatter`` (write ``src`` at the
positions ``index`` names along ``dim``; with repeated positions the last write wins, which
PyTorch leaves unspecified) and ``scatter_reduce`` (combine by ``prod``, ``amax`` or ``amin``,
the target's own value included), and the public functions built on them: ``scatter`` (a
tensor or a number; PyTorch's older ``reduce="add" | "multiply"``) and ``scatter_reduce``
(``sum prod mean amax amin``, ``include_self``).

Both primitives use gather's geometry: ``out[index[i][j]][j] (op)= src[i][j]`` for ``dim`` 0;
``index`` may be smaller than ``src``.

>>> import tracegrad as tg
>>> x = tg.zeros(2, 3)
>>> x.scatter(1, tg.tensor([[2], [0]]), tg.tensor([[5.0], [7.0]]))
tensor([[0., 0., 5.],
        [7., 0., 0.]])
>>> tg.tensor([1.0, 1.0]).scatter_reduce(0, tg.tensor([0, 0, 1]), tg.tensor([3.0, 5.0, 2.0]), "amax")
tensor([5., 2.])
"""
from __future__ import annotations

import numpy as np

from .index import GATHER, SCATTER_ADD, _as_index, _check_bounds, _grid, _infer_scatter, _pad_to, _zeros
from ..core.tensor import Tensor
from ..core.views import _inplace_source, assign
from . import helpers as H
from .movement import SLICE
from .registry import defop
from .shapes import wrap_dim

_REDUCE_UFUNCS = {"prod": np.multiply, "amax": np.maximum, "amin": np.minimum}


def _used(src, idx):
    """The part of ``src`` that ``idx`` addresses (its leading corner)."""
    return src[tuple(slice(0, s) for s in idx.shape)]


def _scatter_impl(x, idx, src, dim, reduce=None):
    out = np.array(x, copy=True)
    if x.ndim == 0:
        _check_bounds(idx, 1, 0, allow_negative=False, error=RuntimeError)
        values = _used(src, idx).reshape(-1)
        for v in values:  # (in order: the last write wins, and reductions fold in sequence)
            out = np.asarray(v if reduce is None else _REDUCE_UFUNCS[reduce](out, v), dtype=x.dtype)
        return out
    _check_bounds(idx, x.shape[dim], dim, allow_negative=False, error=RuntimeError)
    if reduce is None:
        out[_grid(idx, dim)] = _used(src, idx)
    else:
        _REDUCE_UFUNCS[reduce].at(out, _grid(idx, dim), _used(src, idx))
    return out


def _src_used(ctx):
    src, idx = ctx.input(2), ctx.input(1)
    if tuple(src.shape) == tuple(idx.shape):
        return src
    return SLICE(src, index=tuple((0, s, 1) for s in idx.shape))


# ----------------------------------------------------------------------------- scatter
def _scatter_vjp(ctx, g):
    idx = ctx.input(1)
    gx = SCATTER(g, idx, _zeros(tuple(idx.shape), g.dtype), dim=ctx.dim) if ctx.needs_input_grad[0] else None
    gs = _pad_to(GATHER(g, idx, dim=ctx.dim), ctx.shapes[2]) if ctx.needs_input_grad[2] else None
    return gx, None, gs


def _scatter_jvp(ctx, tx, _, ts):
    idx = ctx.input(1)
    tx = tx if tx is not None else _zeros(ctx.shapes[0], ctx.dtypes[0])
    ts = ts if ts is not None else _zeros(ctx.shapes[2], ctx.dtypes[2])
    return SCATTER(tx, idx, ts, dim=ctx.dim)


SCATTER = defop(
    "scatter", infer=_infer_scatter("scatter"), impl=_scatter_impl,
    save=(1,), nondiff_inputs=(1,), kind="index", version=2, vjp=_scatter_vjp, jvp=_scatter_jvp,
    # (distinct positions: a position written twice has no derivative for the overwritten value;
    # src as large as index: PyTorch's scatter backward fails for a larger src)
    sample=lambda: [(("any", ("unique_index", (2, 1), 3), ("any", (2, 1))), {"dim": 0}),
                    ((("any", (3, 5)), ("unique_index", (1, 4), 5), ("any", (1, 4))), {"dim": 1})])


# ----------------------------------------------------------------------------- scatter_reduce
def _local_derivatives(ctx):
    """``(d out / d x, d out[index] / d src)`` at every element, from which both the VJP and
    the JVP follow (PyTorch's scatter_reduce_backward): the extremes share the derivative
    among ties; a product's is the product of the others, also through zeros."""
    x, idx, out, dim, reduce = ctx.input(0), ctx.input(1), ctx.out, ctx.dim, ctx.reduce
    src = _src_used(ctx)
    if reduce in ("amax", "amin"):
        self_is = (x == out).to(x.dtype)
        src_is = (src == GATHER(out, idx, dim=dim)).to(x.dtype)
        ties = SCATTER_ADD(self_is, idx, src_is, dim=dim)
        return self_is / ties, src_is / GATHER(ties, idx, dim=dim)
    masked_x = H.where(x == 0, 1.0, x)
    d_self = SCATTER_REDUCE(masked_x, idx, src, dim=dim, reduce="prod") / masked_x
    src_zero = src == 0
    zeros_there = GATHER(SCATTER_ADD(_zeros(ctx.shapes[0], x.dtype), idx, src_zero.to(x.dtype), dim=dim),
                         idx, dim=dim)
    single_zero = src_zero & (zeros_there == 1)
    without_zero = SCATTER_REDUCE(x, idx, H.where(single_zero, 1.0, src), dim=dim, reduce="prod")
    d_src = H.where(single_zero, GATHER(without_zero, idx, dim=dim),
                  GATHER(out, idx, dim=dim) / H.where(src_zero, 1.0, src))
    return d_self, d_src


def _scatter_reduce_vjp(ctx, g):
    d_self, d_src = _local_derivatives(ctx)
    gs = _pad_to(GATHER(g, ctx.input(1), dim=ctx.dim) * d_src, ctx.shapes[2]) if ctx.needs_input_grad[2] else None
    return (g * d_self if ctx.needs_input_grad[0] else None), None, gs


def _scatter_reduce_jvp(ctx, tx, _, ts):
    d_self, d_src = _local_derivatives(ctx)
    out = tx * d_self if tx is not None else _zeros(ctx.shapes[0], ctx.dtypes[0])
    if ts is not None:
        idx = ctx.input(1)
        used = ts if tuple(ts.shape) == tuple(idx.shape) else ts[tuple(slice(0, s) for s in idx.shape)]
        out = SCATTER_ADD(out, idx, used * d_src, dim=ctx.dim)
    return out


def _infer_scatter_reduce(x, idx, src, dim, reduce):
    if reduce not in _REDUCE_UFUNCS:
        raise RuntimeError(f"scatter_reduce primitive: reduce must be one of {sorted(_REDUCE_UFUNCS)}, "
                           f"got {reduce!r}")
    return _infer_scatter("scatter_reduce")(x, idx, src, dim)


SCATTER_REDUCE = defop(
    "scatter_reduce", infer=_infer_scatter_reduce, impl=_scatter_impl, save=(0, 1, 2, "out"),
    nondiff_inputs=(1,), kind="index", version=2, vjp=_scatter_reduce_vjp, jvp=_scatter_reduce_jvp,
    sample=lambda: [(("any", ("index", (4, 3), 2), ("any", (4, 3))), {"dim": 0, "reduce": r})
                    for r in ("prod", "amax", "amin")]
    + [((("any", (3, 5)), ("index", (3, 4), 5), ("with_zeros", (3, 4))), {"dim": 1, "reduce": "prod"})])


# ----------------------------------------------------------------------------- public functions
def _operands(x, dim, index, src, what):
    index = _as_index(index, what)
    if not isinstance(src, Tensor):  # (a number: written everywhere index points)
        src = H.expand(H.to_tensor(src, x.dtype), tuple(index.shape))
    elif src.dtype is not x.dtype:
        raise RuntimeError(f"{what}(): Expected self.dtype to be equal to src.dtype, got {x.dtype} "
                           f"and {src.dtype}")
    return index, src, wrap_dim(dim, x.ndim)  # (dim checked on 0-d too)


def scatter(input, dim, index, src=None, *, value=None, reduce=None):
    """``input`` with ``src`` (a tensor, or a number: ``value``) written at ``index`` along
    ``dim``; ``reduce="add" | "multiply"`` combines instead (PyTorch's older form of
    ``scatter_reduce``)."""
    src = value if src is None else src
    if src is None:
        raise TypeError("scatter() missing the values to write: src or value")
    index, src, dim = _operands(input, dim, index, src, "scatter")
    if reduce is None:
        return SCATTER(input, index, src, dim=dim)
    if reduce == "add":
        return SCATTER_ADD(input, index, src, dim=dim)
    if reduce == "multiply":
        return SCATTER_REDUCE(input, index, src, dim=dim, reduce="prod")
    raise RuntimeError(f"reduce argument must be either add or multiply, got {reduce}")


_IDENTITY = {"prod": 1.0, "amax": -np.inf, "amin": np.inf, "sum": 0.0, "mean": 0.0}


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """``input`` with each element of ``src`` combined into the position ``index`` names along
    ``dim``: ``reduce`` is ``"sum" "prod" "mean" "amax" "amin"``; ``include_self=False`` leaves
    the targets' own values out (positions no index names keep them)."""
    index, src, dim = _operands(input, dim, index, src, "scatter_reduce")
    if reduce not in _IDENTITY:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    base = input
    if not include_self:  # the targets start from the reduction's identity instead
        written = SCATTER(_zeros(tuple(input.shape), input.dtype), index,
                          H.expand(H.to_tensor(1, input.dtype), tuple(index.shape)), dim=dim) != 0
        base = H.where(written, _identity(reduce, input.dtype), input)
    if reduce in ("sum", "mean"):
        out = SCATTER_ADD(base, index, src, dim=dim)
        if reduce == "sum":
            return out
        ones = H.expand(H.to_tensor(1, input.dtype), tuple(index.shape))
        count = SCATTER_ADD(_zeros(tuple(input.shape), input.dtype), index, ones, dim=dim)
        count = count + 1 if include_self else H.where(count == 0, 1, count)
        return H.floor_divide(out, count) if not input.dtype.is_floating_point else out / count
    return SCATTER_REDUCE(base, index, src, dim=dim, reduce=reduce)


def _identity(reduce, dtype):
    """The value a target starts from when ``include_self=False``, in ``dtype``'s kind (a float
    would promote an integer input)."""
    value = _IDENTITY[reduce]
    if dtype.is_floating_point:
        return value
    if dtype.np.kind == "b":
        return bool(value > 0) if np.isinf(value) else bool(value)
    info = np.iinfo(dtype.np)
    return int(info.min if value == -np.inf else info.max if value == np.inf else value)


def scatter_(input, dim, index, src=None, *, value=None, reduce=None):
    """In place ``scatter``."""
    base = _inplace_source(input, *[s for s in (src, value) if s is not None])
    return assign(input, scatter(base, dim, index, src, value=value, reduce=reduce))


def scatter_reduce_(input, dim, index, src, reduce, *, include_self=True):
    """In place ``scatter_reduce``."""
    return assign(input, scatter_reduce(_inplace_source(input, src), dim, index, src, reduce,
                                        include_self=include_self))
