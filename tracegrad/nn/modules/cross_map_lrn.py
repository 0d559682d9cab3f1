"""``nn.CrossMapLRN2d``, PyTorch's legacy (Lua Torch) local response normalisation across
channels, with its forward reproduced operation by operation, window quirk included.

PyTorch computes the sum of squares for channel ``c`` by a running sum: channel 0 sums the
first ``pre_pad = (size - 1) // 2 + 1`` channels, and each next channel adds the square
``pre_pad - 1`` channels ahead and subtracts the one ``pre_pad`` behind, but only for
``c > pre_pad``; so the square of channel 0 is never subtracted and stays in every later
channel's window (with ``size=3``: channel 2 sums channels 0 to 3, channel 3 sums 0, 2, 3,
4). We run the same additions in the same order, so the values are PyTorch's (to an ulp: libm's ``pow``).

The gradient is the true derivative of that forward (autograd through the running sum): it
passes ``gradcheck`` and equals torch's autograd through the same running sum. PyTorch's
hand-written backward is not the derivative of its forward: for input channel ``c`` it sums
``grad * output / scale`` over output channels ``c - p ... c - p + size - 1``, ``p = int(size -
(size - 1) / 2)`` (``c - 2 ... c`` for ``size=3``), which is not the set of channels whose
window holds ``c`` (``c - 1 ... c + 1``, and every later one for channel 0); so
``torch.autograd.gradcheck`` fails on ``torch.nn.CrossMapLRN2d`` itself, and its gradients
differ from ours in most channels (tests/test_nn_rare_layers.py shows both).

>>> import tracegrad as tg
>>> m = tg.nn.CrossMapLRN2d(3, alpha=1.0, beta=1.0, k=1.0)
>>> m(tg.ones(1, 4, 1, 1)).flatten()
tensor([0.6000, 0.5000, 0.4286, 0.5000])
>>> m
CrossMapLRN2d(3, alpha=1.0, beta=1.0, k=1.0)
"""
from __future__ import annotations

from ..._api import functional as T
from .module import Module

__all__ = ["CrossMapLRN2d"]


def cross_map_lrn2d(input, size, alpha=1e-4, beta=0.75, k=1):
    """``x / (k + alpha / size * S_c)^beta`` with PyTorch's running channel sums ``S_c`` of
    squares (see the module docstring for its window); input ``(N, C, H, W)``."""
    if input.ndim != 4:
        raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.ndim}D instead.")
    channels = input.shape[1]
    square = T.mul(input, input)
    planes = [square[:, c] for c in range(channels)]
    pre_pad = int((size - 1) / 2 + 1)
    current = planes[0]
    for c in range(1, min(pre_pad, channels)):
        current = T.add(current, planes[c])
    sums = [current]
    for c in range(1, channels):
        if c < channels - pre_pad + 1:
            current = T.add(current, planes[c + pre_pad - 1])
        if c > pre_pad:  # (PyTorch's '>' where '>=' would give the symmetric window)
            current = T.sub(current, planes[c - pre_pad])
        sums.append(current)
    scale = T.add(T.mul(T.stack(sums, 1), alpha / size), k)
    return T.mul(T.pow(scale, -beta), input)


class CrossMapLRN2d(Module):
    """Local response normalisation across the channels of ``(N, C, H, W)``, as PyTorch's
    legacy ``CrossMapLRN2d`` (see the module docstring for its window)."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return cross_map_lrn2d(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
