"""Indexing: ``t[idx]`` and ``t[idx] = v``.

Basic indices (ints, slices, None, Ellipsis) become a ``slice`` primitive plus a reshape, and
the result is a view. Advanced indices (integer tensors, boolean masks) are handled in
``tracegrad.ops.index``.
"""
from __future__ import annotations

import numpy as np

from .tensor import Tensor


def _is_advanced(ix):
    return isinstance(ix, (Tensor, np.ndarray, list)) or (
        isinstance(ix, (bool, np.bool_)))


def _normalize_index(index):
    if not isinstance(index, tuple):
        index = (index,)
    return index


def slice_dim(x, dim, start, stop, step):
    """x narrowed to start:stop:step along dim (a view)."""
    index = [slice(None)] * x.ndim
    index[dim] = slice(start, stop, step)
    return basic_getitem(x, tuple(index))


def _expand_ellipsis(index, ndim):
    n_ell = sum(1 for ix in index if ix is Ellipsis)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    consumed = sum(1 for ix in index if ix is not None and ix is not Ellipsis)
    if consumed > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    if n_ell:
        i = index.index(Ellipsis)
        index = index[:i] + (slice(None),) * (ndim - consumed) + index[i + 1:]
    else:
        index = index + (slice(None),) * (ndim - consumed)
    return index


def basic_getitem(x, index):
    """Ints, slices, None and Ellipsis: a slice primitive then a reshape; always a view."""
    from . import functional as F
    from .ops import movement as M
    from .views import make_view

    index = _expand_ellipsis(_normalize_index(index), x.ndim)
    spec, out_shape, dim = [], [], 0
    for ix in index:
        if ix is None:
            out_shape.append(1)
            continue
        size = x.shape[dim]
        if isinstance(ix, slice):
            if ix.step is not None and ix.step <= 0:
                raise ValueError("step must be greater than zero")
            start, stop, step = ix.indices(size)
            stop = max(stop, start)
            spec.append((start, stop, step))
            out_shape.append(max(0, (stop - start + step - 1) // step))
        else:
            i = int(ix)
            if not -size <= i < size:
                raise IndexError(
                    f"index {i} is out of bounds for dimension {dim} with size {size}"
                )
            i %= size
            spec.append((i, i + 1, 1))
        dim += 1
    spec = tuple(spec)
    full = all(s == (0, n, 1) for s, n in zip(spec, x.shape))
    if full:
        sliced = x
    else:
        sliced = M.SLICE(x, index=spec)
        src_shape = tuple(x.shape)
        make_view(sliced, x, lambda b: M.SLICE(b, index=spec),
                  lambda r: M.UNSLICE(r, shape=src_shape, index=spec))
    return F.reshape(sliced, out_shape)


def getitem(x, index):
    idx = _normalize_index(index)
    if any(_is_advanced(ix) for ix in idx):
        from .ops import index as I

        return I.advanced_getitem(x, idx)
    return basic_getitem(x, idx)


def setitem(x, index, value):
    from . import functional as F
    from .views import assign

    idx = _normalize_index(index)
    if any(_is_advanced(ix) for ix in idx):
        from .ops import index as I

        return I.advanced_setitem(x, idx, value)
    target = basic_getitem(x, idx)
    value = F.to_tensor(value, x.dtype) if not isinstance(value, Tensor) else value
    if value.dtype is not x.dtype:
        value = F.cast(value, x.dtype)
    assign(target, F.expand(value, tuple(target.shape)) if tuple(value.shape) != tuple(target.shape)
           else value)


def gather(x, dim, index):
    from .ops import index as I

    return I.gather(x, dim, index)


def nonzero(x, as_tuple=False):
    from .ops import index as I

    return I.nonzero(x, as_tuple)
