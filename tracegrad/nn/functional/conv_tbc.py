"""``F.conv_tbc``, PyTorch's time-batch-channel 1-D convolution, re-exported by
``tracegrad.nn.functional``: ``conv1d`` on the input and weight laid out its way, so it shares
conv1d's rules (gradients, compiling) rather than having its own.

>>> import tracegrad as tg
>>> import tracegrad.nn.functional as F
>>> x = tg.arange(3.0).reshape(3, 1, 1)  # (time, batch, channels)
>>> F.conv_tbc(x, tg.ones(2, 1, 1), tg.zeros(1), pad=1).flatten()
tensor([0., 1., 3., 2.])
"""
from __future__ import annotations

from ..._api import functional as T

__all__ = ["conv_tbc"]


def conv_tbc(input, weight, bias, pad=0):
    """``out[t] = bias + sum_k input[t + k - pad] @ weight[k]`` for input ``(T, B, C_in)``,
    weight ``(K, C_in, C_out)`` and bias ``(C_out,)``, zero-padded by ``pad`` steps at both
    ends: ``(T + 2 pad - K + 1, B, C_out)``."""
    from . import conv1d

    if input.ndim != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.ndim != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, out_channels.")
    if bias.ndim != 1:
        raise RuntimeError("Bias must be 1-D")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if bias.shape[0] != weight.shape[2]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    # (T, B, C) -> conv1d's (B, C, T); the weight (K, C_in, C_out) -> (C_out, C_in, K)
    out = conv1d(T.permute(input, (1, 2, 0)), T.permute(weight, (2, 1, 0)), bias, padding=pad)
    return T.permute(out, (2, 0, 1))
