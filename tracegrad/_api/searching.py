"""Searching sorted data and counting values: ``searchsorted``, ``bucketize``, ``isin``,
``msort`` and ``mode``, with PyTorch's arguments and integer results (not differentiable).

Eagerly ``searchsorted``/``bucketize``/``isin`` run NumPy's searches; traced, they become
comparisons summed over the sorted values (one program, no graph break; memory grows with
values x boundaries). ``mode`` counts eagerly and breaks the graph, as ``unique`` does.

>>> import tracegrad as tg
>>> tg.searchsorted(tg.tensor([1.0, 3.0, 5.0]), tg.tensor([0.0, 3.0, 6.0]))
tensor([0, 1, 3])
>>> tg.bucketize(tg.tensor([0.5, 3.0]), tg.tensor([1.0, 3.0]), right=True)
tensor([0, 2])

A NaN value goes after every element (PyTorch's result); NaNs in the sorted sequence sort
last, as NumPy sorts them.
"""
from __future__ import annotations

import numbers

import numpy as np

from ..core.placement import on_host as _on_host, on_inputs_device as _on_inputs_device
from ..core import dtypes as _dt
from . import functional as F
from .composites import isnan
from ..core.creation import tensor
from ..core import tracing as trace
from ..core.tensor import Tensor
from ..ops.shapes import wrap_dim
from .numpy_names import accept_numpy_names

__all__ = ["searchsorted", "bucketize", "isin", "msort", "mode", "nonzero_static"]


@_on_host
def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, out=None, sorter=None):
    """For each value of ``input``, the index where it would go in ``sorted_sequence`` (sorted
    along its last dim; 1-D, or with the same leading dims as ``input``) to keep it sorted:
    before equal values (``side="left"``), or after them (``right=True`` / ``side="right"``)."""
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side "
                               "of left while right was True")
        right = side == "right"
    scalar = isinstance(input, numbers.Number)
    values = tensor(input, dtype=sorted_sequence.dtype) if scalar else input
    if sorted_sequence.ndim != 1 and (scalar or tuple(sorted_sequence.shape[:-1]) != tuple(values.shape[:-1])):
        raise RuntimeError(f"torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                           f"dimensions of boundaries tensor and input value tensor must match, but we got "
                           f"boundaries tensor {list(sorted_sequence.shape)} and input value tensor "
                           f"{list(values.shape)}")
    if sorter is not None:
        sorted_sequence = sorted_sequence.gather(-1, sorter)
    dtype = _dt.int32 if out_int32 else _dt.int64
    return F.write_out(_search(sorted_sequence, values, right).to(dtype), out)


def _search(seq, values, right):
    if trace.current_tracer() is None:
        s, v = seq.detach().numpy(), values.detach().numpy()
        side = "right" if right else "left"
        if s.ndim == 1:
            found = np.searchsorted(s, v, side=side)
        else:
            rows_s, rows_v = s.reshape(-1, s.shape[-1]), v.reshape(-1, v.shape[-1])
            found = np.stack([np.searchsorted(a, b, side=side) for a, b in zip(rows_s, rows_v)])
        found = np.where(np.isnan(v), s.shape[-1], found) if v.dtype.kind == "f" else found
        return tensor(np.asarray(found, dtype=np.int64).reshape(v.shape))
    # traced: count the sorted values before each value; a NaN value goes after everything
    # (PyTorch), a NaN in the sequence sorts last (NumPy)
    v = values.unsqueeze(-1)
    s = seq.unsqueeze(-2) if seq.ndim > 1 else seq
    before = (s <= v) if right else (s < v)
    if v.dtype.is_floating_point:
        before = before | isnan(v)
    return before.to(_dt.int64).sum(-1)


def bucketize(input, boundaries, *, out_int32=False, right=False, out=None):
    """The bucket of each value of ``input`` among the 1-D sorted ``boundaries``: i such that
    boundaries[i-1] < x <= boundaries[i] (``right=False``) or boundaries[i-1] <= x < boundaries[i]."""
    if boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right, out=out)


@_on_host
def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each element of ``elements`` is in ``test_elements`` (either may be a scalar)."""
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin() expects at least one of elements or test_elements to be a Tensor")
    like = elements if isinstance(elements, Tensor) else test_elements
    e = elements if isinstance(elements, Tensor) else tensor(elements, dtype=like.dtype)
    t = test_elements if isinstance(test_elements, Tensor) else tensor(test_elements, dtype=like.dtype)
    if trace.current_tracer() is None:
        found = np.isin(e.detach().numpy(), t.detach().numpy(), invert=invert)
        return tensor(np.asarray(found), dtype=_dt.bool_)
    hit = (e.unsqueeze(-1) == t.reshape(-1)).any(-1)
    return ~hit if invert else hit


def msort(input):
    """``input`` sorted along its first dim (``sort(input, dim=0).values``)."""
    return F.sort(input, 0)[0]


@_on_host
def mode(input, dim=-1, keepdim=False):
    """``(values, indices)``: the most frequent value along ``dim`` (the smallest among equally
    frequent ones) and the index of its last occurrence, as PyTorch's CPU kernel. The values
    are gathered from ``input``, so they differentiate like ``max(dim)``'s."""
    trace.graph_break("mode counts the values (data-dependent), as unique does")
    d = wrap_dim(dim, input.ndim)  # (an IndexError on a 0-d tensor too, as PyTorch's)
    if input.ndim == 0:
        return F.values_indices(input.clone(), tensor(0))
    rows = np.moveaxis(input.detach().numpy(), d, -1)
    flat = rows.reshape(-1, rows.shape[-1])
    indices = np.empty(flat.shape[0], dtype=np.int64)
    for k, row in enumerate(flat):
        uniq, counts = np.unique(row, return_counts=True)
        winner = uniq[np.argmax(counts)]  # np.unique sorts: argmax takes the smallest of the ties
        indices[k] = np.flatnonzero(row == winner)[-1] if winner == winner else np.flatnonzero(row != row)[-1]
    index = tensor(np.expand_dims(indices.reshape(rows.shape[:-1]), d))
    values = input.gather(d, index)
    if not keepdim:
        values, index = values.squeeze(d), index.squeeze(d)
    return F.values_indices(values, index)


@_on_inputs_device
def nonzero_static(input, *, size, fill_value=-1):
    """The indices of the nonzero elements as ``nonzero`` gives them, but always ``size`` rows:
    the first ``size`` of them, then rows of ``fill_value``. Its shape does not depend on the
    data, so it traces and compiles (each element's row is its rank among the nonzeros, by a
    cumulative sum, and the indices are scattered there; the rows past ``size`` land in a
    spare row that is dropped)."""
    from ..core.creation import arange, full

    if size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be an non-negative integer, got {size}")
    ndim = input.ndim
    n = input.numel()
    nonzero = F.reshape(input != 0, (n,))
    rank = F.cumsum(nonzero.to(_dt.int64), 0) - 1
    row = F.where(nonzero & (rank < size), rank, size)  # (size: the spare row)
    flat = arange(n, dtype=_dt.int64)
    coords, rest = [], flat
    for d in reversed(range(ndim)):
        coords.append(rest % input.shape[d] if input.shape[d] else rest)
        rest = rest // max(input.shape[d], 1)
    values = F.stack(coords[::-1], 1) if ndim else full((n, 0), 0, dtype=_dt.int64)
    out = full((size + 1, ndim), fill_value, dtype=_dt.int64)
    if n and ndim:
        out = out.scatter(0, row.unsqueeze(1).expand(n, ndim), values)
    return out[:size]


# (last: every function above with a dim= takes axis= too, as PyTorch's)
accept_numpy_names(globals())
