"""PyTorch's functions that rearrange elements without arithmetic: ``repeat`` and ``tile``,
``select``, ``rot90``, ``fliplr``/``flipud``, ``meshgrid``, ``tensor_split``, ``take``,
``ravel``, ``cartesian_prod``/``combinations``, ``block_diag``, ``atleast_nd``, ``dstack``,
``tril_indices``/``triu_indices``. Views where PyTorch returns views (``select``, ``ravel`` of a contiguous tensor),
copies otherwise; all composed of ``tracegrad._api.functional``.

>>> import tracegrad as tg
>>> tg.tensor([[1, 2]]).repeat(2, 2)
tensor([[1, 2, 1, 2],
        [1, 2, 1, 2]])
>>> [t.shape for t in tg.meshgrid(tg.arange(2), tg.arange(3), indexing="ij")]
[tracegrad.Size([2, 3]), tracegrad.Size([2, 3])]
"""
from __future__ import annotations

from ..core.placement import on_inputs_device as _on_inputs_device
from ..core import dtypes as _dt
from . import functional as F
from ..core.creation import tensor, zeros
from ..ops.index import check_index
from ..ops.shapes import wrap_dim, wrap_dim_of_nonscalar
from ..core.tensor import Size, Tensor
from .numpy_names import accept_numpy_names
from ..autograd.graph import named_backward  # (grad_fn names as PyTorch's)

__all__ = ["tile", "select", "rot90", "fliplr", "flipud", "meshgrid", "tensor_split", "take", "ravel",
           "take_along_dim", "hsplit", "vsplit", "dsplit", "diag_embed", "diagflat", "broadcast_tensors",
           "broadcast_shapes", "cartesian_prod", "combinations", "block_diag", "atleast_1d", "atleast_2d",
           "atleast_3d", "dstack", "tril_indices", "triu_indices", "vander"]


@named_backward("RepeatBackward0")
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


@named_backward("SelectBackward0")
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
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {indexing}")
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
    d = wrap_dim_of_nonscalar(dim, input.ndim, "tensor_split expected at least a 1-dimensional "
                              "tensor, but got a tensor with 0 dims")
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


@_on_inputs_device
def take(input, index):
    """The elements of the flattened input at ``index`` (of index's shape)."""
    if not isinstance(index, Tensor):
        index = tensor(index, dtype=_dt.int64)
    flat = F.reshape(input, (-1,))
    index = check_index(index, flat.shape[0], 0, "take", negative=True)
    wrapped = F.where(F.lt(index, 0), F.add(index, flat.shape[0]), index)  # (negative: from the end)
    picked = F.index_select(flat, 0, F.reshape(wrapped, (-1,)))
    return F.reshape(picked, tuple(index.shape))


def ravel(input):
    return F.reshape(input, (-1,))


def take_along_dim(input, indices, dim=None):
    """The elements at ``indices`` along ``dim`` (the two broadcast against each other but for
    ``dim``); with ``dim`` None, of the flattened input at the flattened indices (1-d)."""
    if dim is None:
        return take(input, F.reshape(indices, (-1,)))
    d = wrap_dim(dim, input.ndim)
    shape_in, shape_ix = list(input.shape), list(indices.shape)
    shape_in[d] = shape_ix[d] = 1
    from ..ops.shapes import broadcast_shapes

    common = list(broadcast_shapes(tuple(shape_in), tuple(shape_ix)))
    x = F.expand(input, tuple(common[:d] + [input.shape[d]] + common[d + 1:]))
    ix = F.expand(indices, tuple(common[:d] + [indices.shape[d]] + common[d + 1:]))
    return F.gather(x, d, ix)


def _split_at(input, indices_or_sections, dim, name):
    if isinstance(indices_or_sections, int) and input.shape[dim] % indices_or_sections:
        raise RuntimeError(f"torch.{name} attempted to split along dimension {dim}, but the size of the "
                           f"dimension {input.shape[dim]} is not divisible by the split_size "
                           f"{indices_or_sections}!")
    return tensor_split(input, indices_or_sections, dim)


def hsplit(input, indices_or_sections):
    """``tensor_split`` along dim 1 (dim 0 of a 1-d tensor); equal parts only for an int."""
    return _split_at(input, indices_or_sections, 1 if input.ndim > 1 else 0, "hsplit")


def vsplit(input, indices_or_sections):
    if input.ndim < 2:
        raise RuntimeError(f"torch.vsplit requires a tensor with at least 2 dimension, but got a tensor with {input.ndim} dimensions!")
    return _split_at(input, indices_or_sections, 0, "vsplit")


def dsplit(input, indices_or_sections):
    if input.ndim < 3:
        raise RuntimeError(f"torch.dsplit requires a tensor with at least 3 dimension, but got a tensor with {input.ndim} dimensions!")
    return _split_at(input, indices_or_sections, 2, "dsplit")


@_on_inputs_device
def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """Matrices (in dims ``dim1``, ``dim2`` of the result) whose ``offset`` diagonal holds the
    last dim of ``input``."""
    return _place_diagonal(input, offset, dim1, dim2)


def _place_diagonal(input, offset, dim1, dim2):
    """The last dim of ``input`` (k long) on the ``offset`` diagonal of new n x n dims, n = k +
    |offset|: each element followed by k zeros, flattened and cut to k x k, puts element i at
    i * (k + 1), the diagonal; the offset pads rows and columns. Only padding and reshapes,
    O(n^2) memory."""
    k = input.shape[-1]
    lead = tuple(input.shape[:-1])
    from ..nn.functional import pad

    rows = pad(F.unsqueeze(input, -1), (0, k))  # (..., k, k + 1)
    square = F.reshape(F.narrow(F.reshape(rows, lead + (k * (k + 1),)), -1, 0, k * k), lead + (k, k))
    if offset:
        a = abs(offset)
        square = pad(square, (a, 0, 0, a) if offset > 0 else (0, a, a, 0))
    nd = square.ndim
    d1, d2 = wrap_dim(dim1, nd), wrap_dim(dim2, nd)
    if (d1, d2) == (nd - 2, nd - 1):
        return square
    from .composites import movedim

    return movedim(square, (nd - 2, nd - 1), (d1, d2))


@_on_inputs_device
def diagflat(input, offset=0):
    """A 2-d matrix with the flattened input on its ``offset`` diagonal."""
    return _place_diagonal(F.reshape(input, (-1,)), offset, 0, 1)


def broadcast_shapes(*shapes):
    """The shape all of ``shapes`` broadcast to (RuntimeError when they do not)."""
    from ..ops.shapes import broadcast_shapes as common

    return Size(common(*[(s,) if isinstance(s, int) else tuple(s) for s in shapes]))


def broadcast_tensors(*tensors):
    """The tensors expanded to their common shape (views, as PyTorch's)."""
    tensors = tensors[0] if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) else tensors
    shape = tuple(broadcast_shapes(*[tuple(t.shape) for t in tensors]))
    return tuple(F.expand(t, shape) for t in tensors)


def cartesian_prod(*tensors):
    """Every combination of one element of each 1-D tensor, one per row (as itertools.product);
    a single tensor is returned as it is."""
    for k, t in enumerate(tensors):
        if t.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)} (tensor {k})")
    if len(tensors) == 1:
        return tensors[0]
    return F.stack([g.reshape(-1) for g in meshgrid(*tensors, indexing="ij")], 1)


def combinations(input, r=2, with_replacement=False):
    """The ``r``-element combinations of a 1-D tensor's elements, one per row (as
    itertools.combinations / combinations_with_replacement)."""
    import itertools

    if input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    if r == 0:
        return zeros(0, dtype=input.dtype)
    rows = list(pick(range(input.shape[0]), r))
    index = tensor([i for row in rows for i in row], dtype=_dt.int64)
    return input[index].reshape(len(rows), r)


@_on_inputs_device
def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of a 1-D tensor: column j is ``x ** (N - 1 - j)`` (``increasing``:
    ``x ** j``), ``N`` columns (default: as many as elements); integer input stays integer.

    >>> import tracegrad as tg
    >>> tg.vander(tg.tensor([1, 2, 3]), N=3)
    tensor([[1, 1, 1],
            [4, 2, 1],
            [9, 3, 1]])
    """
    if x.ndim != 1:
        raise RuntimeError(f"x must be a one-dimensional tensor, got {x.ndim} dims")
    n = x.shape[0] if N is None else int(N)
    if n < 0:
        raise RuntimeError(f"N must be non-negative, got {n}")
    if n == 0:
        return zeros((x.shape[0], 0), dtype=x.dtype)
    # (successive products, as PyTorch's cumprod: differentiable, exact for integers)
    columns = F.cat([(x * 0 + 1).reshape(-1, 1), x.reshape(-1, 1).expand(x.shape[0], n - 1)], 1)
    powers = columns.cumprod(1)
    return powers if increasing else powers.flip(1)


@_on_inputs_device
def block_diag(*tensors):
    """The tensors (0-, 1- or 2-D) on the diagonal of a matrix of zeros."""
    mats = []
    for k, t in enumerate(tensors):
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {k} "
                               f"has {t.ndim} dimensions")
        mats.append(t.reshape(1, -1) if t.ndim < 2 else t)
    if not mats:
        return zeros((1, 0))
    from ..nn.functional import pad

    dtype = _dt.result_type(*mats)
    cols = sum(m.shape[1] for m in mats)
    rows, left = [], 0
    for m in mats:
        right = cols - left - m.shape[1]
        rows.append(pad(m.to(dtype), (left, right)) if cols else m.to(dtype))
        left += m.shape[1]
    return F.cat(rows, 0)


_ATLEAST = {  # ndim wanted -> {ndim of the tensor: how it is lifted}
    1: {0: lambda t: t.reshape(1)},
    2: {0: lambda t: t.reshape(1, 1), 1: lambda t: t.unsqueeze(0)},
    3: {0: lambda t: t.reshape(1, 1, 1), 1: lambda t: t.reshape(1, -1, 1), 2: lambda t: t.unsqueeze(-1)},
}


def _atleast(ndim, tensors):
    """One tensor in: one out; several, or a list or tuple of them: a tuple."""
    single = len(tensors) == 1 and isinstance(tensors[0], Tensor)
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tensors[0]
    out = tuple(_ATLEAST[ndim].get(t.ndim, lambda t: t)(t) for t in tensors)
    return out[0] if single else out


def atleast_1d(*tensors):
    """Each tensor with at least 1 dim (a 0-dim tensor becomes shape (1,))."""
    return _atleast(1, tensors)


def atleast_2d(*tensors):
    """Each tensor with at least 2 dims: (1,) for a scalar becomes (1, 1), (n,) becomes (1, n)."""
    return _atleast(2, tensors)


def atleast_3d(*tensors):
    """Each tensor with at least 3 dims: (n,) becomes (1, n, 1), (m, n) becomes (m, n, 1)."""
    return _atleast(3, tensors)


def dstack(tensors):
    """The tensors stacked along a third dim (after ``atleast_3d``)."""
    return F.cat([atleast_3d(t) for t in tensors], 2)


def _triangle(row, col, offset, lower, dtype, device):
    import numpy as np

    if row < 0 or col < 0:
        raise RuntimeError(f"row must be non-negative, got {row}; col must be non-negative, got {col}")
    rows, cols = np.tril_indices(row, offset, col) if lower else np.triu_indices(row, offset, col)
    return tensor(np.stack([rows, cols]).astype(np.int64), dtype=_dt.to_dtype(dtype) if dtype else _dt.int64,
                  device=device)


def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The (row, col) indices of the lower triangle of a row x col matrix, a 2 x N tensor (on
    ``device``, the default device when None).

    >>> import tracegrad as tg
    >>> tg.tril_indices(2, 2)
    tensor([[0, 1, 1],
            [0, 0, 1]])
    """
    return _triangle(row, col, offset, True, dtype, device)


def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The (row, col) indices of the upper triangle of a row x col matrix, a 2 x N tensor (on
    ``device``, the default device when None)."""
    return _triangle(row, col, offset, False, dtype, device)


# (last: every function above with a dim= takes axis= too, as PyTorch's)
accept_numpy_names(globals())
