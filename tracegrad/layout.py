"""PyTorch's functions that rearrange elements without arithmetic: ``repeat`` and ``tile``,
``select``, ``rot90``, ``fliplr``/``flipud``, ``meshgrid``, ``tensor_split``, ``take``,
``ravel``. Views where PyTorch returns views (``select``, ``ravel`` of a contiguous tensor),
copies otherwise; all composed of ``tracegrad.functional``.

>>> import tracegrad as tg
>>> tg.tensor([[1, 2]]).repeat(2, 2)
tensor([[1, 2, 1, 2],
        [1, 2, 1, 2]])
>>> [t.shape for t in tg.meshgrid(tg.arange(2), tg.arange(3), indexing="ij")]
[tracegrad.Size([2, 3]), tracegrad.Size([2, 3])]
"""
from __future__ import annotations

from . import dtypes as _dt
from . import functional as F
from .creation import tensor
from .ops.shapes import wrap_dim
from .tensor import Tensor

__all__ = ["tile", "select", "rot90", "fliplr", "flipud", "meshgrid", "tensor_split", "take", "ravel"]


def repeat(input, *sizes):
    """The tensor repeated ``sizes[k]`` times along dim k (more sizes than dims add leading
    dims), as ``torch.Tensor.repeat``."""
    sizes = tuple(sizes[0]) if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) else sizes
    if len(sizes) < input.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of "
                           "dimensions of tensor")
    shape = (1,) * (len(sizes) - input.ndim) + tuple(input.shape)
    # each dim k becomes (sizes[k], shape[k]): broadcast, then merged
    wide = F.reshape(input, tuple(n for s in shape for n in (1, s)))
    wide = F.expand(wide, tuple(n for r, s in zip(sizes, shape) for n in (r, s)))
    return F.reshape(wide, tuple(r * s for r, s in zip(sizes, shape)))


def tile(input, dims):
    """``repeat`` with ``dims`` padded with leading 1s to the tensor's rank."""
    dims = tuple(dims)
    return repeat(input, *((1,) * (input.ndim - len(dims)) + dims))


def select(input, dim, index):
    """The slice at ``index`` along ``dim``, without that dim (a view)."""
    d = wrap_dim(dim, input.ndim)
    return input[(slice(None),) * d + (index,)]


def rot90(input, k=1, dims=(0, 1)):
    """Rotated by 90 degrees ``k`` times, from the first of ``dims`` towards the second."""
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    d0, d1 = (wrap_dim(d, input.ndim) for d in dims)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}")
    k %= 4
    if k == 1:
        return F.transpose(F.flip(input, [d1]), d0, d1)
    if k == 2:
        return F.flip(input, [d0, d1])
    if k == 3:
        return F.transpose(F.flip(input, [d0]), d0, d1)
    return F.clone(input)


def fliplr(input):
    if input.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return F.flip(input, [1])


def flipud(input):
    if input.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return F.flip(input, [0])


def meshgrid(*tensors, indexing=None):
    """Coordinate grids of 1-d (or 0-d) tensors: ``indexing="ij"`` (the default, as PyTorch's;
    the first tensor varies along the first dim) or ``"xy"`` (the first two swapped)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    indexing = indexing or "ij"
    if indexing not in ("ij", "xy"):
        raise ValueError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {indexing}")
    for t in tensors:
        if t.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t.ndim}D")
    flat = [F.reshape(t, (-1,)) for t in tensors]
    swap = indexing == "xy" and len(flat) >= 2
    if swap:
        flat[0], flat[1] = flat[1], flat[0]
    shape = tuple(t.shape[0] for t in flat)
    grids = [F.expand(F.reshape(t, tuple(-1 if i == k else 1 for i in range(len(flat)))), shape)
             for k, t in enumerate(flat)]
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def tensor_split(input, indices_or_sections, dim=0):
    """Views split along ``dim``: into ``n`` nearly equal parts (the first ``size % n`` one
    longer) for an int, or at the given indices."""
    d = wrap_dim(dim, input.ndim)
    size = input.shape[d]
    if isinstance(indices_or_sections, Tensor):
        indices_or_sections = indices_or_sections.tolist()
    if isinstance(indices_or_sections, int):
        n = indices_or_sections
        if n <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {n}")
        lengths = [size // n + (1 if i < size % n else 0) for i in range(n)]
        bounds, start = [], 0
        for length in lengths:
            bounds.append((start, start + length))
            start += length
    else:
        points = [min(max(int(i) + (size if int(i) < 0 else 0), 0), size) for i in indices_or_sections]
        edges = [0] + points + [size]
        bounds = [(a, max(a, b)) for a, b in zip(edges[:-1], edges[1:])]
    return tuple(F.narrow(input, d, a, b - a) for a, b in bounds)


def take(input, index):
    """The elements of the flattened input at ``index`` (of index's shape)."""
    if not isinstance(index, Tensor):
        index = tensor(index, dtype=_dt.int64)
    flat = F.reshape(input, (-1,))
    wrapped = F.where(F.lt(index, 0), F.add(index, flat.shape[0]), index)  # (negative: from the end)
    picked = F.index_select(flat, 0, F.reshape(wrapped, (-1,)))
    return F.reshape(picked, tuple(index.shape))


def ravel(input):
    return F.reshape(input, (-1,))
