"""Still more of ``torch.nn.functional``, re-exported by ``tracegrad.nn.functional``:
``rms_norm``, ``local_response_norm``, ``bilinear``, ``channel_shuffle``, ``pdist``, the
channel and alpha dropouts, ``gumbel_softmax``, ``rrelu`` and the in-place activations
(``relu_`` ...), ``embedding_bag``. Composites of registry primitives, so they differentiate and
compile; the random ones draw from seeded ops (``dropout_mask``, ``uniform_noise``), so a
compiled function takes them whole.

>>> import tracegrad as tg
>>> import tracegrad.nn.functional as F
>>> F.rms_norm(tg.tensor([[3.0, 4.0]]), (2,), eps=0.0)
tensor([[0.8485, 1.1314]])
"""
from __future__ import annotations

import numpy as np

from ...core.placement import on_inputs_device as _on_inputs_device
from ...core import creation
from ...core import dtypes as _dt
from ..._api import functional as T
from ..._api.composites import norm
from ..._api.contractions import einsum
from ...ops import index as I
from ...ops import nn as N
from .. import functional as F  # (imported at its end: everything above that point exists)
from . import _check_dropout_p, _normalized_dims
from .activations_and_resampling import _feature_dropout, _inplace_result, celu, selu
from .activations_and_resampling import threshold as threshold_fn

__all__ = ["rms_norm", "local_response_norm", "bilinear", "channel_shuffle", "native_channel_shuffle", "pdist", "embedding_bag",
           "dropout1d", "alpha_dropout", "feature_alpha_dropout", "gumbel_softmax", "rrelu", "relu_",
           "elu_", "leaky_relu_", "hardtanh_", "selu_", "celu_", "threshold_", "rrelu_"]


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """``x / sqrt(mean(x^2) + eps) * weight`` over the trailing ``normalized_shape`` dims;
    ``eps`` defaults to the dtype's machine epsilon, as PyTorch's."""
    dims = _normalized_dims(input, normalized_shape)
    if eps is None:
        eps = float(_dt.finfo(input.dtype).eps)
    out = T.mul(input, T.rsqrt(T.add(T.mean(T.mul(input, input), dims, keepdim=True), eps)))
    return out if weight is None else T.mul(out, weight)


@_on_inputs_device
def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """``x / (k + alpha * mean of x^2 over size neighbouring channels)^beta``; the window is
    zero-padded by ``size // 2`` channels before and ``(size - 1) // 2`` after, as PyTorch's."""
    if input.ndim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.ndim} dimensions)")
    n, c = input.shape[0], input.shape[1]
    sq = T.reshape(T.mul(input, input), (n, c, -1))
    padded = F.pad(sq, (0, 0, size // 2, (size - 1) // 2))
    total = padded[:, 0:c]
    for i in range(1, size):
        total = T.add(total, padded[:, i:i + c])
    div = T.pow(T.add(T.mul(T.div(total, float(size)), alpha), k), beta)
    return T.div(input, T.reshape(div, tuple(input.shape)))


def bilinear(input1, input2, weight, bias=None):
    """``x1^T A_o x2 + b_o`` for each output feature ``o``; weight ``(out, in1, in2)``."""
    if input1.shape[:-1] != input2.shape[:-1]:
        raise RuntimeError(f"bilinear(): input batch dimensions do not match: got {list(input1.shape[:-1])} "
                           f"and {list(input2.shape[:-1])}")
    if weight.ndim != 3 or (input1.shape[-1], input2.shape[-1]) != tuple(weight.shape[1:]):
        raise RuntimeError(f"bilinear(): input sizes {input1.shape[-1]} and {input2.shape[-1]} do not match "
                           f"weight of size {list(weight.shape)} (out_features, in1_features, in2_features)")
    out = einsum("...i,oij,...j->...o", input1, weight, input2)
    return out if bias is None else T.add(out, bias)


def channel_shuffle(input, groups):
    """``(N, C, *)`` with its channels as a ``(groups, C / groups)`` grid, transposed."""
    if input.ndim < 3:
        raise RuntimeError(f"channel_shuffle expects input to have at least 3 dimensions, but got input "
                           f"with sizes {list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    n, c, *rest = input.shape
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and "
                           f"{groups} groups.")
    x = T.transpose(T.reshape(input, (n, groups, c // groups, *rest)), 1, 2)
    return T.reshape(x, tuple(input.shape))



native_channel_shuffle = channel_shuffle  # (PyTorch's name of the same function)

@_on_inputs_device
def pdist(input, p=2):
    """The p-norm distances between the rows of an ``(N, M)`` input, for each pair ``i < j``
    in row-major order (``N (N - 1) / 2`` of them)."""
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    i, j = np.triu_indices(input.shape[0], 1)
    rows = lambda idx: I.INDEX(input, T.to_tensor(idx.astype(np.int64)), dim=0)
    return norm(T.sub(rows(i), rows(j)), p, -1)


@_on_inputs_device
def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False,
                  mode="mean", sparse=False, per_sample_weights=None, include_last_offset=False,
                  padding_idx=None):
    """Sums, means or maxima of bags of ``weight`` rows: the rows of a 2-D ``input``, or the
    runs of a 1-D ``input`` that ``offsets`` start. Entries equal to ``padding_idx`` are left
    out (and not counted by the mean); an empty bag gives zeros. Made of a ``(bags, indices)``
    membership matrix, so the offsets may be data of a compiled program."""
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"mode has to be one of sum, mean or max, got {mode!r}")
    if max_norm is not None or scale_grad_by_freq:
        raise NotImplementedError("embedding_bag: max_norm and scale_grad_by_freq are not supported")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is "
                                  f"only supported for mode='sum' (got mode='{mode}'). Please open a "
                                  f"feature request on GitHub.")
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a "
                             "mini-batch of fixed length sequences. However, found offsets of type "
                             f"{type(offsets).__name__}")
        bags, length = input.shape
        offsets = creation.arange(0, bags * length, length)
        input = T.reshape(input, (-1,))
        if per_sample_weights is not None:
            per_sample_weights = T.reshape(per_sample_weights, (-1,))
    elif input.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.ndim != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        if not offsets._is_traced and offsets.numel() and int(offsets._value[0]) != 0:
            raise RuntimeError("offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to "
                               f"start from position 0. However, got {int(offsets._value[0])}")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.ndim}")
    n = input.shape[0]
    ends = T.cat([offsets[1:], T.cast(creation.full((1,), n), offsets.dtype)])
    starts = offsets
    if include_last_offset:
        starts, ends = offsets[:-1], offsets[1:]
    position = creation.arange(n)
    member = T.logical_and(T.ge(position, T.unsqueeze(starts, 1)), T.lt(position, T.unsqueeze(ends, 1)))
    if padding_idx is not None:
        pad = padding_idx % weight.shape[0] if padding_idx < 0 else padding_idx
        member = T.logical_and(member, T.ne(input, pad))
    input = I.check_index(input.long(), weight.shape[0], 0, "bag")  # (PyTorch's message for a bag)
    rows = F.embedding(input, weight)  # (n, dim)
    if mode == "max":
        masked = T.where(T.unsqueeze(member, -1), T.unsqueeze(rows, 0), float("-inf"))  # (bags, n, dim)
        arg = T.argmax(masked, 1, keepdim=True)  # the first maximum, whose row gets the gradient
        best = T.squeeze(I.GATHER(masked, arg, dim=1), 1)
        return T.where(T.unsqueeze(T.amax(member, 1), -1), best, 0.0)
    if per_sample_weights is not None:
        rows = T.mul(rows, T.unsqueeze(per_sample_weights, -1))
    weights = T.cast(member, rows.dtype)
    out = T.matmul(weights, rows)
    if mode == "mean":
        out = T.div(out, T.unsqueeze(T.clamp(T.sum(weights, 1), min=1.0), -1))
    return out


# ----------------------------------------------------------------------------- randomness
@_on_inputs_device
def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels (dim 1 of ``(N, C, L)``, dim 0 of ``(C, L)``) with probability
    ``p``, scaling the rest by ``1 / (1 - p)``."""
    _check_dropout_p(p)
    if input.ndim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input. Note "
                           "that dropout1d exists to provide channel-wise dropout on inputs with 1 spatial "
                           "dimension, a channel dimension, and an optional batch dimension (i.e. 2D or 3D "
                           "inputs).")
    return _feature_dropout(input, p, training, inplace, input.ndim - 1)


_SELU_ALPHA_PRIME = 1.7580993408473766  # -SELU's scale * alpha: the value SELU saturates to


@_on_inputs_device
def _alpha_dropout(input, p, training, inplace, mask_shape):
    _check_dropout_p(p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return _inplace_result(input, T.mul(input, 0.0), inplace)
    a = 1.0 / np.sqrt((_SELU_ALPHA_PRIME ** 2 * p + 1) * (1 - p))
    keep = T.mul(N.DROPOUT_MASK(creation.seed_tensor(), shape=tuple(mask_shape), p=float(p),
                                dtype=input.dtype), 1.0 - p)  # 1 kept, 0 dropped
    b = T.add(T.mul(T.sub(keep, 1.0), _SELU_ALPHA_PRIME * a), _SELU_ALPHA_PRIME * a * p)
    return _inplace_result(input, T.add(T.mul(input, T.mul(keep, a)), b), inplace)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout for SELU networks, as PyTorch's: dropped elements become the saturation value,
    then an affine map ``a x + b`` keeps the mean and variance."""
    return _alpha_dropout(input, p, training, inplace, input.shape)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """alpha_dropout of whole channels: one draw per (dim 0, dim 1) pair, as PyTorch's."""
    if training and p and input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    return _alpha_dropout(input, p, training, inplace, tuple(input.shape[:2]) + (1,) * (input.ndim - 2))


def _uniform(like, low, high, dtype=None):
    """Uniform noise in [low, high) shaped as ``like``, from the ``uniform_noise`` op seeded
    from ``tg.manual_seed``'s generator (a program input when compiled, as dropout's)."""
    return N.UNIFORM_NOISE(creation.seed_tensor(), shape=tuple(like.shape), low=float(low),
                           high=float(high), dtype=dtype or like.dtype)


@_on_inputs_device
def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    """``softmax((logits + g) / tau)`` with Gumbel noise ``g = -log(E)``, ``E`` exponential;
    ``hard`` gives the one-hot of its maximum, with the soft sample's gradient
    (straight-through)."""
    # E = -log(1 - U) in double: finite, and 0 only where U is exactly 0 (clamped to the
    # smallest normal double, so that the noise stays finite)
    u = _uniform(logits, 0.0, 1.0, _dt.float64)
    exponential = T.clamp(T.neg(T.log1p(T.neg(u))), min=float(np.finfo(np.float64).tiny))
    gumbels = T.cast(T.neg(T.log(exponential)), logits.dtype)
    soft = F.softmax(T.div(T.add(logits, gumbels), tau), dim)
    if not hard:
        return soft
    index = T.argmax(soft, dim, keepdim=True)
    shape = [1] * soft.ndim
    shape[dim] = soft.shape[dim]
    one_hot = T.cast(T.eq(T.reshape(creation.arange(soft.shape[dim]), tuple(shape)), index), soft.dtype)
    return T.add(T.sub(one_hot, soft.detach()), soft)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """``x`` where positive, ``a x`` elsewhere: ``a`` uniform in ``[lower, upper]`` per element
    while training, ``(lower + upper) / 2`` in eval (then it is leaky_relu)."""
    if not training:
        return F.leaky_relu(input, (lower + upper) / 2, inplace)
    slope = _uniform(input, lower, upper)
    return _inplace_result(input, T.where(T.gt(input, 0), input, T.mul(input, slope)), inplace)


# ----------------------------------------------------------------------------- in place
# PyTorch's trailing-underscore forms: the activation with inplace=True (the input is written
# and returned)
def relu_(input):
    return F.relu(input, inplace=True)


def elu_(input, alpha=1.0):
    return F.elu(input, alpha, inplace=True)


def leaky_relu_(input, negative_slope=0.01):
    return F.leaky_relu(input, negative_slope, inplace=True)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return F.hardtanh(input, min_val, max_val, inplace=True)


def selu_(input):
    return selu(input, inplace=True)


def celu_(input, alpha=1.0):
    return celu(input, alpha, inplace=True)


def threshold_(input, threshold, value):
    return threshold_fn(input, threshold, value, inplace=True)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return rrelu(input, lower, upper, training, inplace=True)
