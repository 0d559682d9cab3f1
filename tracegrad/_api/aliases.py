"""Functions of the ``torch`` namespace that are other names, or other homes, of what tracegrad
already has (``torch.multiply`` is ``mul``, ``torch.conv2d`` is ``nn.functional.conv2d``,
``torch.matrix_exp`` is ``linalg.matrix_exp``), plus ``unravel_index`` and the window
functions of signal processing. Only those whose parameters are PyTorch's here as there.

>>> import tracegrad as tg
>>> tg.unravel_index(tg.tensor([5, 7]), (3, 4))
(tensor([1, 1]), tensor([1, 3]))
>>> tg.hann_window(4)
tensor([0.0000, 0.5000, 1.0000, 0.5000])
"""
from __future__ import annotations

import math

import numpy as np

from ..core import dtypes as _dt
from . import functional as F
from .. import linalg as _linalg
from ..core.creation import tensor
from ..nn import functional as _nnf

__all__ = ["multiply", "subtract", "negative", "swapdims", "detach", "real", "is_floating_point",
           "is_complex", "is_nonzero", "is_same_size", "is_signed", "matrix_exp", "matrix_power",
           "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
           "pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "pdist", "cosine_similarity",
           "pairwise_distance", "prelu", "unravel_index", "hann_window", "hamming_window",
           "blackman_window", "bartlett_window", "kaiser_window"]

# (the functional forms' parameters are torch's own for these: tests/test_api_signatures.py)
conv1d, conv2d, conv3d = _nnf.conv1d, _nnf.conv2d, _nnf.conv3d
conv_transpose1d, conv_transpose2d, conv_transpose3d = (_nnf.conv_transpose1d, _nnf.conv_transpose2d,
                                                        _nnf.conv_transpose3d)
pixel_shuffle, pixel_unshuffle, channel_shuffle = _nnf.pixel_shuffle, _nnf.pixel_unshuffle, _nnf.channel_shuffle
pdist, cosine_similarity, pairwise_distance, prelu = (_nnf.pdist, _nnf.cosine_similarity,
                                                      _nnf.pairwise_distance, _nnf.prelu)
matrix_exp, matrix_power = _linalg.matrix_exp, _linalg.matrix_power


def multiply(input, other):
    return F.mul(input, other)


def subtract(input, other, *, alpha=1):
    return F.sub(input, other, alpha=alpha)


def negative(input):
    return F.neg(input)


def swapdims(input, dim0, dim1):
    return F.transpose(input, dim0, dim1)


def detach(input):
    return input.detach()


def real(input):
    """A real tensor's real part: the tensor itself (tracegrad has no complex dtypes)."""
    return input


def is_floating_point(input):
    return input.dtype.is_floating_point


def is_complex(input):
    return False


def is_signed(input):
    return input.dtype not in (_dt.bool_, _dt.uint8)


def is_same_size(input, other):
    return tuple(input.shape) == tuple(other.shape)


def is_nonzero(input):
    """Whether a one-element tensor is nonzero (RuntimeError for any other count, as PyTorch's)."""
    if input.numel() != 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous" if input.numel()
                           else "Boolean value of Tensor with no values is ambiguous")
    return bool(input.item())


def unravel_index(indices, shape):
    """The coordinates in an array of ``shape`` of each flat index: a tuple of int64 tensors,
    one per dim (negative indices count from the end, as PyTorch's)."""
    shape = (int(shape),) if isinstance(shape, int) else tuple(int(s) for s in shape)
    if indices.dtype.is_floating_point or indices.dtype is _dt.bool_:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    size = math.prod(shape)
    flat = F.cast(indices, _dt.int64)
    if not flat._is_traced:
        values = np.asarray(flat._value)
        if values.size and (values.max() >= size or values.min() < -size):
            raise RuntimeError(f"'indices' must be in range [-{size}, {size - 1}]")
    flat = F.remainder(flat, size) if size else flat
    coords = []
    for extent in reversed(shape):
        coords.append(F.remainder(flat, extent))
        flat = F.div(flat, extent, rounding_mode="floor")
    return tuple(reversed(coords))


# ----------------------------------------------------------------------------- windows
def _window(window_length, periodic, dtype, requires_grad, formula, device):
    """``formula(n, N)`` over n = 0..N-1, N the length (one more when ``periodic``, the last
    value then dropped: the window of a periodic signal), PyTorch's float dtype rules."""
    dt = _dt.to_dtype(dtype) if dtype is not None else _dt.get_default_dtype()
    if not dt.is_floating_point:
        raise ValueError(f"window functions expect a floating point dtype, got {dt}")
    if window_length < 0:
        raise RuntimeError(f"window_length must be non-negative, got {window_length}")
    if window_length <= 1:
        values = np.ones(window_length)
    else:
        size = window_length + 1 if periodic else window_length
        values = formula(np.arange(window_length, dtype=np.float64), size)
    return tensor(values.astype(dt.np), dtype=dt, requires_grad=requires_grad, device=device)


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False,
                requires_grad=False):
    return _window(window_length, periodic, dtype, requires_grad,
                   lambda n, size: 0.5 - 0.5 * np.cos(2 * math.pi * n / (size - 1)), device)


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, layout=None,
                   device=None, pin_memory=False, requires_grad=False):
    return _window(window_length, periodic, dtype, requires_grad,
                   lambda n, size: alpha - beta * np.cos(2 * math.pi * n / (size - 1)), device)


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False,
                    requires_grad=False):
    return _window(window_length, periodic, dtype, requires_grad,
                   lambda n, size: (0.42 - 0.5 * np.cos(2 * math.pi * n / (size - 1))
                                    + 0.08 * np.cos(4 * math.pi * n / (size - 1))), device)


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False,
                    requires_grad=False):
    return _window(window_length, periodic, dtype, requires_grad,
                   lambda n, size: 1 - np.abs(2 * n / (size - 1) - 1), device)


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None, device=None,
                  pin_memory=False, requires_grad=False):
    return _window(window_length, periodic, dtype, requires_grad,
                   lambda n, size: np.i0(beta * np.sqrt(1 - (2 * n / (size - 1) - 1) ** 2)) / np.i0(beta), device)
