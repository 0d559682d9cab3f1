"""PyTorch's functions that read or write chosen parts of a tensor: ``unfold`` (sliding
windows), ``masked_select``, ``masked_scatter``, ``index_copy``, ``index_fill``,
``index_put`` (with ``accumulate``), ``fill_diagonal_``, ``diagonal_scatter``,
``select_scatter``, ``slice_scatter``; and the data-dependent ``unique``,
``unique_consecutive``, ``bincount``, with ``histc``. All differentiable ones are composed of
tracegrad's primitives. ``masked_select``, ``unique``, ``unique_consecutive`` and ``bincount``
return shapes that depend on the data: a compiled function breaks its graph for them (with a
warning), as under ``torch.compile``.

>>> import tracegrad as tg
>>> tg.arange(5.0).unfold(0, 2, 2)
tensor([[0., 1.],
        [2., 3.]])
>>> tg.tensor([1.0, 2.0, 3.0]).index_fill(0, tg.tensor([0, 2]), -1.0)
tensor([-1.,  2., -1.])
"""
from __future__ import annotations

import builtins
from collections import namedtuple

import numpy as np

from ..core.placement import on_host as _on_host, on_inputs_device as _on_inputs_device
from . import composites as C
from ..core import dtypes as _dt
from . import functional as F
from . import rearrange as LY
from ..core.creation import arange, tensor, zeros
from ..ops import index as I
from ..ops.shapes import wrap_dim
from ..core.tensor import Tensor
from .numpy_names import accept_numpy_names

__all__ = ["masked_select", "masked_scatter", "index_copy", "index_fill", "index_put", "diagonal_scatter",
           "select_scatter", "slice_scatter", "unique", "unique_consecutive", "bincount", "histc", "aminmax"]
METHODS_ONLY = ["unfold", "fill_diagonal_"]  # (torch.Tensor methods with no torch.* function)

aminmax_result = namedtuple("aminmax", ["min", "max"])


# ----------------------------------------------------------------------------- windows
@_on_inputs_device
def unfold(input, dimension, size, step):
    """All windows of ``size`` elements along ``dimension``, ``step`` apart: that dim becomes
    the window count and a new last dim of ``size`` holds each window (``Tensor.unfold``)."""
    d = wrap_dim(dimension, max(input.ndim, 1))
    length = input.shape[d] if input.ndim else 1
    if size > length:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {length} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if input.ndim == 0:
        return F.reshape(input, (1,))
    count = (length - size) // step + 1
    starts = F.reshape(arange(count) * step, (count, 1))
    windows = starts + F.reshape(arange(size), (1, size))  # [window, offset]
    taken = I.INDEX(input, windows, dim=d)  # (the index's two dims replace dimension d)
    return C.movedim(taken, d + 1, -1) if d + 1 != taken.ndim - 1 else taken


# ----------------------------------------------------------------------------- masks
def masked_select(input, mask):
    """The elements of ``input`` where ``mask`` (broadcast together) is True, as a 1-dim tensor."""
    if mask.dtype is not _dt.bool_:
        raise RuntimeError(f"masked_select: expected BoolTensor for mask, got {mask.dtype}")
    shape = tuple(LY.broadcast_shapes(tuple(input.shape), tuple(mask.shape)))
    return F.expand(input, shape)[F.expand(mask, shape)]


def masked_scatter(input, mask, source):
    """``input`` with the positions where ``mask`` is True (in row-major order) taking the
    consecutive elements of ``source``."""
    if mask.dtype is not _dt.bool_:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype {mask.dtype}")
    shape = tuple(input.shape)
    flat_mask = F.reshape(F.expand(mask, shape), (-1,))
    if not flat_mask._is_traced and int(flat_mask.sum()) > source.numel():
        raise RuntimeError(f"masked_scatter: expected source to have at least {int(flat_mask.sum())} "
                           f"elements (the number of True values in mask), got {source.numel()}")
    # the k-th True position takes source's k-th element: a gather by the running count
    order = F.clamp(F.cumsum(flat_mask, 0) - 1, 0, max(source.numel() - 1, 0))
    taken = F.index_select(F.reshape(source, (-1,)), 0, order)
    return F.where(F.expand(mask, shape), F.reshape(taken, shape), input)


# ----------------------------------------------------------------------------- index along a dim
def _along(input, dim, index, what):
    index = I._vector_index(index, what)
    return index, wrap_dim(dim, max(input.ndim, 1))


def index_copy(input, dim, index, source):
    """``input`` with the slices ``index`` names along ``dim`` replaced by ``source``'s."""
    index, d = _along(input, dim, index, "index_copy")
    index = I.check_index(index, input.shape[d] if input.ndim else 1, d, "index_copy")  # (no negative)
    if input.ndim == 0:
        return F.reshape(I.INDEX_PUT(F.reshape(input, (1,)), index, F.reshape(source, (1,)), dim=0), ())
    return I.INDEX_PUT(input, index, source, dim=d)


def index_fill(input, dim, index, value):
    """``input`` with the slices ``index`` names along ``dim`` set to ``value`` (a number or a
    0-dim tensor)."""
    index, d = _along(input, dim, index, "index_fill")
    if input.ndim == 0:
        return F.reshape(index_fill(F.reshape(input, (1,)), 0, index, value), ())
    shape = list(input.shape)
    shape[d] = index.numel()
    value = value if isinstance(value, Tensor) else F.to_tensor(value, input.dtype)
    return I.INDEX_PUT(input, index, F.expand(F.cast(value, input.dtype), tuple(shape)), dim=d)


def index_put(input, indices, values, accumulate=False):
    """``input`` with ``input[indices] = values`` (``indices``: a tuple of index tensors for the
    leading dims, broadcast together); ``accumulate=True`` adds instead, repeated positions
    included."""
    indices = tuple(indices)
    if not accumulate:
        out = F.clone(input)
        out[indices] = values
        return out
    if any(i.dtype is _dt.bool_ for i in indices):
        indices = tuple(t for i in indices for t in (i.nonzero(as_tuple=True) if i.dtype is _dt.bool_ else (i,)))
    k = len(indices)
    lead, rest = tuple(input.shape[:k]), tuple(input.shape[k:])
    # (checked before the flat position wraps them: negatives count from the end, as x[idx])
    idx = LY.broadcast_tensors(*[I.check_index(I._as_index(i, "index_put"), size, d, negative=True)
                                 for d, (i, size) in enumerate(zip(indices, lead))])
    flat = idx[0] * 0
    for i, size in zip(idx, lead):  # (row-major position among the indexed dims; negatives wrap)
        flat = flat * size + F.remainder(i, size)
    flat = F.reshape(flat, (-1,))
    values = values if isinstance(values, Tensor) else F.to_tensor(values, input.dtype)
    values = F.expand(F.cast(values, input.dtype), tuple(idx[0].shape) + rest)
    merged = F.reshape(input, (int(np.prod(lead, dtype=np.int64)),) + rest)
    summed = I.INDEX_ADD(merged, flat, F.reshape(values, (flat.numel(),) + rest), dim=0)
    return F.reshape(summed, tuple(input.shape))


# ----------------------------------------------------------------------------- writing views
def _written(input, view_of, src):
    """A copy of ``input`` with the part ``view_of(copy)`` selects replaced by ``src``."""
    out = F.clone(input)
    view_of(out).copy_(src)
    return out


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """``input`` with its diagonal (``offset``, over ``dim1`` and ``dim2``) replaced by ``src``
    (shaped as ``input.diagonal(offset, dim1, dim2)``: the other dims, then the diagonal)."""
    d1, d2 = wrap_dim(dim1, input.ndim), wrap_dim(dim2, input.ndim)
    moved = C.movedim(input, (d1, d2), (-2, -1))
    rows, cols = moved.shape[-2:]
    length = builtins.max(0, builtins.min(rows + builtins.min(offset, 0), cols - builtins.max(offset, 0)))
    out = F.clone(moved)
    out[..., arange(length) + builtins.max(-offset, 0), arange(length) + builtins.max(offset, 0)] = src
    return C.movedim(out, (-2, -1), (d1, d2))


def select_scatter(input, src, dim, index):
    """``input`` with ``input.select(dim, index)`` replaced by ``src``."""
    return _written(input, lambda t: t.select(dim, index), src)


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """``input`` with the slice ``start:end:step`` along ``dim`` replaced by ``src``."""
    d = wrap_dim(dim, input.ndim)
    return _written(input, lambda t: t[(slice(None),) * d + (slice(start, end, step),)], src)


@_on_inputs_device
def fill_diagonal_(input, fill_value, wrap=False):
    """Fill the main diagonal in place (all dims equal, or 2-dim; ``wrap``: a tall matrix's
    diagonal restarts every ``columns + 1`` rows, as NumPy's ``fill_diagonal``)."""
    if input.ndim < 2:
        raise RuntimeError("dimensions must larger than 1")
    if input.ndim > 2 and len(set(input.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    mask = np.zeros(tuple(input.shape), dtype=bool)
    np.fill_diagonal(mask, True, wrap=wrap)
    with_value = F.where(tensor(mask), F.to_tensor(fill_value, input.dtype), input)
    from ..core.views import assign

    return assign(input, with_value)


# ----------------------------------------------------------------------------- extremes
def aminmax(input, *, dim=None, keepdim=False):
    """``(min, max)`` over ``dim`` (all elements by default)."""
    dims = tuple(range(input.ndim)) if dim is None else dim
    return aminmax_result(F.amin(input, dims, keepdim), F.amax(input, dims, keepdim))


# ----------------------------------------------------------------------------- counting
@_on_inputs_device
def histc(input, bins=100, min=0, max=0):
    """Counts in ``bins`` equal-width bins over ``[min, max]`` (the data's range when both are
    0); values outside are ignored. Not differentiable, as in PyTorch."""
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"\"histogram_cpu\" not implemented for '{input.dtype.name}'")
    if bins <= 0:
        raise RuntimeError(f"torch.histc(): bins must be > 0, but got {bins} for bins")
    x = F.reshape(input.detach(), (-1,))
    lo, hi = (F.amin(x, (0,), False), F.amax(x, (0,), False)) if min == 0 and max == 0 else \
        (F.to_tensor(float(min), x.dtype), F.to_tensor(float(max), x.dtype))
    # (an empty range widens by 1 on both sides, as PyTorch's)
    same = lo == hi
    lo, hi = F.where(same, lo - 1, lo), F.where(same, hi + 1, hi)
    inside = (x >= lo) & (x <= hi)
    position = F.floor((x - lo) * bins / (hi - lo))
    position = F.cast(F.clamp(F.where(inside, position, 0.0), 0, bins - 1), _dt.int64)
    return I.SCATTER_ADD(zeros(bins, dtype=x.dtype), position, F.cast(inside, x.dtype), dim=0)


def _eager_values(t, what):
    """``t``'s values, breaking a compiled function's graph (the result's shape depends on
    them)."""
    from ..core import tracing as trace

    if trace.current_tracer() is not None:
        trace.graph_break(f"{what}: its output's shape depends on the input's values")
    return t.detach().numpy()


@_on_host
def bincount(input, weights=None, minlength=0):
    """How often each non-negative integer occurs in the 1-dim ``input`` (``weights``: their
    sum), at least ``minlength`` long."""
    values = _eager_values(input, "bincount")
    if values.ndim != 1 or values.dtype.kind not in "iub":
        raise RuntimeError(f"bincount only supports 1-d non-negative integral inputs, got {input.dtype} "
                           f"of {values.ndim} dims")
    if values.size and values.min() < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    length = builtins.max(int(values.max()) + 1 if values.size else 0, minlength)
    if weights is None:
        return tensor(np.bincount(values, minlength=length).astype(np.int64))
    dtype = weights.dtype if weights.dtype.is_floating_point else _dt.float64
    return I.SCATTER_ADD(zeros(length, dtype=dtype), tensor(values.astype(np.int64)), F.cast(weights, dtype), dim=0)


@_on_host
def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct values (in ascending order), and with ``return_inverse`` where each input
    element's value is among them, with ``return_counts`` how often each occurs; ``dim``:
    distinct slices along that dim."""
    values = _eager_values(input, "unique")
    axis = None if dim is None else wrap_dim(dim, values.ndim)
    out, inverse, counts = np.unique(values, return_inverse=True, return_counts=True, axis=axis)
    if dim is None:
        inverse = inverse.reshape(values.shape)
    result = [tensor(out, dtype=input.dtype)]
    if return_inverse:
        result.append(tensor(inverse.astype(np.int64)))
    if return_counts:
        result.append(tensor(counts.astype(np.int64)))
    return result[0] if len(result) == 1 else tuple(result)


@_on_host
def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """Each run of equal consecutive values (or slices along ``dim``) once, with the run index
    of every element (``return_inverse``) and the run lengths (``return_counts``)."""
    values = _eager_values(input, "unique_consecutive")
    if dim is None:
        flat = values.reshape(-1)
        starts = np.ones(flat.shape[0], dtype=bool)
        starts[1:] = flat[1:] != flat[:-1]
        out, shape = flat[starts], values.shape
    else:
        d = wrap_dim(dim, values.ndim)
        moved = np.moveaxis(values, d, 0)
        starts = np.ones(moved.shape[0], dtype=bool)
        starts[1:] = (moved[1:] != moved[:-1]).reshape(moved.shape[0] - 1, -1).any(1)
        out, shape = np.moveaxis(moved[starts], 0, d), (moved.shape[0],)
    run = np.cumsum(starts) - 1
    result = [tensor(out, dtype=input.dtype)]
    if return_inverse:
        result.append(tensor(run.reshape(shape).astype(np.int64)))
    if return_counts:
        result.append(tensor(np.diff(np.append(np.flatnonzero(starts), starts.shape[0])).astype(np.int64)))
    return result[0] if len(result) == 1 else tuple(result)


# (last: every function above with a dim= takes axis= too, as PyTorch's)
accept_numpy_names(globals())
