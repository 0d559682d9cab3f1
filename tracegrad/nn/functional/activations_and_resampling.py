"""More of ``torch.nn.functional``, re-exported by ``tracegrad.nn.functional``: the piecewise
activations (relu6, selu, celu, hardswish, hardsigmoid, the shrinks, threshold, prelu,
softmin), ``kl_div``, adaptive average pooling, ``interpolate`` and ``pixel_shuffle``,
``dropout2d``. Composites of registry primitives, arranged so that the gradient at a branch
point is PyTorch's (its backward formulas say which side a boundary belongs to).

Resampling (adaptive pooling, interpolation) is a contraction with one small weight matrix
per spatial dim (``out x in``), so it is one product per dim forward and backward, in every
mode, and compiles to BLAS calls.

>>> import tracegrad as tg
>>> import tracegrad.nn.functional as F
>>> F.interpolate(tg.tensor([[[1.0, 2.0]]]), scale_factor=2, mode="linear")
tensor([[[1.0000, 1.2500, 1.7500, 2.0000]]])
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from ...core.placement import on_inputs_device as _on_inputs_device
from ... import amp as _amp
from ..._api import functional as T
from ...core import dtypes
from ..._api.contractions import einsum
from ...autograd.graph import named_backward  # (grad_fn names as PyTorch's)

__all__ = ["relu6", "selu", "celu", "hardswish", "hardsigmoid", "softmin", "tanhshrink", "softshrink",
           "hardshrink", "threshold", "prelu", "kl_div", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
           "adaptive_avg_pool3d", "interpolate", "upsample", "upsample_nearest", "upsample_bilinear",
           "pixel_shuffle", "pixel_unshuffle", "dropout2d", "dropout3d"]

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _inplace_result(input, out, inplace):
    from . import _inplace_result as write  # (the rule of functional.py's activations)

    return write(input, out, inplace)


def _between(x, low, high):
    """``x`` where low < x < high, the clamped value (no gradient) elsewhere: hardtanh's
    gradient, which excludes the bounds (clamp's includes them)."""
    inside = T.logical_and(T.gt(x, low), T.lt(x, high))
    return T.where(inside, x, T.clamp(x, low, high).detach())


def relu6(input, inplace=False):
    return _inplace_result(input, _between(input, 0.0, 6.0), inplace)


def selu(input, inplace=False):
    out = T.mul(T.where(T.gt(input, 0), input, T.mul(T.expm1(input), _SELU_ALPHA)), _SELU_SCALE)
    return _inplace_result(input, out, inplace)


def celu(input, alpha=1.0, inplace=False):
    out = T.where(T.gt(input, 0), input, T.mul(T.expm1(T.div(input, alpha)), alpha))
    return _inplace_result(input, out, inplace)


def hardsigmoid(input, inplace=False):
    return _inplace_result(input, T.div(_between(T.add(input, 3.0), 0.0, 6.0), 6.0), inplace)


@named_backward("HardswishBackward0")
def hardswish(input, inplace=False):
    """``x * relu6(x + 3) / 6``; its gradient is PyTorch's: 0 up to -3, ``(2x + 3) / 6``
    between, 1 from 3."""
    x = input
    middle = T.div(T.mul(x, T.add(x, 3.0)), 6.0)
    out = T.where(T.le(x, -3.0), T.mul(x, 0.0), T.where(T.lt(x, 3.0), middle, x))
    return _inplace_result(input, out, inplace)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    from . import softmax

    return softmax(T.neg(input), dim, dtype=dtype)


def tanhshrink(input):
    return T.sub(input, T.tanh(input))


def softshrink(input, lambd=0.5):
    return T.where(T.gt(input, lambd), T.sub(input, lambd),
                   T.where(T.lt(input, -lambd), T.add(input, lambd), T.mul(input, 0.0)))


def hardshrink(input, lambd=0.5):
    return T.where(T.gt(T.abs(input), lambd), input, T.mul(input, 0.0))


def threshold(input, threshold, value, inplace=False):
    """``input`` where it is above ``threshold``, else ``value``."""
    return _inplace_result(input, T.where(T.gt(input, threshold), input, value), inplace)


@_amp.lower_precision
def prelu(input, weight):
    """``x`` where positive, ``weight * x`` elsewhere; ``weight`` has one slope, or one per
    channel (dim 1)."""
    w = weight
    if weight.numel() != 1:
        channels = input.shape[1] if input.ndim > 1 else input.shape[0]
        if weight.numel() != channels:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter "
                               f"numbers = {weight.numel()} and channel size = {channels}.")
        if input.ndim > 1:
            w = T.reshape(weight, (channels,) + (1,) * (input.ndim - 2))
    return T.where(T.gt(input, 0), input, T.mul(w, input))


@_amp.float32
def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """``target * (log(target) - input)`` pointwise (``input`` holds log-probabilities; 0
    where target is 0), reduced as PyTorch's; ``"batchmean"`` divides the sum by the batch."""
    from ..._api.arithmetic import xlogy
    from . import _legacy_reduction

    reduction = _legacy_reduction(size_average, reduce, reduction)

    if log_target:
        pointwise = T.mul(T.exp(target), T.sub(target, input))
    else:
        pointwise = T.sub(xlogy(target, target), T.mul(target, input))
    if reduction == "batchmean":
        return T.div(T.sum(pointwise), input.shape[0]) if input.ndim else T.sum(pointwise)
    if reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support "
                      "size.'batchmean' divides only by the batch size, and aligns with the KL div math "
                      "definition.'mean' will be changed to behave the same as 'batchmean' in the next "
                      "major release.", UserWarning, stacklevel=2)
    from . import _reduce

    return _reduce(pointwise, reduction)


# ----------------------------------------------------------------------------- resampling
def _resample(input, matrices):
    """Contract the last ``len(matrices)`` dims of ``input`` with ``(out, in)`` matrices."""
    k = len(matrices)
    lead = "abcdefgh"[:input.ndim - k]
    ins, outs = "ijk"[:k], "pqr"[:k]
    spec = ",".join([lead + ins] + [o + i for o, i in zip(outs, ins)]) + "->" + lead + outs
    weights = [T.to_tensor(m.astype(input.dtype.np)) for m in matrices]
    return einsum(spec, input, *weights)


def _adaptive_matrix(n_in, n_out):
    """Averages over PyTorch's adaptive windows: [floor(i n_in / n_out), ceil((i+1) n_in / n_out))."""
    m = np.zeros((n_out, n_in))
    for i in range(n_out):
        a, b = (i * n_in) // n_out, -((-(i + 1) * n_in) // n_out)
        m[i, a:b] = 1.0 / (b - a)
    return m


def _sizes(output_size, k, input):
    sizes = (output_size,) * k if isinstance(output_size, int) or output_size is None else tuple(output_size)
    if len(sizes) != k:
        raise ValueError(f"output_size must be an int or {k} ints, got {output_size!r}")
    return [input.shape[input.ndim - k + i] if s is None else int(s) for i, s in enumerate(sizes)]


@_on_inputs_device
def adaptive_avg_pool1d(input, output_size):
    """Averages over ``output_size`` windows of the last dim, as PyTorch's (windows overlap
    when the size does not divide)."""
    (n,) = _sizes(output_size, 1, input)
    return _resample(input, [_adaptive_matrix(input.shape[-1], n)])


@_on_inputs_device
def adaptive_avg_pool2d(input, output_size):
    """Averages over an ``output_size`` grid of windows of the last two dims."""
    h, w = _sizes(output_size, 2, input)
    return _resample(input, [_adaptive_matrix(input.shape[-2], h), _adaptive_matrix(input.shape[-1], w)])


@_on_inputs_device
def adaptive_avg_pool3d(input, output_size):
    """Averages over an ``output_size`` grid of windows of the last three dims."""
    sizes = _sizes(output_size, 3, input)
    return _resample(input, [_adaptive_matrix(input.shape[input.ndim - 3 + d], n) for d, n in enumerate(sizes)])


_INTERP_DIMS = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}
_CUBIC_A = -0.75  # (the cubic convolution kernel's parameter, PyTorch's and OpenCV's)


def _cubic_weights(t):
    """The weights of the neighbours at offsets -1, 0, 1, 2 of a source position ``t`` past
    its floor (PyTorch's get_cubic_upsample_coefficients)."""
    a = _CUBIC_A

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _interp_matrix(n_in, n_out, scale, mode, align_corners):
    """(out, in) weights of one dim: PyTorch's source index for each output index (nearest:
    ``floor(dst * scale)``; nearest-exact: ``floor((dst + 0.5) * scale)``; linear: the two
    neighbours of ``(dst + 0.5) * scale - 0.5`` clamped at 0, or of ``dst * (in - 1) / (out -
    1)`` with align_corners; bicubic: four neighbours of the same, unclamped, position)."""
    m = np.zeros((n_out, n_in))
    dst = np.arange(n_out, dtype=np.float64)
    if mode in ("nearest", "nearest-exact"):
        src = np.floor((dst + (0.5 if mode == "nearest-exact" else 0.0)) * scale).astype(np.int64)
        m[np.arange(n_out), np.minimum(src, n_in - 1)] = 1.0
        return m
    if align_corners:
        src = dst * ((n_in - 1) / (n_out - 1)) if n_out > 1 else np.zeros(n_out)
    else:
        src = (dst + 0.5) * scale - 0.5
    if mode == "bicubic":  # (four neighbours, clamped to the edge; the position is not clamped)
        base = np.floor(src).astype(np.int64)
        for offset, weight in zip(range(-1, 3), _cubic_weights(src - base)):
            np.add.at(m, (np.arange(n_out), np.clip(base + offset, 0, n_in - 1)), weight)
        return m
    src = np.maximum(src, 0.0)
    i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    i1 = np.minimum(i0 + 1, n_in - 1)
    frac = src - i0
    np.add.at(m, (np.arange(n_out), i0), 1.0 - frac)
    np.add.at(m, (np.arange(n_out), i1), frac)
    return m


@_on_inputs_device
def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resize the spatial dims (all but the first two) to ``size``, or by ``scale_factor``:
    modes nearest, nearest-exact, linear, bilinear, bicubic, trilinear, with PyTorch's index
    rules."""
    k = input.ndim - 2
    if k < 1:
        raise ValueError(f"interpolate: expected an input with a batch and a channel dim, got {input.ndim} dims")
    if mode not in ("nearest", "nearest-exact") and mode not in _INTERP_DIMS:
        raise NotImplementedError(f"interpolate: mode {mode!r} is not supported; nearest, nearest-exact, "
                                  "linear, bilinear, bicubic and trilinear are")
    if mode in _INTERP_DIMS and _INTERP_DIMS[mode] != k:
        raise ValueError(f"Got {input.ndim}D input, but {mode} mode needs {_INTERP_DIMS[mode] + 2}D input")
    if align_corners is not None and mode in ("nearest", "nearest-exact"):
        raise ValueError("align_corners option can only be set with the interpolating modes: "
                         "linear | bilinear | bicubic | trilinear")
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported")
    if (size is None) == (scale_factor is None):
        raise ValueError("only one of size or scale_factor should be defined")
    n_in = [input.shape[2 + i] for i in range(k)]
    if size is not None:
        n_out = [int(size)] * k if isinstance(size, int) else [int(s) for s in size]
        scales = [a / b for a, b in zip(n_in, n_out)]
    else:
        factors = [float(scale_factor)] * k if isinstance(scale_factor, (int, float)) else [float(s) for s in scale_factor]
        n_out = [int(math.floor(a * f)) for a, f in zip(n_in, factors)]
        scales = ([a / b for a, b in zip(n_in, n_out)] if recompute_scale_factor
                  else [1.0 / f for f in factors])
    if len(n_out) != k:
        raise ValueError(f"size must have {k} elements for a {input.ndim}D input, got {size!r}")
    mats = [_interp_matrix(a, b, s, mode, bool(align_corners)) for a, b, s in zip(n_in, n_out, scales)]
    if mode in _INTERP_DIMS and not input.dtype.is_floating_point:
        # Fractional weights cast to an integer dtype are zeros: interpolate in float32 one dim
        # at a time, the last first, rounding (half up) into the dtype's range after each pass,
        # as PyTorch's separable integer kernels do (bicubic's overshoot is clamped in between).
        info = np.iinfo(input.dtype.np)
        out = input.to(dtypes.float32)
        for d in reversed(range(k)):
            moved = out.transpose(2 + d, -1)
            out = _resample(moved, [mats[d]]).transpose(2 + d, -1)
            out = (out + 0.5).floor().clamp(info.min, info.max)
        return out.to(input.dtype)
    return _resample(input, mats)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """Deprecated in PyTorch (it warns so too): ``interpolate`` in nearest mode."""
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """Deprecated in PyTorch (it warns so too): ``interpolate``, bilinear with aligned corners."""
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def pixel_shuffle(input, upscale_factor):
    """``(*, C r^2, H, W)`` to ``(*, C, H r, W r)``."""
    r = int(upscale_factor)
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the "
                           f"square of upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    x = T.reshape(input, (*lead, c // (r * r), r, r, h, w))
    n = len(lead)
    x = T.permute(x, list(range(n)) + [n, n + 3, n + 1, n + 4, n + 2])
    return T.reshape(x, (*lead, c // (r * r), h * r, w * r))


def pixel_unshuffle(input, downscale_factor):
    """``(*, C, H r, W r)`` to ``(*, C r^2, H, W)``: pixel_shuffle's inverse."""
    r = int(downscale_factor)
    *lead, c, h, w = input.shape
    if h % r or w % r:
        raise RuntimeError(f"pixel_unshuffle expects height and width to be divisible by "
                           f"downscale_factor, got {h}x{w} and {r}")
    x = T.reshape(input, (*lead, c, h // r, r, w // r, r))
    n = len(lead)
    x = T.permute(x, list(range(n)) + [n, n + 2, n + 4, n + 1, n + 3])
    return T.reshape(x, (*lead, c * r * r, h // r, w // r))


@_on_inputs_device
def _feature_dropout(input, p, training, inplace, channel_dims):
    """Zero whole channels, the leading ``channel_dims`` dims indexing them, with probability
    ``p``, scaling the rest by ``1 / (1 - p)`` (PyTorch's feature dropout)."""
    from ...core.creation import ones
    from . import _check_dropout_p, dropout

    _check_dropout_p(p)
    if not training or p == 0.0:
        return input
    mask = dropout(ones(*input.shape[:channel_dims], *(1,) * (input.ndim - channel_dims),
                        dtype=input.dtype), p)
    return _inplace_result(input, T.mul(input, mask), inplace)


def _dropout_rank_warning(name, input, ranks, spatial):
    if input.ndim not in ranks:
        warnings.warn(f"{name}: Received a {input.ndim}-D input to {name}, which is deprecated and will "
                      "result in an error in a future release. To retain the behavior and silence this "
                      f"warning, please use dropout instead. Note that {name} exists to provide "
                      f"channel-wise dropout on inputs with {spatial} spatial dimensions, a channel "
                      f"dimension, and an optional batch dimension (i.e. {ranks[0]}D or {ranks[1]}D "
                      "inputs).", stacklevel=3)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels (dim 1 of ``(N, C, H, W)``) with probability ``p``, scaling the rest
    by ``1 / (1 - p)``. A 3-D input is ``(N, C, L)``, as PyTorch's (it warns so)."""
    _dropout_rank_warning("dropout2d", input, (3, 4), 2)
    if input.ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout "
                      "behavior is desired - input is interpreted as shape (N, C, L), where C is the channel "
                      "dim. This behavior will change in a future release to interpret the input as one "
                      "without a batch dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise "
                      "dropout behavior, please switch to using dropout1d instead.", stacklevel=2)
    return _feature_dropout(input, p, training, inplace, 2)


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels (dim 1 of ``(N, C, D, H, W)``, dim 0 of ``(C, D, H, W)``) with
    probability ``p``, scaling the rest by ``1 / (1 - p)``."""
    _dropout_rank_warning("dropout3d", input, (4, 5), 3)
    return _feature_dropout(input, p, training, inplace, 2 if input.ndim == 5 else 1)
