"""Order statistics under PyTorch's names: ``median``, ``quantile``, ``kthvalue``, and
``nanmedian``, ``nanquantile`` (NaN ignored). Made of ``sort`` and gathers, so the gradient
reaches the selected elements (interpolated ones in proportion), as PyTorch's; for ``median``
and ``quantile`` a row holding NaN gives NaN, as PyTorch's. The NaN-ignoring ones read each
row's count of numbers as data (a position per row), so they trace without a graph break.

>>> import tracegrad as tg
>>> tg.median(tg.tensor([3.0, 1.0, 4.0, 2.0]))
tensor(2.)
>>> tg.quantile(tg.tensor([1.0, 2.0, 3.0, 4.0]), 0.5)
tensor(2.5000)
"""
from __future__ import annotations

import math

from .. import amp as _amp
from ..core import dtypes as _dt
from . import functional as F
from .composites import isnan, movedim
from ..ops.shapes import wrap_dim
from ..core.tensor import Tensor
from .numpy_names import accept_numpy_names

__all__ = ["median", "quantile", "kthvalue", "nanmedian", "nanquantile"]


def _nan_rows(x, dim, keepdim):
    return F.amax(F.cast(isnan(x), _dt.int64), dim, keepdim=keepdim) > 0 if x.dtype.is_floating_point else None


def kthvalue(input, k, dim=-1, keepdim=False):
    """The ``k``-th smallest element along ``dim`` and its index."""
    d = wrap_dim(dim, max(input.ndim, 1))
    n = input.shape[d] if input.ndim else 1
    if not 1 <= k <= n:
        raise IndexError(f"kthvalue(): selected number k out of range for dimension {dim}")
    values, indices = F.sort(input, dim=d)
    # (a 0-d tensor's one element is its k=1 value: nothing to narrow, which needs a dim)
    picked = [F.narrow(t, d, k - 1, 1) for t in (values, indices)] if input.ndim else [values, indices]
    if not keepdim and input.ndim:
        picked = [F.squeeze(t, d) for t in picked]
    return F.values_indices(*picked)


def median(input, dim=None, keepdim=False):
    """The lower median (of the flattened input, or along ``dim`` with its index); NaN where
    the elements include NaN (the index then is a NaN's, and so is the gradient)."""
    if dim is None:
        flat = F.reshape(input, (-1,))
        if flat.shape[0] == 0:
            return F.to_tensor(math.nan, input.dtype)
        return F.reshape(median(flat, 0).values, ())
    d = wrap_dim(dim, max(input.ndim, 1))
    n = input.shape[d] if input.ndim else 1
    indices = kthvalue(input, (n + 1) // 2, d, keepdim=True).indices
    nan = _nan_rows(input, d, True)
    if nan is not None:
        indices = F.where(nan, F.argmax(F.cast(isnan(input), _dt.int64), d, keepdim=True), indices)
    values = F.gather(input, d, indices) if input.ndim else input
    if not keepdim and input.ndim:
        values, indices = F.squeeze(values, d), F.squeeze(indices, d)
    return F.values_indices(values, indices)


_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


@_amp.float32
def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """The ``q``-quantiles (a number, or a 1-d tensor: then a leading dim of them) of the
    flattened input or along ``dim``, interpolated as ``interpolation`` says."""
    return _quantiles(input, q, dim, keepdim, interpolation, skip_nan=False)


def _quantiles(input, q, dim, keepdim, interpolation, skip_nan):
    """``quantile`` (a row holding NaN gives NaN) or ``nanquantile`` (its numbers only: a
    position per row, read from the row's count of numbers, so no graph break)."""
    if interpolation not in _INTERPOLATIONS:
        raise ValueError(f"quantile() interpolation must be one of {', '.join(_INTERPOLATIONS)}. "
                         f"Got {interpolation}")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"quantile() input tensor must be either float or double dtype, got {input.dtype}")
    qs = q.tolist() if isinstance(q, Tensor) else q
    scalar_q = not isinstance(qs, (list, tuple))
    qs = [qs] if scalar_q else list(qs)
    if any(not 0 <= v <= 1 for v in qs):
        raise RuntimeError("quantile() q values must be in the range [0, 1]")
    x, d = (F.reshape(input, (-1,)), 0) if dim is None else (input, wrap_dim(dim, max(input.ndim, 1)))
    if skip_nan:
        values, _, counts = _sorted_with_counts(x, d)
        last, missing = F.cast(F.clamp(counts - 1, min=0), values.dtype), counts == 0
    else:
        values, last, missing = F.sort(x, dim=d).values, x.shape[d] - 1, _nan_rows(x, d, True)
    out = [_interpolated(values, d, last * v, interpolation) for v in qs]
    result = F.cat(out, d) if len(out) > 1 else out[0]  # the q's along d for now
    result = F.where(missing, math.nan, result)
    result = movedim(result, d, 0)  # the q's first, then the other dims of x
    if dim is None and keepdim:
        result = F.reshape(result, (len(qs),) + (1,) * input.ndim)
    elif dim is not None and keepdim:
        result = F.unsqueeze(result, d + 1)
    return F.squeeze(result, 0) if scalar_q else result


def _interpolated(values, d, pos, interpolation):
    """The sorted ``values`` at position ``pos`` along ``d``: a number (the same for every row:
    slices) or a tensor (one per row: gathers), interpolated as ``interpolation`` says."""
    per_row = isinstance(pos, Tensor)
    lo, hi = (F.floor(pos), F.ceil(pos)) if per_row else (math.floor(pos), math.ceil(pos))
    if interpolation == "nearest":
        lo = hi = F.round(pos) if per_row else round(pos)  # (half to even, as PyTorch's)
    elif interpolation == "lower":
        hi = lo
    elif interpolation == "higher":
        lo = hi
    if per_row:
        a, b = (F.gather(values, d, F.cast(i, _dt.int64)) for i in (lo, hi))
    else:
        a, b = F.narrow(values, d, lo, 1), F.narrow(values, d, hi, 1)
    if interpolation in ("lower", "higher", "nearest") or (not per_row and lo == hi):
        return a
    weight = pos - lo if interpolation == "linear" else 0.5
    return F.add(a, F.mul(F.sub(b, a), weight))


def _sorted_with_counts(x, d):
    """``(sorted values, their original indices, count of non-NaN per row (keepdim))``: NaN
    sorts last, so a row's numbers come first."""
    order = F.sort(x, dim=d)
    counts = F.sum(F.cast(~isnan(x), _dt.int64), d, keepdim=True)
    return order.values, order.indices, counts


def nanmedian(input, dim=None, keepdim=False):
    """``median`` of the numbers that are not NaN (NaN where a row has none)."""
    if dim is None:
        flat = F.reshape(input, (-1,))
        if flat.shape[0] == 0:
            return F.to_tensor(math.nan, input.dtype)
        return F.reshape(nanmedian(flat, 0).values, ())
    d = wrap_dim(dim, max(input.ndim, 1))
    if input.ndim == 0:
        return F.values_indices(input, F.to_tensor(0, _dt.int64))
    values, order, counts = _sorted_with_counts(input, d)
    k = F.div(F.clamp(counts - 1, min=0), 2, rounding_mode="floor")  # (the lower median)
    picked, indices = F.gather(values, d, k), F.gather(order, d, k)
    if not keepdim:
        picked, indices = F.squeeze(picked, d), F.squeeze(indices, d)
    return F.values_indices(picked, indices)


@_amp.float32
def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """``quantile`` of the numbers that are not NaN in each row (NaN where a row has none)."""
    return _quantiles(input, q, dim, keepdim, interpolation, skip_nan=True)


# (last: every function above with a dim= takes axis= too, as PyTorch's)
accept_numpy_names(globals())
