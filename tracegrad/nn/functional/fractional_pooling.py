"""Fractional max pooling (Graham, 2014), re-exported by ``tracegrad.nn.functional``:
``fractional_max_pool2d/3d`` and their ``_with_indices`` forms, as PyTorch's.

Each (sample, channel) plane gets one uniform sample ``u`` per pooled dim, and window ``i``
of ``n_out`` starts at ``floor((i + u) alpha) - floor(u alpha)``, ``alpha = (n_in - k) /
(n_out - 1)``, the last at ``n_in - k`` (PyTorch's ``generate_intervals``, computed in the
input's dtype as it is, so that the same samples give the same windows). Windows are ``k``
long and may overlap. Their elements are gathered through an index table built with
tracegrad ops from the samples, and each window keeps the element PyTorch's scan keeps (the
first maximum, or the last NaN), so the gradient goes to the selected elements (summed where
windows share one). A compiled function keeps the whole pooling: the samples, when not given,
come from the seeded ``uniform_noise`` op, a program input drawn from ``tg.manual_seed``'s
generator on every call, as dropout's masks.

>>> import tracegrad as tg
>>> import tracegrad.nn.functional as F
>>> x = tg.arange(16.0).reshape(1, 1, 4, 4)
>>> F.fractional_max_pool2d(x, 2, output_size=2, _random_samples=tg.tensor([[[0.5, 0.5]]]))
tensor([[[[ 5.,  7.],
          [13., 15.]]]])
"""
from __future__ import annotations

import numpy as np

from ...core.placement import on_inputs_device as _on_inputs_device
from ...core import creation
from ...core import dtypes as _dt
from ..._api import functional as T
from ...ops import index as I
from ...ops import nn as N

__all__ = ["fractional_max_pool2d", "fractional_max_pool3d", "fractional_max_pool2d_with_indices",
           "fractional_max_pool3d_with_indices"]

_DIM_NAMES = ("time", "height", "width")


def _tuple(v, k):
    return (v,) * k if isinstance(v, (int, float)) else tuple(v)


def _intervals(u, n_in, n_out, k):
    """Window starts ``(..., n_out)`` (int64) for samples ``u`` ``(...)``, as PyTorch's."""
    last = creation.full(tuple(u.shape) + (1,), n_in - k, dtype=_dt.int64)
    if n_out == 1:
        return last
    np_dtype = u.dtype.np
    # alpha is divided in the input's dtype, as PyTorch's scalar_t division is
    alpha = T.to_tensor(np.asarray(np_dtype.type(n_in - k) / np_dtype.type(n_out - 1), dtype=np_dtype))
    steps = T.to_tensor(np.arange(n_out - 1, dtype=np_dtype))
    u = T.unsqueeze(u, -1)
    # (int) truncation in PyTorch; the products are never negative, so it is floor
    starts = T.sub(T.floor(T.mul(T.add(steps, u), alpha)), T.floor(T.mul(u, alpha)))
    return T.cat([T.cast(starts, _dt.int64), last], -1)


def _selected(values):
    """Which element of each window (last dim) PyTorch's scan keeps: it replaces its pick when
    ``value > best or isnan(value)``, so the first maximum, or the last NaN where there is one."""
    from ..._api.composites import any as any_, isnan

    first_max = T.argmax(values, -1, keepdim=True)
    nan = isnan(values)
    last_nan = T.sub(values.shape[-1] - 1, T.argmax(T.cast(T.flip(nan, -1), _dt.int64), -1, keepdim=True))
    return T.where(any_(nan, -1, keepdim=True), last_nan, first_max)


@_on_inputs_device
def _fractional_max(input, kernel_size, output_size, output_ratio, samples, k, name):
    if input.ndim not in (k + 1, k + 2):
        raise RuntimeError(f"{name}(): Expected {k + 1}D or {k + 2}D tensor, but got {list(input.shape)}")
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    spatial = tuple(input.shape[input.ndim - k:])
    kernel = _tuple(kernel_size, k)
    if output_size is None:
        outs = [int(n * r) for n, r in zip(spatial, _tuple(output_ratio, k))]
    else:
        outs = [int(o) for o in _tuple(output_size, k)]
    for d, (n, o, w) in enumerate(zip(spatial, outs, kernel)):
        if o + w - 1 > n:
            dim = _DIM_NAMES[d + 3 - k]
            raise RuntimeError(f"{name}(): pool {dim} {w} too large relative to input {dim} {n}")
    x = input if input.ndim == k + 2 else T.unsqueeze(input, 0)
    batch, channels = x.shape[0], x.shape[1]
    if samples is None:
        samples = N.UNIFORM_NOISE(creation.seed_tensor(), shape=(batch, channels, k), low=0.0, high=1.0,
                                  dtype=input.dtype)
    if samples.ndim != 3 or samples.shape[2] != k or samples.shape[0] < batch:
        raise RuntimeError(f"{name}(): expected _random_samples of shape ({batch}, {channels}, {k}), "
                           f"got {list(samples.shape)}")
    if samples.shape[1] != channels:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    samples = T.cast(samples[:batch], input.dtype)
    # PyTorch's sample order: 2-D (width, height), 3-D (time, height, width)
    order = (1, 0) if k == 2 else (0, 1, 2)
    flat = 0
    for d in range(k):
        starts = _intervals(samples[:, :, order[d]], spatial[d], outs[d], kernel[d])  # (B, C, o_d)
        shape = [batch, channels] + [1] * (2 * k)
        shape[2 + d] = outs[d]
        offsets = [1] * (2 * k)
        offsets[k + d] = kernel[d]
        position = T.add(T.reshape(starts, tuple(shape)),
                         T.to_tensor(np.arange(kernel[d], dtype=np.int64).reshape([1, 1] + offsets)))
        flat = T.add(flat, T.mul(position, int(np.prod(spatial[d + 1:]))))
    windows_n, window_len = int(np.prod(outs)), int(np.prod(kernel))
    table = T.reshape(flat, (batch, channels, windows_n * window_len))
    values = I.GATHER(T.reshape(x, (batch, channels, int(np.prod(spatial)))), table, dim=2)
    values = T.reshape(values, (batch, channels, windows_n, window_len))
    arg = _selected(values)
    out = T.reshape(I.GATHER(values, arg, dim=3), (batch, channels) + tuple(outs))
    idx = T.reshape(I.GATHER(T.reshape(table, (batch, channels, windows_n, window_len)), arg, dim=3),
                    (batch, channels) + tuple(outs))
    if input.ndim == k + 1:
        out, idx = T.squeeze(out, 0), T.squeeze(idx, 0)
    return out, idx


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """``fractional_max_pool2d`` that always returns ``(output, indices)``; an index is the
    flat position in the H*W plane."""
    return _fractional_max(input, kernel_size, output_size, output_ratio, _random_samples, 2,
                           "fractional_max_pool2d")


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """The maximum over ``kernel_size`` windows at pseudo-random fractional strides that give
    ``output_size`` (or ``output_ratio`` times the input's size) over the last two dims of
    ``(N, C, H, W)`` or ``(C, H, W)``; ``_random_samples`` ``(N, C, 2)`` in [0, 1) fixes the
    windows (drawn from tracegrad's generator when not given)."""
    out, idx = fractional_max_pool2d_with_indices(input, kernel_size, output_size, output_ratio,
                                                  return_indices, _random_samples)
    return (out, idx) if return_indices else out


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """``fractional_max_pool3d`` that always returns ``(output, indices)``; an index is the
    flat position in the D*H*W volume."""
    return _fractional_max(input, kernel_size, output_size, output_ratio, _random_samples, 3,
                           "fractional_max_pool3d")


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """``fractional_max_pool2d`` over the last three dims; ``_random_samples`` is
    ``(N, C, 3)``."""
    out, idx = fractional_max_pool3d_with_indices(input, kernel_size, output_size, output_ratio,
                                                  return_indices, _random_samples)
    return (out, idx) if return_indices else out
