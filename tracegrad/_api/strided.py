"""``as_strided`` and ``as_strided_scatter`` (PyTorch's): a view of a tensor's storage with
any size, strides (in elements) and storage offset, as a sliding window or a diagonal is.

The storage is the root tensor's, read row-major (tracegrad tensors' storage is contiguous).
The view's values are an index of that storage (so its gradient adds up where windows
overlap, as PyTorch's), and eagerly its array aliases the storage, so writing into it writes
into the tensor; writing into a view whose elements overlap raises, as in PyTorch.

>>> import tracegrad as tg
>>> x = tg.arange(6.0)
>>> x.as_strided((2, 3), (1, 1))  # sliding windows of 3
tensor([[0., 1., 2.],
        [1., 2., 3.]])
"""
from __future__ import annotations

import numpy as np

from ..core import creation
from ..core import dtypes as _dt
from . import functional as F
from ..core.tensor import Tensor

__all__ = ["as_strided", "as_strided_scatter"]


def _positions(size, stride, offset, storage_size):
    """The storage index of every element of the view, checked to lie inside the storage."""
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape: {len(stride)} strides for {len(size)} dims")
    if any(s < 0 for s in size):
        raise RuntimeError(f"as_strided: Negative sizes are not supported, got {list(size)}")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got strides: {list(stride)}")
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    index = np.full(size, offset, dtype=np.int64)
    for d, (n, s) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[d] = n
        index = index + (np.arange(n, dtype=np.int64) * s).reshape(shape)
    if index.size and int(index.max()) >= storage_size:
        needed = int(index.max()) + 1
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, and "
                           f"itemsize {1} requiring a storage size of {needed} are out of bounds for storage of "
                           f"size {storage_size}")
    return index


def _element_positions(t):
    """The storage position of every element of ``t`` (row-major), from its array's strides
    relative to its root's storage."""
    root = t._base if t._base is not None else t
    if root is t:
        return np.arange(t.numel(), dtype=np.int64).reshape(tuple(t.shape))
    itemsize = t._value.itemsize
    start = (t._value.__array_interface__["data"][0] - root._value.__array_interface__["data"][0]) // itemsize
    return _positions(t.shape, [s // itemsize for s in t._value.strides], start, root.numel())


def as_strided(input, size, stride, storage_offset=None):
    """The view of ``input``'s storage with ``size``, ``stride`` and ``storage_offset``
    (default: ``input``'s own offset). As in PyTorch, only the elements that belong to
    ``input`` carry gradient back to it; storage outside it is read as a constant."""
    from ..core import views
    from ..core import tracing as trace

    root = input._base if input._base is not None else input
    if input._base is not None and input._is_traced:
        trace.graph_break("as_strided of a view inside a compiled function (its strides are an eager notion)")
    offset = (input.storage_offset() if input._base is not None else 0) if storage_offset is None \
        else int(storage_offset)
    n = root.numel()
    index = _positions(size, stride, offset, n)
    # storage position -> the element of ``input`` stored there (-1: not one of its elements)
    owner = np.full(n, -1, dtype=np.int64)
    owner[_element_positions(input).reshape(-1)] = np.arange(input.numel(), dtype=np.int64)
    picked = owner[index.reshape(-1)]
    flat = F.reshape(input, (input.numel(),))
    out = flat[creation.tensor(np.maximum(picked, 0), dtype=_dt.int64)] if input.numel() else \
        F.reshape(root.detach(), (n,))[creation.tensor(index.reshape(-1), dtype=_dt.int64)]
    if (picked < 0).any():
        outside = F.reshape(root.detach(), (n,))[creation.tensor(index.reshape(-1), dtype=_dt.int64)]
        out = F.where(creation.tensor(picked >= 0), out, outside)
    out = F.reshape(out, tuple(index.shape))
    if not root._is_traced and out._value.size:
        itemsize = root._value.itemsize
        storage = root._value.reshape(-1)  # (the root's array is contiguous: a view of it)
        out._value = np.lib.stride_tricks.as_strided(storage[offset:], tuple(index.shape),
                                                     tuple(s * itemsize for s in stride))
    distinct = np.unique(index).size == index.size
    shape = tuple(root.shape)
    inverse = (lambda r: _scattered(creation.zeros(shape, dtype=r.dtype), r, index)) if distinct else None
    return views.make_view(out, root, lambda b: as_strided(b, size, stride, offset), inverse)


def _scattered(base, src, index):
    """``base`` with ``src`` written at the storage positions ``index``."""
    n = base.numel()
    flat = F.reshape(base, (n,))
    positions = creation.tensor(index.reshape(-1), dtype=_dt.int64)
    return F.reshape(flat.index_put((positions,), F.reshape(src, (-1,)).to(base.dtype)), tuple(base.shape))


def as_strided_scatter(input, src, size, stride, storage_offset=None):
    """A copy of ``input`` with ``src`` written where ``as_strided(input, size, stride,
    storage_offset)`` would view it."""
    if not isinstance(src, Tensor):
        raise TypeError(f"as_strided_scatter: src must be a Tensor, got {type(src).__name__}")
    offset = 0 if storage_offset is None else int(storage_offset)
    index = _positions(size, stride, offset, input.numel())
    if tuple(src.shape) != tuple(index.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = {list(src.shape)}, "
                           f"slice size = {list(index.shape)}")
    return _scattered(input, src, index)
