"""Primitives for ``tg.nn.functional``: ``unfold2d`` (im2col) and its transpose ``fold2d`` (each
is the other's VJP), and the random ops ``dropout_mask`` and ``uniform_noise``, whose seed is
an input tensor.

``padding`` is ``((top, bottom), (left, right))`` so that ceil-mode pooling can pad one side
only; ``kernel``, ``stride`` and ``dilation`` are ``(h, w)`` pairs. The column layout is
PyTorch's ``F.unfold``: ``(N, C * kh * kw, L)`` with C outermost and L = out_h * out_w.

>>> import tracegrad as tg
>>> from tracegrad.ops.nn import UNFOLD2D
>>> x = tg.arange(16.).reshape(1, 1, 4, 4)
>>> UNFOLD2D(x, kernel=(2, 2), stride=(2, 2), padding=((0, 0), (0, 0)), dilation=(1, 1)).shape
tracegrad.Size([1, 4, 4])
"""
from __future__ import annotations

import numpy as np

from ..core import dtypes as _dt
from .registry import defop


def conv_out_size(size, k, s, pad_lo, pad_hi, d):
    """Output length of a window sliding over ``size`` (PyTorch's formula, floor mode)."""
    return (size + pad_lo + pad_hi - d * (k - 1) - 1) // s + 1


def _geometry(h, w, kernel, stride, padding, dilation):
    (kh, kw), (sh, sw), ((pt, pb), (pl, pr)), (dh, dw) = kernel, stride, padding, dilation
    return (conv_out_size(h, kh, sh, pt, pb, dh), conv_out_size(w, kw, sw, pl, pr, dw))


def _check_attrs(kernel, stride, padding, dilation):
    for name, v in (("kernel", kernel), ("stride", stride), ("dilation", dilation)):
        if len(v) != 2 or any(int(a) <= 0 for a in v):
            raise RuntimeError(f"unfold2d: {name} must be two positive ints, got {v}")
    if len(padding) != 2 or any(len(p) != 2 or min(p) < 0 for p in padding):
        raise RuntimeError(f"unfold2d: padding must be ((top, bottom), (left, right)) >= 0, got {padding}")


def _infer_unfold(x, kernel, stride, padding, dilation, pad_value=0.0):
    _check_attrs(kernel, stride, padding, dilation)
    if len(x.shape) != 4:
        raise RuntimeError(f"unfold2d: expected a 4-D input (N, C, H, W), got shape {list(x.shape)}")
    n, c, h, w = x.shape
    oh, ow = _geometry(h, w, kernel, stride, padding, dilation)
    if oh <= 0 or ow <= 0:
        raise RuntimeError(
            f"Given input size ({c}x{h}x{w}), kernel {tuple(kernel)}, stride {tuple(stride)}, "
            f"padding {tuple(padding)} and dilation {tuple(dilation)}: calculated output size "
            f"({c}x{oh}x{ow}) is too small")
    return (n, c * kernel[0] * kernel[1], oh * ow), x.dtype


def _windows(kernel, stride, dilation, out):
    """For each kernel offset (i, j): the strided slices of the padded input it reads."""
    (kh, kw), (sh, sw), (dh, dw), (oh, ow) = kernel, stride, dilation, out
    for i in range(kh):
        for j in range(kw):
            yield i, j, (slice(i * dh, i * dh + sh * (oh - 1) + 1, sh),
                         slice(j * dw, j * dw + sw * (ow - 1) + 1, sw))


def _unfold_impl(x, kernel, stride, padding, dilation, pad_value=0.0):
    n, c, h, w = x.shape
    oh, ow = _geometry(h, w, kernel, stride, padding, dilation)
    xp = np.pad(x, ((0, 0), (0, 0)) + tuple(tuple(p) for p in padding), constant_values=pad_value)
    cols = np.empty((n, c, kernel[0], kernel[1], oh, ow), x.dtype)
    for i, j, (rs, cs) in _windows(kernel, stride, dilation, (oh, ow)):
        cols[:, :, i, j] = xp[:, :, rs, cs]
    return cols.reshape(n, c * kernel[0] * kernel[1], oh * ow)


def _infer_fold(cols, output_size, kernel, stride, padding, dilation):
    _check_attrs(kernel, stride, padding, dilation)
    kk = kernel[0] * kernel[1]
    oh, ow = _geometry(*output_size, kernel, stride, padding, dilation)
    if len(cols.shape) != 3 or cols.shape[1] % kk or cols.shape[2] != oh * ow:
        raise RuntimeError(
            f"fold2d: expected columns of shape (N, C * {kk}, {oh * ow}) for output_size "
            f"{tuple(output_size)}, got {list(cols.shape)}")
    return (cols.shape[0], cols.shape[1] // kk) + tuple(output_size), cols.dtype


def _fold_impl(cols, output_size, kernel, stride, padding, dilation):
    n, ckk, _ = cols.shape
    c = ckk // (kernel[0] * kernel[1])
    h, w = output_size
    (pt, pb), (pl, pr) = padding
    oh, ow = _geometry(h, w, kernel, stride, padding, dilation)
    cols = cols.reshape(n, c, kernel[0], kernel[1], oh, ow)
    xp = np.zeros((n, c, h + pt + pb, w + pl + pr), cols.dtype)
    for i, j, (rs, cs) in _windows(kernel, stride, dilation, (oh, ow)):
        xp[:, :, rs, cs] += cols[:, :, i, j]
    return xp[:, :, pt:pt + h, pl:pl + w].copy()


def _geo(ctx):
    return dict(kernel=ctx.kernel, stride=ctx.stride, padding=ctx.padding, dilation=ctx.dilation)


UNFOLD2D = defop(
    "unfold2d", infer=_infer_unfold, impl=_unfold_impl, save=(), kind="nn",
    vjp=lambda ctx, g: (FOLD2D(g, output_size=tuple(ctx.shapes[0][2:]), **_geo(ctx)),),
    # the tangent of padding is 0 whatever the pad value (max-pooling pads with -inf)
    jvp=lambda ctx, t: UNFOLD2D(t, **_geo(ctx)),
    sample=lambda: [((("any", (1, 2, 4, 5)),),
                     {"kernel": (2, 3), "stride": (1, 2), "padding": ((1, 0), (1, 1)),
                      "dilation": (1, 1)}),
                    ((("any", (1, 1, 5, 5)),),
                     {"kernel": (2, 2), "stride": (2, 1), "padding": ((0, 1), (2, 0)),
                      "dilation": (2, 1), "pad_value": -3.0})])

FOLD2D = defop(
    "fold2d", infer=_infer_fold, impl=_fold_impl, save=(), kind="nn",
    vjp=lambda ctx, g: (UNFOLD2D(g, **_geo(ctx)),),
    jvp=lambda ctx, t: FOLD2D(t, output_size=ctx.output_size, **_geo(ctx)),
    sample=lambda: [((("any", (2, 12, 12)),),
                     {"output_size": (3, 3), "kernel": (2, 3), "stride": (1, 1),
                      "padding": ((1, 1), (1, 1)), "dilation": (1, 1)})])


# ----------------------------------------------------------------------------- dropout
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def uniform_from_seed(seed, n):
    """``n`` uniform floats in [0, 1): element i is splitmix64(seed + (i + 1) * golden) >> 11,
    scaled by 2**-53. A counter-based generator, so every element is independent of the others
    and a backend reproduces it exactly (C: the same three multiply-xorshift steps)."""
    with np.errstate(over="ignore"):
        z = np.array(seed, dtype=np.int64).view(np.uint64) + (np.arange(1, n + 1, dtype=np.uint64) * _GOLDEN)
        z = (z ^ (z >> np.uint64(30))) * _MIX1
        z = (z ^ (z >> np.uint64(27))) * _MIX2
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) * 2.0 ** -53


def _infer_dropout_mask(seed, shape, p, dtype):
    if seed.dtype is not _dt.int64 or len(seed.shape) != 0:
        raise RuntimeError(f"dropout_mask: seed must be a 0-dim int64 tensor, got {seed.dtype} "
                           f"{list(seed.shape)}")
    if not 0.0 <= p < 1.0:
        raise ValueError(f"dropout_mask: p must be in [0, 1), got {p}")
    return tuple(shape), dtype


def _dropout_mask_impl(seed, shape, p, dtype):
    n = int(np.prod(shape, dtype=np.int64))
    keep = uniform_from_seed(int(seed), n) >= p
    return (keep.reshape(shape) * (1.0 / (1.0 - p))).astype(dtype.np)


DROPOUT_MASK = defop(
    "dropout_mask", infer=_infer_dropout_mask, impl=_dropout_mask_impl, differentiable=False,
    nondiff_inputs=(0,), random=True, kind="nn",
    sample=lambda: [((("seed",),), {"shape": (3, 4), "p": 0.25, "dtype": _dt.float64})])


def _infer_uniform_noise(seed, shape, low, high, dtype):
    if seed.dtype is not _dt.int64 or len(seed.shape) != 0:
        raise RuntimeError(f"uniform_noise: seed must be a 0-dim int64 tensor, got {seed.dtype} "
                           f"{list(seed.shape)}")
    if not dtype.is_floating_point:
        raise RuntimeError(f"uniform_noise: expected a floating point dtype, got {dtype}")
    return tuple(shape), dtype


def _uniform_noise_impl(seed, shape, low, high, dtype):
    n = int(np.prod(shape, dtype=np.int64))
    return (low + (high - low) * uniform_from_seed(int(seed), n)).reshape(shape).astype(dtype.np)


# Uniform samples in [low, high) from dropout_mask's generator (in double, then rounded to
# ``dtype``), so that random composites (rrelu, gumbel_softmax) compile whole.
UNIFORM_NOISE = defop(
    "uniform_noise", infer=_infer_uniform_noise, impl=_uniform_noise_impl, differentiable=False,
    nondiff_inputs=(0,), random=True, kind="nn",
    sample=lambda: [((("seed",),), {"shape": (3, 4), "low": -1.0, "high": 2.0, "dtype": _dt.float64})])
