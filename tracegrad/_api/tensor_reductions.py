"""Tensor's reductions, scans, statistics, sorting and searching methods (``sum``, ``mean``,
``max``, ``cumsum``, ``median``, ``sort``, ``unique``...). Those whose function takes NumPy's
argument names take them too (``x.sum(axis=0, keepdims=True)``: ``numpy_names``).

>>> import tracegrad as tg
>>> x = tg.tensor([[1.0, 5.0], [3.0, 2.0]])
>>> x.sum(dim=0), x.max(dim=1).indices
(tensor([4., 7.]), tensor([1, 0]))
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from . import arithmetic as MX
from . import composites as C
from . import functional as F
from . import numerics as NU
from . import searching as SR
from . import selection as SE
from . import statistics as ST
from .numpy_names import numpy_names

if TYPE_CHECKING:
    from .tensor import Tensor


class ReductionMethods:
    """The reductions of ``tracegrad.Tensor`` (it lists this mixin)."""

    @numpy_names
    def sum(self, dim=None, keepdim: bool = False, dtype=None) -> Tensor:
        """The sum of all elements, or over ``dim`` (an int or a tuple), keeping it as size 1 with
        ``keepdim``: ``tg.sum`` (NumPy's ``axis=``/``keepdims=`` are accepted too).

        >>> import tracegrad as tg
        >>> x = tg.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> x.sum(), x.sum(dim=1), x.sum(0, keepdim=True)
        (tensor(10.), tensor([3., 7.]), tensor([[4., 6.]]))
        """
        return F.sum(self, dim, keepdim, dtype)

    @numpy_names
    def mean(self, dim=None, keepdim: bool = False, dtype=None) -> Tensor:
        """The mean of all elements, or over ``dim``: ``tg.mean``.

        >>> import tracegrad as tg
        >>> tg.tensor([[1.0, 2.0], [3.0, 4.0]]).mean(dim=0)
        tensor([2., 3.])
        """
        return F.mean(self, dim, keepdim, dtype)

    @numpy_names
    def var(self, dim=None, unbiased: bool | None = None, keepdim: bool = False, *, correction=None) -> Tensor:
        """``tg.var(self, ...)`` as a method."""
        return F.var(self, dim, unbiased, keepdim, correction=correction)

    @numpy_names
    def std(self, dim=None, unbiased: bool | None = None, keepdim: bool = False, *, correction=None) -> Tensor:
        """The standard deviation over ``dim`` (all elements by default; ``correction=1``): ``tg.std``.

        >>> import tracegrad as tg
        >>> tg.arange(5.0).std(), tg.arange(5.0).std(correction=0)
        (tensor(1.5811), tensor(1.4142))
        """
        return F.std(self, dim, unbiased, keepdim, correction=correction)

    @numpy_names
    def prod(self, dim=None, keepdim: bool = False, dtype=None) -> Tensor:
        """``tg.prod(self, ...)`` as a method."""
        return F.prod(self, dim, keepdim, dtype)

    @numpy_names
    def amax(self, dim=(), keepdim: bool = False) -> Tensor:
        """``tg.amax(self, ...)`` as a method."""
        return F.amax(self, dim, keepdim)

    @numpy_names
    def amin(self, dim=(), keepdim: bool = False) -> Tensor:
        """``tg.amin(self, ...)`` as a method."""
        return F.amin(self, dim, keepdim)

    @numpy_names
    def argmax(self, dim=None, keepdim: bool = False) -> Tensor:
        """The index of the largest element (of the flattened tensor, or along ``dim``): ``tg.argmax``.

        >>> import tracegrad as tg
        >>> x = tg.tensor([[1.0, 5.0], [4.0, 2.0]])
        >>> x.argmax(), x.argmax(dim=1)
        (tensor(1), tensor([1, 0]))
        """
        return F.argmax(self, dim, keepdim)

    @numpy_names
    def argmin(self, dim=None, keepdim: bool = False) -> Tensor:
        """``tg.argmin(self, ...)`` as a method."""
        return F.argmin(self, dim, keepdim)

    @numpy_names
    def max(self, dim=None, keepdim: bool = False, *, other=None) -> Tensor | tuple[Tensor, Tensor]:
        """``x.max()`` (ties share the gradient), ``x.max(dim)`` -> (values, indices), ``x.max(y)``
        (elementwise, as ``tg.maximum``): ``tg.max``.

        >>> import tracegrad as tg
        >>> x = tg.tensor([[1.0, 5.0], [4.0, 2.0]])
        >>> x.max(), x.max(dim=1).indices
        (tensor(5.), tensor([1, 0]))
        """
        return F.max(self, dim, keepdim, other=other)

    @numpy_names
    def min(self, dim=None, keepdim: bool = False, *, other=None) -> Tensor | tuple[Tensor, Tensor]:
        """``x.min()``, ``x.min(dim)`` -> (values, indices), ``x.min(y)``: as ``max``, ``tg.min``.

        >>> import tracegrad as tg
        >>> tg.tensor([[1.0, 5.0], [4.0, 2.0]]).min(dim=0).values
        tensor([1., 2.])
        """
        return F.min(self, dim, keepdim, other=other)

    @numpy_names
    def logsumexp(self, dim=None, keepdim: bool = False) -> Tensor:
        """``tg.logsumexp(self, ...)`` as a method."""
        return F.logsumexp(self, dim, keepdim)

    @numpy_names
    def cumsum(self, dim, *, dtype=None) -> Tensor:
        """Running sums along ``dim`` (integers and bools sum as int64, as in PyTorch)."""
        return F.cumsum(self, dim, dtype=dtype)

    @numpy_names
    def cumprod(self, dim, *, dtype=None) -> Tensor:
        """Running products along ``dim`` (integers and bools multiply as int64). The gradient is exact through
        zeros."""
        return F.cumprod(self, dim, dtype=dtype)

    @numpy_names
    def cummax(self, dim) -> tuple[Tensor, Tensor]:
        """``(values, indices)``: the running maximum along ``dim`` and where it was reached (the latest
        position, for ties). NaN propagates."""
        return F.cummax(self, dim)

    @numpy_names
    def cummin(self, dim) -> tuple[Tensor, Tensor]:
        """``(values, indices)``: the running minimum along ``dim``; see ``cummax``."""
        return F.cummin(self, dim)

    @numpy_names
    def logcumsumexp(self, dim) -> Tensor:
        """``log(cumsum(exp(x)))`` along ``dim``, computed without overflow or underflow."""
        return F.logcumsumexp(self, dim)

    @numpy_names
    def all(self, dim=None, keepdim: bool = False) -> Tensor:
        """True where every element (along ``dim``) is nonzero; a bool tensor (uint8 for a uint8 input, as
        PyTorch's)."""
        return C.all(self, dim, keepdim)

    @numpy_names
    def any(self, dim=None, keepdim: bool = False) -> Tensor:
        """True where some element (along ``dim``) is nonzero; a bool tensor (uint8 for a uint8 input, as
        PyTorch's)."""
        return C.any(self, dim, keepdim)

    @numpy_names
    def norm(self, p='fro', dim=None, keepdim: bool = False, out=None, dtype=None) -> Tensor:
        """The vector p-norm over ``dim`` (all elements by default): p = 2 or "fro", 1, inf, -inf, 0 (the count
        of nonzeros) or any other number. At a zero vector the gradient is 0 (for p >= 1), as in PyTorch,
        rather than the 0/0 of the formula."""
        return C.norm(self, p, dim, keepdim, out, dtype)

    @numpy_names
    def var_mean(self, dim=None, unbiased: bool | None = None, keepdim: bool = False, *,
                 correction=None) -> tuple[Tensor, Tensor]:
        """``tg.var_mean(self, ...)`` as a method."""
        return C.var_mean(self, dim, unbiased, keepdim, correction=correction)

    @numpy_names
    def std_mean(self, dim=None, unbiased: bool | None = None, keepdim: bool = False, *,
                 correction=None) -> tuple[Tensor, Tensor]:
        """``tg.std_mean(self, ...)`` as a method."""
        return C.std_mean(self, dim, unbiased, keepdim, correction=correction)

    @numpy_names
    def diff(self, n: int = 1, dim=-1) -> Tensor:
        """``n``-th forward differences along ``dim``."""
        return C.diff(self, n, dim)

    @numpy_names
    def count_nonzero(self, dim=None) -> Tensor:
        """The number of non-zero elements (over ``dim``), int64."""
        return MX.count_nonzero(self, dim)

    @numpy_names
    def nansum(self, dim=None, keepdim: bool = False, dtype=None) -> Tensor:
        """``sum`` with NaNs counted as zero (their gradient is zero)."""
        return MX.nansum(self, dim, keepdim, dtype)

    @numpy_names
    def nanmean(self, dim=None, keepdim: bool = False, dtype=None) -> Tensor:
        """``mean`` of the elements that are not NaN."""
        return MX.nanmean(self, dim, keepdim, dtype)

    def dist(self, other, p=2) -> Tensor:
        """The ``p``-norm of ``input - other``."""
        return MX.dist(self, other, p)

    def cov(self, *, correction=1, fweights=None, aweights=None) -> Tensor:
        """The covariance matrix of the variables in ``input``'s rows (observations in columns), with
        ``correction`` subtracted from the observation count."""
        return MX.cov(self, correction=correction, fweights=fweights, aweights=aweights)

    def corrcoef(self) -> Tensor:
        """Pearson correlation coefficients of the rows of ``input``, clipped to [-1, 1]."""
        return MX.corrcoef(self)

    @numpy_names
    def median(self, dim=None, keepdim: bool = False) -> Tensor | tuple[Tensor, Tensor]:
        """The lower median (of the flattened input, or along ``dim`` with its index); NaN where the elements
        include NaN (the index then is a NaN's, and so is the gradient)."""
        return ST.median(self, dim, keepdim)

    @numpy_names
    def quantile(self, q, dim=None, keepdim: bool = False, *, interpolation='linear') -> Tensor:
        """The ``q``-quantiles (a number, or a 1-d tensor: then a leading dim of them) of the flattened input
        or along ``dim``, interpolated as ``interpolation`` says."""
        return ST.quantile(self, q, dim, keepdim, interpolation=interpolation)

    @numpy_names
    def kthvalue(self, k: int, dim=-1, keepdim: bool = False) -> tuple[Tensor, Tensor]:
        """The ``k``-th smallest element along ``dim`` and its index."""
        return ST.kthvalue(self, k, dim, keepdim)

    @numpy_names
    def nanmedian(self, dim=None, keepdim: bool = False) -> Tensor | tuple[Tensor, Tensor]:
        """``median`` of the numbers that are not NaN (NaN where a row has none)."""
        return ST.nanmedian(self, dim, keepdim)

    @numpy_names
    def nanquantile(self, q, dim=None, keepdim: bool = False, *, interpolation='linear') -> Tensor:
        """``quantile`` of the numbers that are not NaN in each row (NaN where a row has none)."""
        return ST.nanquantile(self, q, dim, keepdim, interpolation=interpolation)

    @numpy_names
    def unique(self, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False,
               dim=None) -> Tensor | tuple[Tensor, ...]:
        """The distinct values (in ascending order), and with ``return_inverse`` where each input element's
        value is among them, with ``return_counts`` how often each occurs; ``dim``: distinct slices along
        that dim."""
        return SE.unique(self, sorted, return_inverse, return_counts, dim)

    @numpy_names
    def unique_consecutive(self, return_inverse: bool = False, return_counts: bool = False,
                           dim=None) -> Tensor | tuple[Tensor, ...]:
        """Each run of equal consecutive values (or slices along ``dim``) once, with the run index of every
        element (``return_inverse``) and the run lengths (``return_counts``)."""
        return SE.unique_consecutive(self, return_inverse, return_counts, dim)

    def bincount(self, weights=None, minlength: int = 0) -> Tensor:
        """How often each non-negative integer occurs in the 1-dim ``input`` (``weights``: their sum), at least
        ``minlength`` long."""
        return SE.bincount(self, weights, minlength)

    def histc(self, bins=100, min=0, max=0) -> Tensor:
        """Counts in ``bins`` equal-width bins over ``[min, max]`` (the data's range when both are 0); values
        outside are ignored. Not differentiable, as in PyTorch."""
        return SE.histc(self, bins, min, max)

    @numpy_names
    def aminmax(self, *, dim=None, keepdim: bool = False) -> tuple[Tensor, Tensor]:
        """``(min, max)`` over ``dim`` (all elements by default)."""
        return SE.aminmax(self, dim=dim, keepdim=keepdim)

    def sort(self, dim=-1, descending: bool = False, stable: bool = False) -> tuple[Tensor, Tensor]:
        """``(values, indices)`` sorted along ``dim``; gradients flow to ``x`` through the values."""
        return F.sort(self, dim, descending, stable)

    def topk(self, k: int, dim=-1, largest: bool = True, sorted: bool = True) -> tuple[Tensor, Tensor]:
        """The ``k`` largest (or smallest) elements along ``dim`` as ``(values, indices)``."""
        return F.topk(self, k, dim, largest, sorted)

    def argsort(self, dim=-1, descending: bool = False, stable: bool = False) -> Tensor:
        """Indices that sort ``x`` along ``dim``. Ties keep their order (stable) in every mode."""
        return F.argsort(self, dim, descending, stable)

    def msort(self) -> Tensor:
        """The values sorted along the first dimension: ``tg.sort(self, dim=0).values``."""
        return F.sort(self, dim=0).values

    def mode(self, dim=-1, keepdim: bool = False) -> tuple[Tensor, Tensor]:
        """``tg.mode(self, ...)`` as a method."""
        return SR.mode(self, dim, keepdim)

    def histogram(self, bins, *, range=None, weight=None, density: bool = False) -> tuple[Tensor, Tensor]:
        """The counts of ``bins`` equal bins (or the given edges) and their edges: ``tg.histogram``."""
        return NU.histogram( self, bins, range=range, weight=weight, density=density)

    def sum_to_size(self, *size) -> Tensor:
        """This tensor summed down to ``size`` (which it must broadcast to).

        >>> import tracegrad as tg
        >>> tg.ones(2, 3).sum_to_size(1, 3)
        tensor([[2., 2., 2.]])
        """
        size = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else tuple(size)
        try:
            ok = np.broadcast_shapes(size, tuple(self.shape)) == tuple(self.shape)
        except ValueError:
            ok = False
        if not ok:
            raise RuntimeError(f"size {list(size)} is not expandable to size {list(self.shape)}.")
        return F.sum_to_shape(self, size)
