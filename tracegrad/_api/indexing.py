"""Indexing: ``t[idx]`` and ``t[idx] = v``.

Basic indices (ints, slices, None, Ellipsis) become a ``slice`` primitive plus a reshape, and
the result is a view. Advanced indices (integer tensors, lists, ndarrays, boolean masks) follow
NumPy/PyTorch placement and lower to the ``index`` / ``index_put`` primitives; a mask becomes
its ``nonzero`` indices (a graph break while tracing: the shape depends on the data).

>>> import tracegrad as tg
>>> x = tg.arange(12.).reshape(3, 4)
>>> x[[0, 2], 1:3]
tensor([[ 1.,  2.],
        [ 9., 10.]])
>>> x[x > 9] = 0.
>>> x[2]
tensor([8., 9., 0., 0.])
"""
from __future__ import annotations

import warnings

import numpy as np

from ..core import creation
from ..core import dtypes as _dt
from . import functional as F
from ..ops import index as I
from ..ops import movement as M
from ..ops.shapes import broadcast_shapes, numel
from ..core.tensor import Tensor
from ..core.views import assign, make_view
from ..autograd.graph import named_backward  # (grad_fn names as PyTorch's)


def _is_advanced(ix):
    # (a tuple inside the index tuple is a sequence of indices, as a list: x[(0,), b] as PyTorch)
    return isinstance(ix, (Tensor, np.ndarray, list, tuple)) or (
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
    n_ell = consumed = 0
    for ix in index:
        if ix is Ellipsis:
            n_ell += 1
        elif ix is not None:
            consumed += 1
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if consumed > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    if n_ell:
        i = index.index(Ellipsis)
        index = index[:i] + (slice(None),) * (ndim - consumed) + index[i + 1:]
    else:
        index = index + (slice(None),) * (ndim - consumed)
    return index


def _basic_name(x, index):
    """PyTorch's grad_fn name of ``x[index]``: it applies the items in order and skips full
    slices, so the node is the last other item's: an int a select, a slice a slice, None an
    unsqueeze."""
    for ix in reversed(index if isinstance(index, tuple) else (index,)):
        if ix is None:
            return "UnsqueezeBackward0"
        if isinstance(ix, slice):
            if ix != slice(None):
                return "SliceBackward0"
        elif ix is not Ellipsis:
            return "SelectBackward0"
    return "SliceBackward0" if any(isinstance(ix, slice) for ix in index) else None  # (x[:])


@named_backward(_basic_name)
def basic_getitem(x, index):
    """Ints, slices, None and Ellipsis: a slice primitive then a reshape; always a view."""

    index = _expand_ellipsis(_normalize_index(index), x.ndim)
    x_shape = tuple(x.shape)
    spec, out_shape, dim = [], [], 0
    for ix in index:
        if ix is None:
            out_shape.append(1)
            continue
        size = x_shape[dim]
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
    full = all(s == (0, n, 1) for s, n in zip(spec, x_shape))
    if full:
        sliced = x
    else:
        sliced = M.SLICE(x, index=spec)
        make_view(sliced, x, lambda b: M.SLICE(b, index=spec),
                  lambda r: M.UNSLICE(r, shape=x_shape, index=spec))
    return F.reshape(sliced, out_shape)


def _has_advanced(idx):
    for ix in idx:  # (a loop rather than any(genexpr): this runs on every t[...])
        if _is_advanced(ix):
            return True
    return False


def getitem(x, index):
    idx = _normalize_index(index)
    if _has_advanced(idx):
        return advanced_getitem(x, idx)
    return basic_getitem(x, idx)


def setitem(x, index, value):

    idx = _normalize_index(index)
    if _has_advanced(idx):
        return advanced_setitem(x, idx, value)
    target = basic_getitem(x, idx)
    value = F.to_tensor(value, x.dtype) if not isinstance(value, Tensor) else value
    if value.dtype is not x.dtype:
        value = F.cast(value, x.dtype)
    assign(target, F.expand(value, tuple(target.shape)) if tuple(value.shape) != tuple(target.shape)
           else value)


def gather(x, dim, index):
    return I.gather(x, dim, index)


def nonzero(x, as_tuple=False):
    return I.nonzero(x, as_tuple)


# ----------------------------------------------------------------------------- advanced indexing
def _is_bool_scalar(ix):
    return isinstance(ix, (bool, np.bool_))


def _entry_tensor(ix):
    """An index entry as a Tensor (lists and ndarrays converted), or None for basic entries."""

    if isinstance(ix, Tensor):
        return ix
    if isinstance(ix, tuple):
        ix = list(ix)
    if isinstance(ix, (list, np.ndarray)):
        if isinstance(ix, list) and len(ix) == 0:
            return F.to_tensor(np.zeros(0, np.int64))
        return F.to_tensor(np.asarray(ix)) if isinstance(ix, np.ndarray) else F.to_tensor(ix)
    return None


def _byte_mask(t):
    """A uint8 index tensor is a mask, as in PyTorch, which deprecates it (and warns)."""
    if t is None or t.dtype is not _dt.uint8:
        return t
    # (stacklevel: the user's line, above getitem or setitem, advanced_*item and _split_index)
    warnings.warn("indexing with dtype tracegrad.uint8 is now deprecated, please use a dtype "
                  "tracegrad.bool instead.", UserWarning, stacklevel=5)
    return t != 0


def _dims_consumed(ix, t):
    if t is not None and t.dtype is _dt.bool_:
        return t.ndim
    return 0 if ix is None or _is_bool_scalar(ix) else 1


def _split_index(x, index):
    """Split an index into a basic part (applied as a view) and the advanced entries.

    Returns ``(y, adv)``: ``y`` is ``x`` indexed by the ints/slices/None of ``index`` (with full
    slices where advanced entries are), ``adv`` a list of ``(dim of y, int64 tensor)``.
    Like PyTorch, ints are basic indices (applied first), and a boolean mask over k dims
    becomes k integer index tensors."""

    tensors = list(map(_byte_mask, map(_entry_tensor, index)))  # (no frame between: stacklevel)
    if sum(1 for ix in index if ix is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    consumed = sum(_dims_consumed(ix, t) for ix, t in zip(index, tensors) if ix is not Ellipsis)
    if consumed > x.ndim:
        raise IndexError(f"too many indices for tensor of dimension {x.ndim}")
    basic, adv, xdim, ydim = [], [], 0, 0
    for ix, t in zip(index, tensors):
        if ix is Ellipsis:
            fill = x.ndim - consumed
            basic += [slice(None)] * fill
            xdim, ydim = xdim + fill, ydim + fill
        elif _is_bool_scalar(ix):
            basic.append(None)  # a new dim of size 1, indexed by [0] (True) or [] (False)
            adv.append((ydim, creation.tensor([0] if ix else [], dtype=_dt.int64)))
            ydim += 1
        elif t is not None and t.dtype is _dt.bool_:
            for k, ind in enumerate(_mask_indices(x, t, xdim)):
                adv.append((ydim + k, ind))
            basic += [slice(None)] * t.ndim
            xdim, ydim = xdim + t.ndim, ydim + t.ndim
        elif t is not None:
            if t.dtype not in (_dt.int64, _dt.int32):
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
            adv.append((ydim, t if t.dtype is _dt.int64 else t.long()))
            basic.append(slice(None))
            xdim, ydim = xdim + 1, ydim + 1
        elif ix is None:
            basic.append(None)
            ydim += 1
        elif isinstance(ix, slice):
            basic.append(ix)
            xdim, ydim = xdim + 1, ydim + 1
        else:
            basic.append(ix)  # an int: removes the dim
            xdim += 1
    trivial = all(isinstance(b, slice) and b == slice(None) for b in basic)
    y = x if trivial else basic_getitem(x, tuple(basic))
    return y, adv


def _mask_indices(x, mask, start):
    shape = tuple(x.shape[start:start + mask.ndim])
    for k, (m, s) in enumerate(zip(mask.shape, shape)):
        if m != s:
            raise IndexError(f"The shape of the mask {list(mask.shape)} at index {k} does not match "
                             f"the shape of the indexed tensor {list(x.shape)} at index {start + k}")
    if mask.ndim == 0:
        raise IndexError("a 0-dim boolean mask is only supported as a Python bool")
    return I.nonzero(mask, as_tuple=True)


def _broadcast_indices(adv):
    try:
        return broadcast_shapes(*[tuple(t.shape) for _, t in adv])
    except RuntimeError:
        shapes = ", ".join(str(list(t.shape)) for _, t in adv)
        raise IndexError(f"shape mismatch: indexing tensors could not be broadcast together with "
                         f"shapes {shapes}") from None


def _check_adv_bounds(y, adv):
    """``adv`` with each index checked against its dim (negatives count from the end): several
    index tensors are merged into one linear index, where a bad one could land on another row.
    Index tensors on the CPU go to a cuda ``y``'s device (PyTorch indexes a cuda tensor with them)."""
    dev = y.device
    return [(d, I.check_index(t if t.device == dev else t.to(dev), y.shape[d], d, negative=True)) for d, t in adv]


def _flatten_advanced(y, adv):
    """Move the advanced dims of ``y`` to the front and merge them into one dim; return the
    merged tensor, the linear index (shape B) and the permutation used."""

    dims = [d for d, _ in adv]
    rest = [d for d in range(y.ndim) if d not in dims]
    perm = dims + rest
    yp = F.permute(y, perm)
    sizes = [y.shape[d] for d in dims]
    flat = F.reshape(yp, [numel(sizes)] + [y.shape[d] for d in rest])
    lin, stride = None, 1
    for (d, t), n in reversed(list(zip(adv, sizes))):
        t = F.where(F.lt(t, 0), F.add(t, n), t)  # negative indices count from the end
        term = F.mul(t, stride) if stride != 1 else t
        lin = term if lin is None else F.add(lin, term)
        stride *= n
    return flat, lin, perm


def _adjacent(adv):
    dims = [d for d, _ in adv]
    return dims == list(range(dims[0], dims[0] + len(dims)))


def _place(out, nb, first, adjacent):
    """``out`` has the broadcast index dims (``nb`` of them) first; move them to ``first`` when the
    advanced indices were adjacent (NumPy/PyTorch placement)."""

    if not adjacent or first == 0:
        return out
    rest = list(range(nb, out.ndim))
    perm = rest[:first] + list(range(nb)) + rest[first:]
    return F.permute(out, perm)


def advanced_getitem(x, index):
    """``x[index]`` where ``index`` holds integer tensors/lists/ndarrays or boolean masks."""
    y, adv = _split_index(x, index)
    bshape = _broadcast_indices(adv)
    adv = _check_adv_bounds(y, adv)
    if len(adv) == 1:
        d, t = adv[0]
        return I.INDEX(y, t, dim=d)
    flat, lin, _ = _flatten_advanced(y, adv)
    out = I.INDEX(flat, lin.expand(bshape) if tuple(lin.shape) != bshape else lin, dim=0)
    return _place(out, len(bshape), adv[0][0], _adjacent(adv))


def advanced_setitem(x, index, value):
    """``x[index] = value`` in place (version bump and autograd rebase via views.assign)."""

    y, adv = _split_index(x, index)
    bshape = _broadcast_indices(adv)
    adv = _check_adv_bounds(y, adv)
    value = F.to_tensor(value, x.dtype) if not isinstance(value, Tensor) else F.cast(value, x.dtype)
    if value.ndim == 0 and value.device != x.device:  # (a number: broadcast on x's device, not the CPU)
        value = value.to(x.device)
    first, adjacent = adv[0][0], _adjacent(adv)
    if len(adv) == 1:
        d, t = adv[0]
        target = I._taken_shape(y.shape, t.shape, d)
        value = _broadcast_value(value, target)
        return assign(y, I.INDEX_PUT(y, t, value, dim=d))
    flat, lin, perm = _flatten_advanced(y, adv)
    rest_shape = tuple(flat.shape[1:])
    nb = len(bshape)
    # the shape x[index] has, then the value arranged as (B..., rest...) and B flattened
    placed = _place_shape(bshape, rest_shape, first, adjacent)
    value = _broadcast_value(value, placed)
    if adjacent and first:
        rest = list(range(value.ndim))
        b_pos = rest[first:first + nb]
        others = rest[:first] + rest[first + nb:]
        value = F.permute(value, b_pos + others)
    value = F.reshape(value, (numel(bshape),) + rest_shape)
    lin = F.reshape(lin.expand(bshape) if tuple(lin.shape) != bshape else lin, (numel(bshape),))
    new_flat = I.INDEX_PUT(flat, lin, value, dim=0)
    new_yp = F.reshape(new_flat, [y.shape[d] for d in perm])
    inv = [perm.index(i) for i in range(len(perm))]
    return assign(y, F.permute(new_yp, inv))


def _place_shape(bshape, rest_shape, first, adjacent):
    if adjacent:
        return tuple(rest_shape[:first]) + tuple(bshape) + tuple(rest_shape[first:])
    return tuple(bshape) + tuple(rest_shape)


def _broadcast_value(value, target):

    target = tuple(target)
    if tuple(value.shape) == target:
        return value
    # PyTorch drops leading size-1 dims of the value before broadcasting
    shape = tuple(value.shape)
    while len(shape) > len(target) and shape[0] == 1:
        shape = shape[1:]
    try:
        if broadcast_shapes(shape, target) != target:
            raise RuntimeError
    except RuntimeError:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(value.shape)} cannot be "
                           f"broadcast to indexing result of shape {list(target)}") from None
    return F.expand(F.reshape(value, shape), target)
