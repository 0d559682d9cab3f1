"""``nn.FractionalMaxPool2d`` and ``nn.FractionalMaxPool3d``: modules over
``F.fractional_max_pool2d/3d`` (functional_fractional.py holds the rule), with PyTorch's
arguments, checks, ``_random_samples`` buffer (in the state dict when given) and repr.

>>> import tracegrad as tg
>>> pool = tg.nn.FractionalMaxPool2d(2, output_ratio=0.5)
>>> pool(tg.randn(1, 3, 8, 6)).shape
tracegrad.Size([1, 3, 4, 3])
"""
from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = ["FractionalMaxPool2d", "FractionalMaxPool3d"]


class _FractionalMaxPoolNd(Module):
    _k = 2

    def __init__(self, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                 _random_samples=None):
        super().__init__()
        name, k = type(self).__name__, self._k
        kernels = (kernel_size,) * k if isinstance(kernel_size, int) else tuple(kernel_size)
        if k == 3 and not all(w > 0 for w in kernels):  # (PyTorch checks only the 3-D one)
            raise ValueError(f"kernel_size must be greater than 0, but got {kernel_size}")
        self.kernel_size = kernels
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = None if output_size is None else (
            (output_size,) * k if isinstance(output_size, int) else tuple(output_size))
        self.output_ratio = None if output_ratio is None else (
            (output_ratio,) * k if isinstance(output_ratio, (int, float)) else tuple(output_ratio))
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """Max pooling over ``kernel_size`` windows at pseudo-random fractional strides that give
    ``output_size`` (or ``output_ratio`` times the input size) over the last two dims."""

    def forward(self, input):
        return F.fractional_max_pool2d(input, self.kernel_size, self.output_size, self.output_ratio,
                                       self.return_indices, _random_samples=self._random_samples)


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """``FractionalMaxPool2d`` over the last three dims."""

    _k = 3

    def forward(self, input):
        return F.fractional_max_pool3d(input, self.kernel_size, self.output_size, self.output_ratio,
                                       self.return_indices, _random_samples=self._random_samples)
