"""Tensor's methods of shape and indexing: views (``view``, ``reshape``, ``permute``,
``transpose``, ``T``...), splits and joins, and indexing (``x[i]``, ``gather``, ``scatter``,
``index_select``, ``masked_fill``...).

>>> import tracegrad as tg
>>> x = tg.arange(6).reshape(2, 3)
>>> x.T.shape, x[:, 1]
(tracegrad.Size([3, 2]), tensor([1, 4]))
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from . import composites as C
from . import functional as F
from . import indexing
from . import rearrange as LY
from . import searching as SR
from . import selection as SE
from . import strided as STR
from .numpy_names import numpy_names
from ..ops.index import check_index

if TYPE_CHECKING:
    from .tensor import Tensor


class ShapeMethods:
    """The shape and indexing methods of ``tracegrad.Tensor`` (it lists this mixin)."""

    def reshape(self, *shape) -> Tensor:
        """This tensor's elements in a new shape (a view when the storage allows, else a copy); one
        size may be -1: ``tg.reshape``.

        >>> import tracegrad as tg
        >>> tg.arange(6).reshape(2, -1)
        tensor([[0, 1, 2],
                [3, 4, 5]])
        """
        return F.reshape(self, *shape)

    def view(self, *shape) -> Tensor:
        """A view of the same memory in a new shape (or, given a dtype, reinterpreted): ``tg.view``.

        >>> import tracegrad as tg
        >>> tg.arange(4).view(2, 2)
        tensor([[0, 1],
                [2, 3]])
        """
        return F.view(self, *shape)

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Tensor:
        """Dimensions ``start_dim`` to ``end_dim`` merged into one: ``tg.flatten``.

        >>> import tracegrad as tg
        >>> tg.zeros(2, 3, 4).flatten(1).shape
        tracegrad.Size([2, 12])
        """
        return F.flatten(self, start_dim, end_dim)

    @numpy_names
    def unflatten(self, dim, sizes) -> Tensor:
        """``tg.unflatten(self, ...)`` as a method."""
        return F.unflatten(self, dim, sizes)

    @numpy_names
    def unsqueeze(self, dim) -> Tensor:
        """A view with a new dimension of size 1 at ``dim``: ``tg.unsqueeze``.

        >>> import tracegrad as tg
        >>> tg.zeros(3).unsqueeze(0).shape
        tracegrad.Size([1, 3])
        """
        return F.unsqueeze(self, dim)

    @numpy_names
    def squeeze(self, dim=None) -> Tensor:
        """A view without the dimensions of size 1 (only ``dim``, when given): ``tg.squeeze``.

        >>> import tracegrad as tg
        >>> tg.zeros(2, 1, 3, 1).squeeze().shape, tg.zeros(2, 1, 3, 1).squeeze(1).shape
        (tracegrad.Size([2, 3]), tracegrad.Size([2, 3, 1]))
        """
        return F.squeeze(self, dim)

    def permute(self, *dims) -> Tensor:
        """A view with the dimensions in the order ``dims``: ``tg.permute``.

        >>> import tracegrad as tg
        >>> tg.zeros(2, 3, 4).permute(2, 0, 1).shape
        tracegrad.Size([4, 2, 3])
        """
        return F.permute(self, *dims)

    def transpose(self, dim0: int, dim1: int) -> Tensor:
        """A view with dimensions ``dim0`` and ``dim1`` swapped: ``tg.transpose``.

        >>> import tracegrad as tg
        >>> tg.arange(6).view(2, 3).transpose(0, 1)
        tensor([[0, 3],
                [1, 4],
                [2, 5]])
        """
        return F.transpose(self, dim0, dim1)

    def swapaxes(self, dim0: int, dim1: int) -> Tensor:
        """``tg.swapaxes(self, ...)`` as a method."""
        return F.swapaxes(self, dim0, dim1)

    def t(self) -> Tensor:
        """``tg.t(self, ...)`` as a method."""
        return F.t(self)

    def expand(self, *sizes) -> Tensor:
        """A view with its dimensions of size 1 repeated to ``sizes`` (-1 keeps one): ``tg.expand``."""
        return F.expand(self, *sizes)

    def expand_as(self, other) -> Tensor:
        """``tg.expand_as(self, ...)`` as a method."""
        return F.expand_as(self, other)

    def broadcast_to(self, shape) -> Tensor:
        """``tg.broadcast_to(self, ...)`` as a method."""
        return F.broadcast_to(self, shape)

    def contiguous(self) -> Tensor:
        """``tg.contiguous(self, ...)`` as a method."""
        return F.contiguous(self)

    def clone(self) -> Tensor:
        """A copy in new memory that keeps the autograd history (the gradient flows back to ``self``):
        ``tg.clone``.

        >>> import tracegrad as tg
        >>> x = tg.tensor([2.0], requires_grad=True)
        >>> x.clone()
        tensor([2.], grad_fn=<CloneBackward0>)
        """
        return F.clone(self)

    def flip(self, *dims) -> Tensor:
        """Reversed along ``dims`` (a list, or ints as separate arguments: ``x.flip(0, 1)``)."""
        return F.flip(self, *dims)

    @numpy_names
    def narrow(self, dim, start, length: int) -> Tensor:
        """``tg.narrow(self, ...)`` as a method."""
        return F.narrow(self, dim, start, length)

    @numpy_names
    def split(self, split_size_or_sections, dim=0) -> tuple[Tensor, ...]:
        """Pieces of ``split_size_or_sections`` elements along ``dim`` (the last may be shorter), or of
        the listed sizes; views of ``self``: ``tg.split``.

        >>> import tracegrad as tg
        >>> tg.arange(5).split(2)
        (tensor([0, 1]), tensor([2, 3]), tensor([4]))
        """
        return F.split(self, split_size_or_sections, dim)

    @numpy_names
    def chunk(self, chunks: int, dim=0) -> tuple[Tensor, ...]:
        """``chunks`` pieces along ``dim`` (as even as the size allows; views of ``self``): ``tg.chunk``.

        >>> import tracegrad as tg
        >>> tg.arange(5).chunk(2)
        (tensor([0, 1, 2]), tensor([3, 4]))
        """
        return F.chunk(self, chunks, dim)

    @numpy_names
    def unbind(self, dim=0) -> tuple[Tensor, ...]:
        """``tg.unbind(self, ...)`` as a method."""
        return F.unbind(self, dim)

    def masked_fill(self, mask, value) -> Tensor:
        """``value`` where ``mask`` (bool, broadcastable to ``x``) is True; ``x``'s dtype and shape."""
        return C.masked_fill(self, mask, value)

    def tril(self, diagonal: int = 0) -> Tensor:
        """The lower triangle of the last two dims (the rest zero); ``diagonal`` shifts it."""
        return C.tril(self, diagonal)

    def triu(self, diagonal: int = 0) -> Tensor:
        """The upper triangle of the last two dims (the rest zero); ``diagonal`` shifts it."""
        return C.triu(self, diagonal)

    def movedim(self, source, destination) -> Tensor:
        """Moves the dims ``source`` to the positions ``destination``; the others keep their order."""
        return C.movedim(self, source, destination)

    def moveaxis(self, source, destination) -> Tensor:
        """Moves the dims ``source`` to the positions ``destination``; the others keep their order."""
        return C.moveaxis(self, source, destination)

    def roll(self, shifts, dims=None) -> Tensor:
        """Shifts elements along ``dims`` with wrap-around (the flattened tensor without dims)."""
        return C.roll(self, shifts, dims)

    def diag(self, diagonal: int = 0) -> Tensor:
        """A 1-D ``x`` on the ``diagonal`` of a square matrix (zeros elsewhere); a 2-D ``x``'s ``diagonal`` as
        a vector."""
        return C.diag(self, diagonal)

    def diagonal(self, offset: int = 0, dim1: int = 0, dim2=1) -> Tensor:
        """The diagonal ``offset`` above (below, if negative) the main one of dims ``dim1, dim2``, as the last
        dim."""
        return C.diagonal(self, offset, dim1, dim2)

    def hstack(self) -> Tensor:
        """``tg.hstack(self, ...)`` as a method."""
        return C.hstack(self)

    def vstack(self) -> Tensor:
        """``tg.vstack(self, ...)`` as a method."""
        return C.vstack(self)

    def column_stack(self) -> Tensor:
        """``tg.column_stack(self, ...)`` as a method."""
        return C.column_stack(self)

    @numpy_names
    def repeat_interleave(self, repeats=None, dim=None, *, output_size=None) -> Tensor:
        """Each element (slice along ``dim``, of the flattened ``x`` without one) ``repeats`` times in a row:
        an int, or a 1-d tensor of per-element counts (its values decide the output's shape: a compiled
        function breaks its graph here, as PyTorch's does). With ``x`` alone, a 1-d count tensor: the
        indices ``arange(len(x))`` repeated by it."""
        return C.repeat_interleave(self, repeats, dim, output_size=output_size)

    def tile(self, dims) -> Tensor:
        """``repeat`` with ``dims`` padded with leading 1s to the tensor's rank."""
        return LY.tile(self, dims)

    @numpy_names
    def select(self, dim, index) -> Tensor:
        """The slice at ``index`` along ``dim``, without that dim (a view)."""
        return LY.select(self, dim, index)

    def rot90(self, k: int = 1, dims=(0, 1)) -> Tensor:
        """Rotated by 90 degrees ``k`` times, from the first of ``dims`` towards the second."""
        return LY.rot90(self, k, dims)

    def fliplr(self) -> Tensor:
        """``tg.fliplr(self, ...)`` as a method."""
        return LY.fliplr(self)

    def flipud(self) -> Tensor:
        """``tg.flipud(self, ...)`` as a method."""
        return LY.flipud(self)

    @numpy_names
    def tensor_split(self, indices_or_sections, dim=0) -> tuple[Tensor, ...]:
        """Views split along ``dim``: into ``n`` nearly equal parts (the first ``size % n`` one longer) for an
        int, or at the given indices."""
        return LY.tensor_split(self, indices_or_sections, dim)

    def take(self, index) -> Tensor:
        """The elements of the flattened input at ``index`` (of index's shape)."""
        return LY.take(self, index)

    def ravel(self) -> Tensor:
        """``tg.ravel(self, ...)`` as a method."""
        return LY.ravel(self)

    @numpy_names
    def take_along_dim(self, indices, dim=None) -> Tensor:
        """The elements at ``indices`` along ``dim`` (the two broadcast against each other but for ``dim``);
        with ``dim`` None, of the flattened input at the flattened indices (1-d)."""
        return LY.take_along_dim(self, indices, dim)

    def hsplit(self, indices_or_sections) -> tuple[Tensor, ...]:
        """``tensor_split`` along dim 1 (dim 0 of a 1-d tensor); equal parts only for an int."""
        return LY.hsplit(self, indices_or_sections)

    def vsplit(self, indices_or_sections) -> tuple[Tensor, ...]:
        """``tg.vsplit(self, ...)`` as a method."""
        return LY.vsplit(self, indices_or_sections)

    def dsplit(self, indices_or_sections) -> tuple[Tensor, ...]:
        """``tg.dsplit(self, ...)`` as a method."""
        return LY.dsplit(self, indices_or_sections)

    def diag_embed(self, offset: int = 0, dim1: int = -2, dim2=-1) -> Tensor:
        """Matrices (in dims ``dim1``, ``dim2`` of the result) whose ``offset`` diagonal holds the last dim of
        ``input``."""
        return LY.diag_embed(self, offset, dim1, dim2)

    def diagflat(self, offset: int = 0) -> Tensor:
        """A 2-d matrix with the flattened input on its ``offset`` diagonal."""
        return LY.diagflat(self, offset)

    def cartesian_prod(self, *tensors) -> Tensor:
        """Every combination of one element of each 1-D tensor, one per row (as itertools.product); a single
        tensor is returned as it is."""
        return LY.cartesian_prod(self, *tensors)

    def combinations(self, r=2, with_replacement: bool = False) -> Tensor:
        """The ``r``-element combinations of a 1-D tensor's elements, one per row (as itertools.combinations /
        combinations_with_replacement)."""
        return LY.combinations(self, r, with_replacement)

    def block_diag(self, *tensors) -> Tensor:
        """The tensors (0-, 1- or 2-D) on the diagonal of a matrix of zeros."""
        return LY.block_diag(self, *tensors)

    def atleast_1d(self, *tensors) -> Tensor | tuple[Tensor, ...]:
        """Each tensor with at least 1 dim (a 0-dim tensor becomes shape (1,))."""
        return LY.atleast_1d(self, *tensors)

    def atleast_2d(self, *tensors) -> Tensor | tuple[Tensor, ...]:
        """Each tensor with at least 2 dims: (1,) for a scalar becomes (1, 1), (n,) becomes (1, n)."""
        return LY.atleast_2d(self, *tensors)

    def atleast_3d(self, *tensors) -> Tensor | tuple[Tensor, ...]:
        """Each tensor with at least 3 dims: (n,) becomes (1, n, 1), (m, n) becomes (m, n, 1)."""
        return LY.atleast_3d(self, *tensors)

    def dstack(self) -> Tensor:
        """The tensors stacked along a third dim (after ``atleast_3d``)."""
        return LY.dstack(self)

    def tril_indices(self, col, offset: int = 0, *, dtype=None, device=None, layout=None) -> Tensor:
        """The (row, col) indices of the lower triangle of a row x col matrix, a 2 x N tensor."""
        return LY.tril_indices(self, col, offset, dtype=dtype, device=device, layout=layout)

    def triu_indices(self, col, offset: int = 0, *, dtype=None, device=None, layout=None) -> Tensor:
        """The (row, col) indices of the upper triangle of a row x col matrix, a 2 x N tensor."""
        return LY.triu_indices(self, col, offset, dtype=dtype, device=device, layout=layout)

    def vander(self, N=None, increasing: bool = False) -> Tensor:
        """The Vandermonde matrix of a 1-D tensor: column j is ``x ** (N - 1 - j)`` (``increasing``: ``x **
        j``), ``N`` columns (default: as many as elements); integer input stays integer."""
        return LY.vander(self, N, increasing)

    def masked_select(self, mask) -> Tensor:
        """The elements of ``input`` where ``mask`` (broadcast together) is True, as a 1-dim tensor."""
        return SE.masked_select(self, mask)

    def masked_scatter(self, mask, source) -> Tensor:
        """``input`` with the positions where ``mask`` is True (in row-major order) taking the consecutive
        elements of ``source``."""
        return SE.masked_scatter(self, mask, source)

    @numpy_names
    def index_copy(self, dim, index, source) -> Tensor:
        """``input`` with the slices ``index`` names along ``dim`` replaced by ``source``'s."""
        return SE.index_copy(self, dim, index, source)

    @numpy_names
    def index_fill(self, dim, index, value) -> Tensor:
        """``input`` with the slices ``index`` names along ``dim`` set to ``value`` (a number or a 0-dim
        tensor)."""
        return SE.index_fill(self, dim, index, value)

    def index_put(self, indices, values, accumulate: bool = False) -> Tensor:
        """``input`` with ``input[indices] = values`` (``indices``: a tuple of index tensors for the leading
        dims, broadcast together); ``accumulate=True`` adds instead, repeated positions included."""
        return SE.index_put(self, indices, values, accumulate)

    def diagonal_scatter(self, src, offset: int = 0, dim1: int = 0, dim2=1) -> Tensor:
        """``input`` with its diagonal (``offset``, over ``dim1`` and ``dim2``) replaced by ``src`` (shaped as
        ``input.diagonal(offset, dim1, dim2)``: the other dims, then the diagonal)."""
        return SE.diagonal_scatter(self, src, offset, dim1, dim2)

    @numpy_names
    def select_scatter(self, src, dim, index) -> Tensor:
        """``input`` with ``input.select(dim, index)`` replaced by ``src``."""
        return SE.select_scatter(self, src, dim, index)

    @numpy_names
    def slice_scatter(self, src, dim=0, start=None, end=None, step: int = 1) -> Tensor:
        """``input`` with the slice ``start:end:step`` along ``dim`` replaced by ``src``."""
        return SE.slice_scatter(self, src, dim, start, end, step)

    def unfold(self, dimension: int, size, step: int) -> Tensor:
        """All windows of ``size`` elements along ``dimension``, ``step`` apart: that dim becomes the window
        count and a new last dim of ``size`` holds each window (``Tensor.unfold``)."""
        return SE.unfold(self, dimension, size, step)

    def repeat(self, *sizes) -> Tensor:
        """The tensor repeated ``sizes[k]`` times along dim k (more sizes than dims add leading dims), as
        ``torch.Tensor.repeat``."""
        return LY.repeat(self, *sizes)

    @property
    def T(self) -> Tensor:
        """The dimensions in reverse order (a view): ``self.permute(n - 1, ..., 0)``."""
        return F.permute(self, tuple(reversed(range(self.ndim))))

    @property
    def mT(self) -> Tensor:
        """The last two dimensions swapped (a view; a batch's matrices transposed): ``self.transpose(-2, -1)``."""
        return F.transpose(self, -2, -1)

    def __getitem__(self, index) -> Tensor:
        """``x[index]``: basic indexing makes a view, advanced indexing (tensors, lists, masks) a copy.

        >>> import tracegrad as tg
        >>> x = tg.arange(6).reshape(2, 3)
        >>> x[1], x[:, 0], x[x > 3]
        (tensor([3, 4, 5]), tensor([0, 3]), tensor([4, 5]))
        """
        return indexing.getitem(self, index)

    def __setitem__(self, index, value) -> None:
        """``x[index] = value``, in place (recorded by autograd)."""
        indexing.setitem(self, index, value)

    def gather(self, dim, index) -> Tensor:
        """The values of ``self`` at ``index`` along ``dim`` (``out[i][j] = self[index[i][j]][j]`` for dim 0): ``tg.gather``."""
        return indexing.gather(self, dim, index)

    def nonzero(self, as_tuple: bool = False) -> Tensor | tuple[Tensor, ...]:
        """The indices of the nonzero elements, one row each (a tuple of index tensors with ``as_tuple``)."""
        return indexing.nonzero(self, as_tuple)

    def scatter_add(self, dim, index, src) -> Tensor:
        """Out of place ``x.scatter_add_(dim, index, src)``: ``out[index[i][j]][j] += src[i][j]``."""
        return F.scatter_add(self, dim, index, src)

    def index_select(self, dim, index) -> Tensor:
        """The slices of ``x`` along ``dim`` at ``index`` (a vector), in that order."""
        return F.index_select(self, dim, index)

    def index_add(self, dim, index, source, *, alpha: float = 1) -> Tensor:
        """Out of place ``index_add_``: ``out[index[i]] += alpha * source[i]`` along ``dim``."""
        return F.index_add(self, dim, index, source, alpha=alpha)

    def argwhere(self) -> Tensor:
        """``tg.argwhere(self, ...)`` as a method."""
        return F.argwhere(self)

    def scatter(self, dim, index, src=None, *, value=None, reduce=None) -> Tensor:
        """``input`` with ``src`` (a tensor, or a number: ``value``) written at ``index`` along ``dim``;
        ``reduce="add" | "multiply"`` combines instead (PyTorch's older form of ``scatter_reduce``)."""
        return F.scatter(self, dim, index, src, value=value, reduce=reduce)

    def scatter_reduce(self, dim, index, src, reduce, *, include_self: bool = True) -> Tensor:
        """``input`` with each element of ``src`` combined into the position ``index`` names along ``dim``:
        ``reduce`` is ``"sum" "prod" "mean" "amax" "amin"``; ``include_self=False`` leaves the targets' own
        values out (positions no index names keep them)."""
        return F.scatter_reduce(self, dim, index, src, reduce, include_self=include_self)

    def view_as(self, other) -> Tensor:
        """A view of ``self`` in ``other``'s shape: ``self.view(other.shape)``."""
        return F.view(self, tuple(other.shape))

    swapdims = transpose

    def reshape_as(self, other) -> Tensor:
        """``self`` in ``other``'s shape (a view when the storage allows): ``self.reshape(other.shape)``."""
        return F.reshape(self, tuple(other.shape))

    def nonzero_static(self, *, size, fill_value=-1) -> Tensor:
        """``tg.nonzero_static(self, ...)`` as a method."""
        return SR.nonzero_static(self, size=size, fill_value=fill_value)

    def as_strided(self, size, stride, storage_offset=None) -> Tensor:
        """``tg.as_strided(self, ...)`` as a method."""
        return STR.as_strided(self, size, stride, storage_offset)

    def as_strided_scatter(self, src, size, stride, storage_offset=None) -> Tensor:
        """A copy of ``self`` with ``src`` written into the strided view ``as_strided(size, stride, storage_offset)``."""
        return STR.as_strided_scatter( self, src, size, stride, storage_offset)

    def split_with_sizes(self, split_sizes, dim=0) -> tuple[Tensor, ...]:
        """Pieces of the listed sizes along ``dim``: ``self.split(split_sizes, dim)``."""
        return F.split(self, list(split_sizes), dim)

    def unsafe_split(self, split_size, dim=0) -> tuple[Tensor, ...]:
        """``self.split(split_size, dim)`` (PyTorch's unsafe_ variant skips the views' version checks;
        here the pieces are ordinary views)."""
        return F.split(self, split_size, dim)

    unsafe_split_with_sizes = split_with_sizes

    def unsafe_chunk(self, chunks: int, dim=0) -> tuple[Tensor, ...]:
        """``self.chunk(chunks, dim)`` (the pieces are ordinary views, as ``unsafe_split``'s)."""
        return F.chunk(self, chunks, dim)

    def narrow_copy(self, dim, start, length: int) -> Tensor:
        """A copy (not a view) of ``length`` elements of ``dim`` from ``start``: ``self.narrow(...).clone()``."""
        return F.narrow(self, dim, start, length).clone()

    def put(self, index, source, accumulate: bool = False) -> Tensor:
        """A copy of ``self`` with ``source`` written at the flat positions ``index`` (``put_`` out of place)."""
        return self.clone().put_(index, source, accumulate)

    def index_reduce(self, dim, index, source, reduce, *, include_self: bool = True) -> Tensor:
        """The slices of ``source`` along ``dim`` reduced into the slices of this tensor that
        ``index`` names (``prod``, ``mean``, ``amax``, ``amin``), as PyTorch's index_reduce."""
        if reduce not in ("prod", "mean", "amax", "amin"):
            raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
        d = dim % max(self.ndim, 1)
        index = check_index(index, self.shape[d] if self.ndim else 1, d, "select")  # (PyTorch's message)
        shape = [1] * source.ndim
        shape[d] = -1
        spread = index.reshape(shape).expand(*source.shape)
        return self.scatter_reduce(d, spread, source, reduce, include_self=include_self)
