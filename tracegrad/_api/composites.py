"""Tensor functions PyTorch users reach for that are compositions of ``tracegrad._api.functional``:
NaN and infinity tests, masking, interpolation, triangular parts, rolling and moving dims,
``logaddexp``, norms, ``all`` and ``any``. Their gradients come from the primitives they are
made of, so they trace, compile and differentiate like any other code.

>>> import tracegrad as tg
>>> tg.isnan(tg.tensor([1.0, float("nan")]))
tensor([False,  True])
>>> tg.tril(tg.ones(2, 3))
tensor([[1., 0., 0.],
        [1., 1., 0.]])
"""
from __future__ import annotations

import math

import numpy as np

from ..core.placement import on_inputs_device as _on_inputs_device
from .. import amp as _amp
from ..core import dtypes as _dt
from . import functional as F
from ..core.creation import arange, tensor, zeros
from ..ops import helpers as H
from ..ops.shapes import broadcast_shapes, normalize_dims, wrap_dim, wrap_dim_of_nonscalar
from ..core.tensor import Tensor
from .numpy_names import accept_numpy_names
from ..autograd.graph import named_backward  # (grad_fn names as PyTorch's)

__all__ = ["isnan", "isinf", "isposinf", "isneginf", "isfinite", "nan_to_num", "masked_fill", "all",
           "any", "lerp", "addcmul", "addcdiv", "logaddexp", "frac", "deg2rad", "rad2deg", "sgn",
           "norm", "tril", "triu", "movedim", "moveaxis", "roll", "diag", "diagonal", "trace",
           "hstack", "vstack", "column_stack", "var_mean", "std_mean", "diff", "repeat_interleave",
           "cross"]
_INF = float("inf")


# ----------------------------------------------------------------------------- NaN and infinities
def isnan(x):
    return F.ne(x, x)


def isinf(x):
    if not x.dtype.is_floating_point:
        return F.ne(x, x)  # all False, in the tensor's shape
    return F.eq(F.abs(x), _INF)


def isposinf(x):
    return F.eq(x, _INF) if x.dtype.is_floating_point else F.ne(x, x)


def isneginf(x):
    return F.eq(x, -_INF) if x.dtype.is_floating_point else F.ne(x, x)


def isfinite(x):
    if not x.dtype.is_floating_point:
        return F.eq(x, x)  # all True
    return F.lt(F.abs(x), _INF)  # NaN compares false


def nan_to_num(x, nan=0.0, posinf=None, neginf=None):
    """NaN to ``nan``, +-inf to ``posinf``/``neginf`` (default: the dtype's largest and
    smallest finite values). The gradient flows only where ``x`` is finite, as in PyTorch."""
    if not x.dtype.is_floating_point:
        return F.clone(x)
    info = _dt.finfo(x.dtype)
    out = F.where(isnan(x), float(nan), x)
    out = F.where(F.eq(x, _INF), float(info.max if posinf is None else posinf), out)
    return F.where(F.eq(x, -_INF), float(info.min if neginf is None else neginf), out)


# ----------------------------------------------------------------------------- masking
@named_backward("MaskedFillBackward0")
def masked_fill(x, mask, value):
    """``value`` where ``mask`` (bool, broadcastable to ``x``) is True; ``x``'s dtype and shape.

    >>> import tracegrad as tg
    >>> tg.masked_fill(tg.zeros(3), tg.tensor([True, False, True]), 2.0)
    tensor([2., 0., 2.])
    """
    mask = F.to_tensor(mask)
    if mask.dtype is not F._dt.bool_:
        raise RuntimeError(f"masked_fill only supports boolean masks, but got mask with dtype "
                           f"{mask.dtype.name}")
    if broadcast_shapes(tuple(mask.shape), tuple(x.shape)) != tuple(x.shape):
        raise RuntimeError(f"masked_fill: the mask of shape {list(mask.shape)} does not broadcast "
                           f"to the input's shape {list(x.shape)}")
    if isinstance(value, Tensor) and value.ndim != 0:
        raise RuntimeError(f"masked_fill only supports a 0-dimensional value tensor, but got "
                           f"tensor with {value.ndim} dimension(s).")
    return F.where(mask, F.to_tensor(value, x.dtype), x)


def all(x, dim=None, keepdim=False):  # (torch.all)
    """True where every element (along ``dim``) is nonzero; a bool tensor (uint8 for a uint8
    input, as PyTorch's)."""
    return _like_uint8(F.amin(F.ne(x, 0), () if dim is None else dim, keepdim), x)


def any(x, dim=None, keepdim=False):  # (torch.any)
    """True where some element (along ``dim``) is nonzero; a bool tensor (uint8 for a uint8
    input, as PyTorch's)."""
    return _like_uint8(F.amax(F.ne(x, 0), () if dim is None else dim, keepdim), x)


def _like_uint8(result, x):
    return F.cast(result, _dt.uint8) if x.dtype is _dt.uint8 else result


# ----------------------------------------------------------------------------- arithmetic
def lerp(input, end, weight):
    """``input + weight * (end - input)``, in PyTorch's two-sided form (exact at weight 1)."""
    diff = F.sub(end, input)
    if not isinstance(weight, Tensor):  # a number: one side, 1 - weight in Python's float64
        if abs(weight) < 0.5:
            return F.add(input, F.mul(weight, diff))
        return F.sub(end, F.mul(diff, 1.0 - weight))
    low = F.add(input, F.mul(weight, diff))
    high = F.sub(end, F.mul(diff, F.sub(1, weight)))
    return F.where(F.lt(F.abs(weight), 0.5), low, high)


def addcmul(input, tensor1, tensor2, *, value=1):
    return F.add(input, F.mul(F.mul(tensor1, tensor2), value))


def addcdiv(input, tensor1, tensor2, *, value=1):
    return F.add(input, F.mul(F.div(tensor1, tensor2), value))


def logaddexp(input, other):
    """``log(exp(input) + exp(other))`` without overflow; equal infinities give themselves."""
    a, b = F._promoted(input, other, floating=True)
    out = F.add(F.maximum(a, b), F.log1p(F.exp(F.neg(F.abs(F.sub(a, b))))))
    return F.where(F.logical_and(isinf(a), F.eq(a, b)), a, out)


def frac(x):
    return F.sub(x, F.trunc(x))


def deg2rad(x):
    return F.mul(x, math.pi / 180.0)


def rad2deg(x):
    return F.mul(x, 180.0 / math.pi)


sgn = F.sign


def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    """The vector p-norm over ``dim`` (all elements by default): p = 2 or "fro", 1, inf, -inf,
    0 (the count of nonzeros) or any other number. At a zero vector the gradient is 0 (for p
    >= 1), as in PyTorch, rather than the 0/0 of the formula."""
    check_norm_input("linalg.vector_norm", input)
    x = F.cast(input, F._dt.to_dtype(dtype)) if dtype is not None else input
    return F.write_out(_norm(x, p, dim, keepdim), out)


def check_norm_input(name, x):
    """PyTorch's norms take floating tensors only (an integer or bool one is an error even with
    a floating ``dtype=``)."""
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got {x.dtype.torch_name}")


def _norm(x, p, dim, keepdim):
    dims = normalize_dims(dim, x.ndim)
    a = F.abs(x)
    if p == _INF:
        return F.amax(a, dims, keepdim)
    if p == -_INF:
        return F.amin(a, dims, keepdim)
    if p == 0:
        return F.sum(F.cast(F.ne(x, 0), x.dtype), dims, keepdim)
    if p == 1:
        return F.sum(a, dims, keepdim)
    p = 2.0 if p == "fro" else float(p)
    total = F.sum(F.mul(x, x) if p == 2.0 else F.pow(a, p), dims, keepdim)
    # no root of a zero total: that branch would differentiate to 0 * inf = NaN. (Tested for
    # zero, not for positive, so that a NaN total stays NaN.)
    zero = F.eq(total, 0)
    safe = F.where(zero, 1.0, total)
    return F.where(zero, 0.0, F.sqrt(safe) if p == 2.0 else F.pow(safe, 1.0 / p))


# ----------------------------------------------------------------------------- shapes
@named_backward("TrilBackward0")
def tril(x, diagonal=0):
    """The lower triangle of the last two dims (the rest zero); ``diagonal`` shifts it."""
    return _triangle(x, diagonal, H.tril)


@named_backward("TriuBackward0")
def triu(x, diagonal=0):
    """The upper triangle of the last two dims (the rest zero); ``diagonal`` shifts it."""
    return _triangle(x, diagonal, H.triu)


def _triangle(x, diagonal, part):
    if x.ndim < 2:
        raise RuntimeError(f"tril/triu: input tensor must have at least 2 dimensions, got {x.ndim}")
    return part(x, diagonal)


def movedim(x, source, destination):
    """Moves the dims ``source`` to the positions ``destination``; the others keep their order."""
    src = (source,) if isinstance(source, int) else tuple(source)
    dst = (destination,) if isinstance(destination, int) else tuple(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(src)} dims) "
                           f"should contain the same number of dims as destination ({list(dst)} dims)")
    src = [wrap_dim(d, x.ndim) for d in src]
    dst = [wrap_dim(d, x.ndim) for d in dst]
    if x.ndim == 0:  # (dims 0 and -1 of a 0-d tensor: nothing moves)
        return F.permute(x, [])
    order = [None] * x.ndim
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(d for d in range(x.ndim) if d not in src)
    return F.permute(x, [o if o is not None else next(rest) for o in order])


moveaxis = movedim


@named_backward("RollBackward0")
def roll(x, shifts, dims=None):
    """Shifts elements along ``dims`` with wrap-around (the flattened tensor without dims)."""
    if dims is None:
        return F.reshape(roll(F.flatten(x), shifts, 0), tuple(x.shape))
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    out = x
    for shift, dim in zip(shifts, dims):
        d = wrap_dim(dim, x.ndim)
        n = x.shape[d]
        s = shift % n if n else 0
        if s:
            out = F.cat([F.narrow(out, d, n - s, s), F.narrow(out, d, 0, n - s)], d)
    return out


@_on_inputs_device
def diagonal(x, offset=0, dim1=0, dim2=1):
    """The diagonal ``offset`` above (below, if negative) the main one of dims ``dim1, dim2``,
    as the last dim."""
    d1, d2 = wrap_dim(dim1, x.ndim), wrap_dim(dim2, x.ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    rest = [d for d in range(x.ndim) if d not in (d1, d2)]
    m = F.permute(x, rest + [d1, d2])
    rows, cols = x.shape[d1], x.shape[d2]
    n = max(min(rows, cols - offset) if offset >= 0 else min(rows + offset, cols), 0)
    start = offset if offset >= 0 else -offset * cols
    flat = F.reshape(m, tuple(m.shape[:-2]) + (rows * cols,))
    out = F.index_select(flat, -1, tensor([start + i * (cols + 1) for i in range(n)], dtype=F._dt.int64))
    return _as_diagonal_view(out, x, offset, d1, d2)


def _as_diagonal_view(out, x, offset, d1, d2):
    """Make ``out`` (``x``'s diagonal, computed) a view of ``x``, as PyTorch's ``diagonal`` is:
    writing into it writes into ``x`` (eagerly its array aliases x's memory)."""
    from ..core import views
    from .selection import diagonal_scatter

    if not x._is_traced and out._value.size:
        start = [0] * x.ndim
        start[d1], start[d2] = max(-offset, 0), max(offset, 0)
        v = x._value
        if isinstance(v, np.ndarray):
            corner = v[tuple(slice(k, None) for k in start)]
            layout = np.diagonal(v, offset, d1, d2)  # (read-only: its shape and strides only)
            out._value = np.lib.stride_tricks.as_strided(corner, layout.shape, layout.strides)
        else:  # (a cuda tensor's DeviceArray: the same strides over its device buffer)
            st = v.elem_strides
            rest = [st[d] for d in range(x.ndim) if d not in (d1, d2)]
            out._value = v.view(v.offset + start[d1] * st[d1] + start[d2] * st[d2], out._value.shape,
                                rest + [st[d1] + st[d2]])
    shape = tuple(x.shape)
    return views.make_view(out, x, lambda b: diagonal(b, offset, d1, d2),
                           lambda r: diagonal_scatter(zeros(shape, dtype=r.dtype), r, offset, d1, d2))


_diagonal = diagonal  # (diag's argument takes PyTorch's name, diagonal)


@_on_inputs_device
def diag(x, diagonal=0):
    """A 1-D ``x`` on the ``diagonal`` of a square matrix (zeros elsewhere); a 2-D ``x``'s
    ``diagonal`` as a vector."""
    if x.ndim == 2:
        return F.clone(_diagonal(x, diagonal))  # (a copy, as PyTorch's diag: not a view)
    if x.ndim != 1:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {x.ndim}D")
    n = x.shape[0] + abs(diagonal)
    row, col = F.unsqueeze(arange(n), 1), F.unsqueeze(arange(n), 0)
    on = F.eq(F.sub(col, row), int(diagonal))
    # the element of x on each row (diagonal >= 0) or column (diagonal < 0) of the band
    along = F.cat([x, F.expand(F.to_tensor(0, x.dtype), (abs(diagonal),))]) if diagonal else x
    value = F.unsqueeze(along, 1) if diagonal >= 0 else F.unsqueeze(along, 0)
    return F.where(on, value, F.to_tensor(0, x.dtype))


@_amp.float32
def trace(x):
    if x.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {x.ndim}")
    return F.sum(diagonal(x))


def hstack(tensors):
    tensors = [F.reshape(t, (1,)) if t.ndim == 0 else t for t in tensors]
    return F.cat(tensors, 0 if tensors[0].ndim == 1 else 1)


def vstack(tensors):
    return F.cat([F.reshape(t, (1, -1)) if t.ndim < 2 else t for t in tensors], 0)


def column_stack(tensors):
    return F.cat([F.reshape(t, (-1, 1)) if t.ndim < 2 else t for t in tensors], 1)


def var_mean(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return F.var(x, dim, unbiased, keepdim, correction=correction), F.mean(x, dim, keepdim)


def std_mean(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return F.std(x, dim, unbiased, keepdim, correction=correction), F.mean(x, dim, keepdim)


def diff(x, n=1, dim=-1):
    """``n``-th forward differences along ``dim``."""
    d = wrap_dim_of_nonscalar(dim, x.ndim, "diff expects input to be at least one-dimensional")
    for _ in range(n):
        length = x.shape[d]
        if length == 0:
            break
        x = F.sub(F.narrow(x, d, 1, length - 1), F.narrow(x, d, 0, length - 1))
    return x


@_on_inputs_device
def repeat_interleave(x, repeats=None, dim=None, *, output_size=None):
    """Each element (slice along ``dim``, of the flattened ``x`` without one) ``repeats`` times
    in a row: an int, or a 1-d tensor of per-element counts (its values decide the output's
    shape: a compiled function breaks its graph here, as PyTorch's does). With ``x`` alone, a
    1-d count tensor: the indices ``arange(len(x))`` repeated by it.

    >>> import tracegrad as tg
    >>> tg.repeat_interleave(tg.tensor([[1, 2], [3, 4]]), tg.tensor([1, 2]), dim=0)
    tensor([[1, 2],
            [3, 4],
            [3, 4]])
    """
    if repeats is None:
        counts = _repeat_counts(x, None)
        return tensor(np.repeat(np.arange(len(counts)), counts))
    if dim is None:
        x, d = F.flatten(x), 0
    else:
        d = wrap_dim(dim, x.ndim)
    shape = tuple(x.shape)
    if isinstance(repeats, Tensor) and repeats.numel() == 1 and repeats.ndim <= 1:
        repeats = int(repeats.item())
    if isinstance(repeats, Tensor):
        counts = _repeat_counts(repeats, shape[d], d)
        index = np.repeat(np.arange(shape[d]), counts)
        if output_size is not None and output_size != len(index):
            raise RuntimeError(f"repeat_interleave: output_size={output_size} but the repeats add up "
                               f"to {len(index)}")
        from ..ops import index as I

        return I.index_select(x, d, tensor(index))
    if repeats < 0:
        raise RuntimeError("repeats can not be negative")
    wide = F.expand(F.unsqueeze(x, d + 1), shape[:d + 1] + (repeats,) + shape[d + 1:])
    return F.reshape(wide, shape[:d] + (shape[d] * repeats,) + shape[d + 1:])


def _repeat_counts(repeats, size, dim=0):
    """The per-element counts of a 1-d integer tensor, checked (``size``: the length they
    must have along ``dim``, or None)."""
    if repeats.ndim != 1 or repeats.dtype.category != 1:  # (an integer dtype)
        raise RuntimeError(f"repeat_interleave only accepts a 1-d integer tensor of repeats, got a "
                           f"{repeats.ndim}-d {repeats.dtype} tensor")
    counts = np.asarray(repeats.tolist(), dtype=np.int64)
    if size is not None and len(counts) != size:
        raise RuntimeError(f"repeats must have the same size as input along dim, but got "
                           f"repeats.size(0) = {len(counts)} and input.size({dim}) = {size}")
    if (counts < 0).any():
        raise RuntimeError("repeats can not be negative")
    return counts


def cross(input, other, dim=None):
    """The cross product of 3-vectors along ``dim`` (the first dim of size 3 by default)."""
    a, b = F._promoted(input, other)
    if dim is None:
        dim = next((i for i, s in enumerate(broadcast_shapes(tuple(a.shape), tuple(b.shape))) if s == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    d = wrap_dim(dim, max(a.ndim, b.ndim))
    if a.shape[d - a.ndim] != 3 or b.shape[d - b.ndim] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                           f"{a.shape[d - a.ndim]} and {b.shape[d - b.ndim]}")

    def part(t, k):
        return F.narrow(t, d - t.ndim, k, 1)

    return F.cat([F.sub(F.mul(part(a, 1), part(b, 2)), F.mul(part(a, 2), part(b, 1))),
                  F.sub(F.mul(part(a, 2), part(b, 0)), F.mul(part(a, 0), part(b, 2))),
                  F.sub(F.mul(part(a, 0), part(b, 1)), F.mul(part(a, 1), part(b, 0)))], d)


# (last: every function above with a dim= takes axis= too, as PyTorch's)
accept_numpy_names(globals())
