"""Pooling and transposed convolution beyond functional.py's, re-exported by
``tracegrad.nn.functional``: ``adaptive_max_pool1d/2d`` (with ``return_indices``),
``lp_pool1d/2d``, ``max_unpool1d/2d``, ``conv_transpose1d``, and ``conv3d``, ``max_pool3d``
and ``avg_pool3d`` (the 2-D op over every output depth at once, once per kernel depth), with
PyTorch's windows and index rules.

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

from ...core.placement import on_inputs_device as _on_inputs_device
from ... import amp as _amp
from ..._api import functional as T
from ...ops import index as I
from ...ops.scatter import SCATTER

__all__ = ["adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d",
           "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
           "adaptive_max_pool3d_with_indices", "max_pool1d_with_indices", "max_pool2d_with_indices",
           "lp_pool1d", "lp_pool2d", "max_unpool1d", "max_unpool2d", "conv_transpose1d", "conv3d", "max_pool3d",
           "avg_pool3d", "max_unpool3d", "max_pool3d_with_indices", "lp_pool3d"]


def _adaptive_windows(n_in, n_out):
    """(n_out, longest window) input positions of PyTorch's adaptive windows
    [floor(i n_in / n_out), ceil((i+1) n_in / n_out)); short windows repeat their start."""
    starts = [(i * n_in) // n_out for i in range(n_out)]
    ends = [-((-(i + 1) * n_in) // n_out) for i in range(n_out)]
    k = max(e - s for s, e in zip(starts, ends))
    table = np.array([[s + j if s + j < e else s for j in range(k)] for s, e in zip(starts, ends)])
    return table.astype(np.int64).reshape(n_out, k)


@_on_inputs_device
def _adaptive_max(input, output_size, k, return_indices, name):
    from .activations_and_resampling import _sizes

    if input.ndim not in (k + 1, k + 2):
        raise RuntimeError(f"{name}(): Expected {k + 1}D or {k + 2}D tensor, but got {list(input.shape)}")
    spatial = tuple(input.shape[input.ndim - k:])
    if any(s == 0 for s in spatial):
        raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch dimensions, "
                           f"but input has sizes {list(input.shape)}")
    outs = _sizes(output_size, k, input)
    tables = [_adaptive_windows(n, o) for n, o in zip(spatial, outs)]
    # a flat position in the spatial volume for each (window, offset): (o_1 .. o_k, w_1 .. w_k)
    flat = 0
    for d, table in enumerate(tables):
        shape = [1] * (2 * k)
        shape[d], shape[k + d] = table.shape
        flat = flat + table.reshape(shape) * int(np.prod(spatial[d + 1:]))
    flat = flat.reshape(int(np.prod(outs)), -1)
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


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """The maximum over an ``output_size`` grid of adaptive windows of the last three dims;
    with ``return_indices`` also each maximum's flat position in its D*H*W volume."""
    return _adaptive_max(input, output_size, 3, return_indices, "adaptive_max_pool3d")


# PyTorch's forms that always return the indices (return_indices is accepted and ignored)
def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    return adaptive_max_pool2d(input, output_size, True)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    return adaptive_max_pool3d(input, output_size, True)


@_on_inputs_device
def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    from . import max_pool1d

    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


@_on_inputs_device
def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    from . import max_pool2d

    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def _lp(pooled, norm_type, count):
    # PyTorch's formula: sign(avg) * relu(|avg|), times the window size, to the power 1/p
    return T.pow(T.mul(T.mul(T.sign(pooled), T.relu(T.abs(pooled))), count), 1.0 / norm_type)


@_on_inputs_device
def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """``(sum over each window of x^p)^(1/p)``, as PyTorch's: an average pool of ``x^p``
    scaled back by the window size."""
    from . import avg_pool1d

    k = kernel_size if isinstance(kernel_size, int) else kernel_size[0]
    return _lp(avg_pool1d(T.pow(input, norm_type), kernel_size, stride, 0, ceil_mode), norm_type, k)


@_on_inputs_device
def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """``(sum over each window of x^p)^(1/p)`` over 2-D windows."""
    from . import _pair, avg_pool2d

    kh, kw = _pair(kernel_size, "kernel_size")
    return _lp(avg_pool2d(T.pow(input, norm_type), kernel_size, stride, 0, ceil_mode), norm_type, kh * kw)


def _unpool_size(input, kernel, stride, padding, output_size):
    """PyTorch's unpooled size: ``(in - 1) stride + kernel - 2 padding`` per dim, or
    ``output_size`` (spatial sizes, optionally after N and C) within a stride of it."""
    k = len(kernel)
    default = [(input.shape[input.ndim - k + d] - 1) * stride[d] + kernel[d] - 2 * padding[d] for d in range(k)]
    if output_size is None:
        return default
    if len(output_size) == k + 2:
        output_size = output_size[2:]
    if len(output_size) != k:
        raise ValueError(f"output_size should be a sequence containing {k} or {k + 2} elements, but it has "
                         f"a length of '{len(output_size)}'")
    for d in range(k):
        low, high = default[d] - stride[d], default[d] + stride[d]
        if not low < output_size[d] < high:
            raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be between {low} and {high})')
    return list(output_size)


@_on_inputs_device
def _max_unpool(input, indices, kernel, stride, padding, output_size):
    """Each input value written at its index of the flattened output plane, zeros elsewhere
    (the inverse of max pooling with ``return_indices``). Overlapping windows repeat one
    maximum at one index: the values landing on a position are averaged, so it is written
    once, while the gradient is PyTorch's, the output's gradient at each value's index."""
    from ...core import creation

    k = len(kernel)
    stride = kernel if stride is None else stride
    sizes = _unpool_size(input, kernel, stride, padding, output_size)
    plane = int(np.prod(sizes))
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor "
                           f"({list(input.shape)}) but got indices tensor with shape: {list(indices.shape)}")
    if not indices._is_traced and indices.numel():
        bad = indices._value[(indices._value < 0) | (indices._value >= plane)]
        if bad.size:
            raise RuntimeError(f"Found an invalid max index: {int(bad.flat[0])} (output volumes are of size "
                               f"{'x'.join(map(str, sizes))})")
    lead = tuple(input.shape[:input.ndim - k])
    x = T.reshape(input, lead + (-1,))
    idx = T.reshape(indices, lead + (-1,))
    zeros = creation.zeros(*lead, plane, dtype=input.dtype)
    # A plain scatter: positions written twice get the same maximum, and its gradient for the
    # values is PyTorch's, gather(g, indices). (Summing and dividing by a count, as before, made
    # NaN of an infinite maximum: inf * 0 and inf - inf.)
    return T.reshape(SCATTER(zeros, idx, x, dim=len(lead)), lead + tuple(sizes))


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The inverse of ``max_pool1d(..., return_indices=True)``: zeros but at the indices."""
    one = (lambda v: None if v is None else ((v,) if isinstance(v, int) else tuple(v)))
    return _max_unpool(input, indices, one(kernel_size), one(stride), one(padding), output_size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The inverse of ``max_pool2d(..., return_indices=True)``: zeros but at the indices.

    >>> import tracegrad as tg
    >>> import tracegrad.nn.functional as F
    >>> out, idx = F.max_pool2d(tg.tensor([[[[1.0, 2.0], [4.0, 3.0]]]]), 2, return_indices=True)
    >>> F.max_unpool2d(out, idx, 2)
    tensor([[[[0., 0.],
              [4., 0.]]]])
    """
    from . import _pair

    stride = None if stride is None else _pair(stride, "stride")
    return _max_unpool(input, indices, _pair(kernel_size, "kernel_size"), stride, _pair(padding, "padding"),
                       output_size)


def _triple(v):
    return (v,) * 3 if isinstance(v, int) else tuple(v)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The inverse of ``max_pool3d(..., return_indices=True)``: zeros but at the indices."""
    return _max_unpool(input, indices, _triple(kernel_size), None if stride is None else _triple(stride),
                       _triple(padding), output_size)


@_on_inputs_device
def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


@_on_inputs_device
def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """``(sum over each window of x^p)^(1/p)`` over 3-D windows."""
    kd, kh, kw = _triple(kernel_size)
    return _lp(avg_pool3d(T.pow(input, norm_type), kernel_size, stride, 0, ceil_mode), norm_type, kd * kh * kw)


@_amp.lower_precision
def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """The transpose of conv1d, weight ``(C_in, C_out/groups, k)``: conv_transpose2d over a
    height of 1.

    >>> import tracegrad as tg
    >>> import tracegrad.nn.functional as F
    >>> F.conv_transpose1d(tg.ones(1, 1, 3), tg.ones(1, 1, 2), stride=2)
    tensor([[[1., 1., 1., 1., 1., 1.]]])
    """
    from . import _as_2d, _one, conv_transpose2d

    if input.ndim not in (2, 3):
        raise RuntimeError(f"conv_transpose1d: Expected 2D (unbatched) or 3D (batched) input, but got "
                           f"input of size: {list(input.shape)}")
    out = conv_transpose2d(_as_2d(input, "conv_transpose1d"), T.unsqueeze(weight, -2), bias,
                           _one(stride, "stride", 1), _one(padding, "padding", 0),
                           _one(output_padding, "output_padding", 0), groups, _one(dilation, "dilation", 1))
    return T.squeeze(out, -2)


@_amp.lower_precision
def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D cross-correlation over ``(N, C, D, H, W)`` (or unbatched ``(C, D, H, W)``), weight
    ``(C_out, C_in/groups, kD, kH, kW)``: one conv2d per kernel depth over every output depth
    at once (the depth slices it reads stacked into the batch), summed."""
    from ..modules.conv import _ntuple
    from . import conv2d, pad

    if input.ndim not in (4, 5):
        raise RuntimeError(f"conv3d: Expected 4D (unbatched) or 5D (batched) input, but got input of size: "
                           f"{list(input.shape)}")
    x = T.unsqueeze(input, 0) if input.ndim == 4 else input
    stride, dilation = _ntuple(stride, 3, "stride"), _ntuple(dilation, 3, "dilation")
    kernel = tuple(weight.shape[2:])
    if isinstance(padding, str):
        if padding == "valid":
            sides = [(0, 0)] * 3
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
            totals = [d * (k - 1) for d, k in zip(dilation, kernel)]
            sides = [(t // 2, t - t // 2) for t in totals]  # (the odd one on the right, as PyTorch's)
        else:
            raise ValueError(f"Invalid padding string {padding!r}, should be one of 'valid', 'same'")
    else:
        sides = [(p, p) for p in _ntuple(padding, 3, "padding")]
    if any(any(side) for side in sides):
        x = pad(x, [n for side in reversed(sides) for n in side])
    n, c, d = x.shape[:3]
    kd, (sd, sh, sw), (dd, dh, dw) = kernel[0], stride, dilation
    if weight.ndim != 5 or c != weight.shape[1] * groups:
        raise RuntimeError(f"conv3d: weight of size {list(weight.shape)} expects {weight.shape[1] * groups} input "
                           f"channels (groups={groups}), got input of size {list(input.shape)}")
    depth = (d - dd * (kd - 1) - 1) // sd + 1
    if depth <= 0:
        raise RuntimeError(f"conv3d: the kernel's depth {kd} (dilation {dd}) is larger than the padded input "
                           f"depth {d}")
    out = 0
    for z in range(kd):
        start = z * dd
        planes = x[:, :, start:start + sd * (depth - 1) + 1:sd]  # (N, C, depth, H, W)
        planes = T.reshape(T.permute(planes, (0, 2, 1, 3, 4)), (n * depth, c) + tuple(x.shape[3:]))
        out = T.add(out, conv2d(planes, weight[:, :, z], None, (sh, sw), 0, (dh, dw), groups))
    out = T.permute(T.reshape(out, (n, depth) + tuple(out.shape[1:])), (0, 2, 1, 3, 4))
    if bias is not None:
        out = T.add(out, T.reshape(bias, (-1, 1, 1, 1)))
    return T.squeeze(out, 0) if input.ndim == 4 else out


def _depth_slices(input, kernel_size, stride, padding, dilation, ceil_mode, name, fill):
    """The 3-D pools' setup: the batched 5-D input padded in depth with ``fill`` and, for each
    kernel depth z, the ``(N * D_out, C, H, W)`` planes its windows read; with the sizes."""
    from ..modules.conv import _ntuple
    from . import _pool_geometry, pad

    if input.ndim not in (4, 5):
        raise RuntimeError(f"{name}: Expected 4D (unbatched) or 5D (batched) input, but got input of size: "
                           f"{list(input.shape)}")
    x = T.unsqueeze(input, 0) if input.ndim == 4 else input
    kernel = _ntuple(kernel_size, 3, "kernel_size")
    stride = kernel if stride is None or stride == [] or stride == () else _ntuple(stride, 3, "stride")
    padding, dilation = _ntuple(padding, 3, "padding"), _ntuple(dilation, 3, "dilation")
    n, c, d = x.shape[:3]
    depth, (lo, hi) = _pool_geometry(d, kernel[0], stride[0], padding[0], dilation[0], ceil_mode)
    if lo or hi:
        x = pad(x, (0, 0, 0, 0, lo, hi), value=fill)
    starts = [z * dilation[0] for z in range(kernel[0])]
    planes = [T.reshape(T.permute(x[:, :, a:a + stride[0] * (depth - 1) + 1:stride[0]], (0, 2, 1, 3, 4)),
                        (n * depth, c) + tuple(x.shape[3:])) for a in starts]
    geometry = dict(kernel=kernel, stride=stride, padding=padding, dilation=dilation, depth=depth, lo=lo,
                    starts=starts, batch=(n, c))
    return planes, geometry


def _to_volume(t, geometry, unbatched):
    """``(N * D_out, C, H_out, W_out)`` back to ``(N, C, D_out, H_out, W_out)``."""
    (n, c), depth = geometry["batch"], geometry["depth"]
    out = T.permute(T.reshape(t, (n, depth, c) + tuple(t.shape[2:])), (0, 2, 1, 3, 4))
    return T.squeeze(out, 0) if unbatched else out


@_on_inputs_device
def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Max over 3-D windows: max_pool2d of each kernel depth's planes, then the first maximum
    over the kernel depths (PyTorch's order: depth, then row, then column), so the gradient
    goes to one element; ``return_indices`` gives flat positions in each D*H*W volume."""
    from . import max_pool2d

    planes, g = _depth_slices(input, kernel_size, stride, padding, dilation, ceil_mode, "max_pool3d",
                              float("-inf"))
    h, w = input.shape[-2:]
    pooled = [max_pool2d(p, g["kernel"][1:], g["stride"][1:], g["padding"][1:], g["dilation"][1:], ceil_mode,
                         return_indices=True) for p in planes]
    values = T.stack([v for v, _ in pooled], -1)  # (N * D_out, C, H_out, W_out, kD)
    arg = T.argmax(values, -1, keepdim=True)
    unbatched = input.ndim == 4
    out = _to_volume(T.squeeze(I.GATHER(values, arg, dim=4), -1), g, unbatched)
    if not return_indices:
        return out
    n, depth = g["batch"][0], g["depth"]
    # the input depth each (output depth, kernel depth) reads, times the plane size
    first = np.arange(depth) * g["stride"][0] - g["lo"]
    offsets = [T.to_tensor(np.tile((first + a) * h * w, n).reshape(n * depth, 1, 1, 1).astype(np.int64))
               for a in g["starts"]]
    flat = T.stack([T.add(i, o) for (_, i), o in zip(pooled, offsets)], -1)
    return out, _to_volume(T.squeeze(I.GATHER(flat, arg, dim=4), -1), g, unbatched)


def _window_counts(size, k, s, p, out, include_pad):
    """PyTorch's average-pool divisor along one dim: the window clipped to the padded input
    (``count_include_pad``) or to the input."""
    start = np.arange(out) * s - p
    if include_pad:
        return np.minimum(start + k, size + p) - start
    return np.minimum(start + k, size) - np.maximum(start, 0)


@_on_inputs_device
def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """Mean over 3-D windows: window sums (avg_pool2d sums of each kernel depth's planes,
    added), divided by PyTorch's divisor (a product of per-dim window counts)."""
    from . import _pool_geometry, avg_pool2d

    planes, g = _depth_slices(input, kernel_size, stride, padding, 1, ceil_mode, "avg_pool3d", 0.0)
    total = 0
    for p in planes:
        total = T.add(total, avg_pool2d(p, g["kernel"][1:], g["stride"][1:], g["padding"][1:], ceil_mode,
                                        count_include_pad, divisor_override=1))
    out = _to_volume(total, g, input.ndim == 4)
    if divisor_override:
        return T.div(out, float(divisor_override))
    sizes = tuple(input.shape[-3:])
    counts = [_window_counts(n, k, s, p, _pool_geometry(n, k, s, p, 1, ceil_mode)[0], count_include_pad)
              for n, k, s, p in zip(sizes, g["kernel"], g["stride"], g["padding"])]
    divisor = counts[0][:, None, None] * counts[1][None, :, None] * counts[2][None, None, :]
    return T.div(out, T.to_tensor(divisor.astype(input.dtype.np)))
