"""Pooling and transposed convolution beyond functional.py's, re-exported by
``tracegrad.nn.functional``: ``adaptive_max_pool1d/2d`` (with ``return_indices``),
``lp_pool1d/2d`` and ``conv_transpose1d``, with PyTorch's windows and index rules.

Adaptive max pooling gathers each window's elements through one constant index table (the
windows of an adaptive pool differ in length, so short ones repeat their first element, which
never changes a maximum or which one is first), then takes the first maximum as max_pool2d
does: the gradient goes to that one element, as PyTorch's.

>>> import tracegrad as tg
>>> import tracegrad.nn.functional as F
>>> F.adaptive_max_pool1d(tg.tensor([[[1.0, 5.0, 2.0, 4.0, 3.0]]]), 2)
tensor([[[5., 4.]]])
"""
from __future__ import annotations

import numpy as np

from .. import functional as T
from ..ops import index as I

__all__ = ["adaptive_max_pool1d", "adaptive_max_pool2d", "lp_pool1d", "lp_pool2d", "conv_transpose1d"]


def _adaptive_windows(n_in, n_out):
    """(n_out, longest window) input positions of PyTorch's adaptive windows
    [floor(i n_in / n_out), ceil((i+1) n_in / n_out)); short windows repeat their start."""
    starts = [(i * n_in) // n_out for i in range(n_out)]
    ends = [-((-(i + 1) * n_in) // n_out) for i in range(n_out)]
    k = max(e - s for s, e in zip(starts, ends))
    table = np.array([[s + j if s + j < e else s for j in range(k)] for s, e in zip(starts, ends)])
    return table.astype(np.int64).reshape(n_out, k)


def _adaptive_max(input, output_size, k, return_indices, name):
    from .functional_more import _sizes

    if input.ndim not in (k + 1, k + 2):
        raise RuntimeError(f"{name}(): Expected {k + 1}D or {k + 2}D tensor, but got {list(input.shape)}")
    spatial = tuple(input.shape[input.ndim - k:])
    if any(s == 0 for s in spatial):
        raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch dimensions, "
                           f"but input has sizes {list(input.shape)}")
    outs = _sizes(output_size, k, input)
    tables = [_adaptive_windows(n, o) for n, o in zip(spatial, outs)]
    if k == 1:
        flat = tables[0]
    else:  # a flat position in the H*W plane for each (window, offset)
        (rows, cols), w = tables, spatial[1]
        flat = rows[:, None, :, None] * w + cols[None, :, None, :]  # (oh, ow, kh, kw)
        flat = flat.reshape(outs[0] * outs[1], rows.shape[1] * cols.shape[1])
    lead = tuple(input.shape[:input.ndim - k])
    x = T.reshape(input, lead + (int(np.prod(spatial)),))
    table = T.to_tensor(flat)
    windows = I.INDEX(x, table, dim=len(lead))  # (*lead, windows, offsets)
    arg = T.argmax(windows, -1, keepdim=True)
    out = T.reshape(I.GATHER(windows, arg, dim=len(lead) + 1), lead + tuple(outs))
    if not return_indices:
        return out
    positions = T.expand(table, lead + tuple(flat.shape))
    return out, T.reshape(I.GATHER(positions, arg, dim=len(lead) + 1), lead + tuple(outs))


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """The maximum over each of ``output_size`` adaptive windows of the last dim; with
    ``return_indices`` also each maximum's position."""
    return _adaptive_max(input, output_size, 1, return_indices, "adaptive_max_pool1d")


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """The maximum over an ``output_size`` grid of adaptive windows of the last two dims
    (``None`` keeps a size); with ``return_indices`` also each maximum's flat position in its
    H*W plane."""
    return _adaptive_max(input, output_size, 2, return_indices, "adaptive_max_pool2d")


def _lp(pooled, norm_type, count):
    # PyTorch's formula: sign(avg) * relu(|avg|), times the window size, to the power 1/p
    return T.pow(T.mul(T.mul(T.sign(pooled), T.relu(T.abs(pooled))), count), 1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """``(sum over each window of x^p)^(1/p)``, as PyTorch's: an average pool of ``x^p``
    scaled back by the window size."""
    from .functional import avg_pool1d

    k = kernel_size if isinstance(kernel_size, int) else kernel_size[0]
    return _lp(avg_pool1d(T.pow(input, norm_type), kernel_size, stride, 0, ceil_mode), norm_type, k)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """``(sum over each window of x^p)^(1/p)`` over 2-D windows."""
    from .functional import _pair, avg_pool2d

    kh, kw = _pair(kernel_size, "kernel_size")
    return _lp(avg_pool2d(T.pow(input, norm_type), kernel_size, stride, 0, ceil_mode), norm_type, kh * kw)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """The transpose of conv1d, weight ``(C_in, C_out/groups, k)``: conv_transpose2d over a
    height of 1.

    >>> import tracegrad as tg
    >>> import tracegrad.nn.functional as F
    >>> F.conv_transpose1d(tg.ones(1, 1, 3), tg.ones(1, 1, 2), stride=2)
    tensor([[[1., 1., 1., 1., 1., 1.]]])
    """
    from .functional import _as_2d, _one, conv_transpose2d

    if input.ndim not in (2, 3):
        raise RuntimeError(f"conv_transpose1d: Expected 2D (unbatched) or 3D (batched) input, but got "
                           f"input of size: {list(input.shape)}")
    out = conv_transpose2d(_as_2d(input, "conv_transpose1d"), T.unsqueeze(weight, -2), bias,
                           _one(stride, "stride", 1), _one(padding, "padding", 0),
                           _one(output_padding, "output_padding", 0), groups, _one(dilation, "dilation", 1))
    return T.squeeze(out, -2)
